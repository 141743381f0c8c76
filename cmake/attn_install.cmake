# `make install PREFIX=...` (cmake --install), the CMake package a C++ project finds with
# find_package(attn-bench), and the .deb and .tar.gz packages of `make package` (CPack).
#
#   bin/attn-bench, bin/attn-tune
#   lib/attn-bench/           Google Benchmark's shared library when the build links one (Debian's)
#   share/attn-bench/         presets/, suites/, traces/ (the built-in samples), workload.schema.json,
#                             kernel_spec.schema.json
#   share/bash-completion/completions/, share/zsh/site-functions/   shell completion
#   share/doc/attn-bench/     README.md, BENCHMARKS.md, docs/, help/ (every command's --help)
#   lib/cmake/attn-bench/     attn-benchConfig.cmake: the two programs as imported targets and
#                             attn_bench_export_dispatch(), a header of tuned configs for a target
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ATTN_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/attn-bench)
set(ATTN_INSTALL_DOCDIR ${CMAKE_INSTALL_DATADIR}/doc/attn-bench)
set(ATTN_INSTALL_PRIVATE_LIBDIR ${CMAKE_INSTALL_LIBDIR}/attn-bench)
set(ATTN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/attn-bench)

# The installed programs find the carried library through a path relative to themselves, so the
# tree works wherever it is unpacked.
file(RELATIVE_PATH ATTN_BIN_TO_PRIVATE_LIB ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}
     ${CMAKE_INSTALL_PREFIX}/${ATTN_INSTALL_PRIVATE_LIBDIR})
set_target_properties(attn-bench attn-tune PROPERTIES
  INSTALL_RPATH "$ORIGIN/${ATTN_BIN_TO_PRIVATE_LIB}")
install(TARGETS attn-bench attn-tune EXPORT attn-bench-targets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
find_package(benchmark REQUIRED)  # imported in apps/ only; its library is carried
get_target_property(ATTN_BENCHMARK_LIBRARY benchmark::benchmark LOCATION)
if(ATTN_BENCHMARK_LIBRARY MATCHES "\\.so")
  # The copy apps/ carries beside attn-bench: a file, where the system's soname is a symbolic link.
  install(FILES $<TARGET_FILE_DIR:attn-bench>/$<TARGET_SONAME_FILE_NAME:benchmark::benchmark>
          DESTINATION ${ATTN_INSTALL_PRIVATE_LIBDIR})
endif()

# What the programs print about themselves, generated from the programs' command-line
# definitions: every command's help, and the bash and zsh completion scripts.
set(ATTN_CLI_TEXT_DIR ${CMAKE_BINARY_DIR}/share)
set(ATTN_CLI_TEXT_FILES)
foreach(program attn-bench attn-tune)
  set(outputs ${ATTN_CLI_TEXT_DIR}/help/${program}.txt ${ATTN_CLI_TEXT_DIR}/bash/${program}
              ${ATTN_CLI_TEXT_DIR}/zsh/_${program})
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${ATTN_CLI_TEXT_DIR}/help ${ATTN_CLI_TEXT_DIR}/bash
            ${ATTN_CLI_TEXT_DIR}/zsh
    COMMAND $<TARGET_FILE:${program}> --help-all > ${ATTN_CLI_TEXT_DIR}/help/${program}.txt
    COMMAND $<TARGET_FILE:${program}> completion bash > ${ATTN_CLI_TEXT_DIR}/bash/${program}
    COMMAND $<TARGET_FILE:${program}> completion zsh > ${ATTN_CLI_TEXT_DIR}/zsh/_${program}
    DEPENDS ${program}
    COMMENT "Writing the help text and shell completion of ${program}")
  list(APPEND ATTN_CLI_TEXT_FILES ${outputs})
endforeach()
add_custom_target(attn_cli_text ALL DEPENDS ${ATTN_CLI_TEXT_FILES})
install(DIRECTORY ${ATTN_CLI_TEXT_DIR}/help DESTINATION ${ATTN_INSTALL_DOCDIR})
install(DIRECTORY ${ATTN_CLI_TEXT_DIR}/bash/ DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(DIRECTORY ${ATTN_CLI_TEXT_DIR}/zsh/ DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/site-functions)

# Data: the files built into the binaries, for users and other tools to read.
install(DIRECTORY ${CMAKE_SOURCE_DIR}/workloads/presets ${CMAKE_SOURCE_DIR}/workloads/suites
        DESTINATION ${ATTN_INSTALL_DATADIR} FILES_MATCHING PATTERN "*.json")
install(DIRECTORY ${CMAKE_SOURCE_DIR}/workloads/traces DESTINATION ${ATTN_INSTALL_DATADIR})
install(FILES ${CMAKE_SOURCE_DIR}/workloads/schema/workload.schema.json
              ${CMAKE_SOURCE_DIR}/kernels/user/schema/kernel_spec.schema.json
        DESTINATION ${ATTN_INSTALL_DATADIR})

# Documentation.
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/BENCHMARKS.md
        DESTINATION ${ATTN_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${ATTN_INSTALL_DOCDIR}/docs
        FILES_MATCHING PATTERN "*.md" PATTERN "reports" EXCLUDE)

# The CMake package.
install(EXPORT attn-bench-targets NAMESPACE attn_bench:: DESTINATION ${ATTN_INSTALL_CMAKEDIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/attn-benchConfig.cmake.in
  ${CMAKE_BINARY_DIR}/attn-benchConfig.cmake INSTALL_DESTINATION ${ATTN_INSTALL_CMAKEDIR}
  PATH_VARS ATTN_INSTALL_DATADIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/attn-benchConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/attn-benchConfig.cmake
        ${CMAKE_BINARY_DIR}/attn-benchConfigVersion.cmake DESTINATION ${ATTN_INSTALL_CMAKEDIR})

# Packages: `make package` (cpack) writes attn-bench-VERSION-Linux.tar.gz and a .deb.
set(CPACK_PACKAGE_NAME attn-bench)
set(CPACK_PACKAGE_VENDOR "attn-bench")
set(CPACK_PACKAGE_CONTACT "attn-bench maintainers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Benchmark, verify and tune attention kernels that read a paged KV cache")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR "TGZ;DEB")
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_SOURCE_DIR}/cmake/attn_cpack_options.cmake)
set(CPACK_ARCHIVE_COMPONENT_INSTALL OFF)
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# The CUDA driver and NVRTC are loaded at run time (no GPU, no dependency); SQLite is linked in.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.34), libstdc++6 (>= 12)")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "gnuplot-nox, python3-numpy")
include(CPack)
