# attn_embed_files(<target> <symbol> <base_dir> <files...>)
# Generates a C++ source that holds each file's bytes and its path relative to base_dir, as
#   const attn::EmbeddedFile <symbol>[]; const size_t <symbol>_count;
# (base/embedded_file.hpp) and adds it to <target>. Regenerated whenever a file changes, so the
# binary never reads the source tree at run time.
function(attn_embed_files target symbol base_dir)
  set(files ${ARGN})
  set(output ${CMAKE_BINARY_DIR}/generated/${symbol}.cpp)
  set(list_file ${CMAKE_BINARY_DIR}/generated/${symbol}.files)
  string(REPLACE ";" "\n" file_lines "${files}")
  file(WRITE ${list_file}.tmp "${file_lines}\n")
  file(COPY_FILE ${list_file}.tmp ${list_file} ONLY_IF_DIFFERENT)
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DSYMBOL=${symbol} -DBASE_DIR=${base_dir} -DLIST_FILE=${list_file}
            -DOUTPUT=${output} -P ${CMAKE_SOURCE_DIR}/cmake/attn_embed_run.cmake
    DEPENDS ${files} ${list_file} ${CMAKE_SOURCE_DIR}/cmake/attn_embed_run.cmake
    COMMENT "Embedding ${symbol}"
    VERBATIM)
  target_sources(${target} PRIVATE ${output})
endfunction()
