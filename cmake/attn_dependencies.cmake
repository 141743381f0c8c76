# Dependencies: Debian's packages (scripts/install-deps.sh installs them) and the CUDA toolkit's
# headers. Nothing links the CUDA driver or NVRTC: both are loaded at run time (kernels/device,
# kernels/jit), so every binary starts on a machine with no NVIDIA driver.
find_package(nlohmann_json 3.9 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(Threads REQUIRED)

# SQLite is linked statically: the GPU machine has no libsqlite3 headers and may lack the library.
find_path(SQLITE3_INCLUDE_DIR sqlite3.h REQUIRED)
find_library(SQLITE3_STATIC_LIBRARY NAMES libsqlite3.a REQUIRED)
add_library(attn_sqlite3 INTERFACE)
target_include_directories(attn_sqlite3 INTERFACE ${SQLITE3_INCLUDE_DIR})
target_link_libraries(attn_sqlite3 INTERFACE ${SQLITE3_STATIC_LIBRARY} ${CMAKE_DL_LIBS}
                      Threads::Threads m)

# CUDA toolkit: headers for the driver API and NVRTC types, and the library folder NVRTC is looked
# up in at run time (after $CUDA_HOME and $CUDA_PATH).
set(ATTN_CUDA_ROOT "" CACHE PATH "CUDA toolkit root (default: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda)")
if(NOT ATTN_CUDA_ROOT)
  foreach(candidate $ENV{CUDA_HOME} $ENV{CUDA_PATH} /usr/local/cuda)
    if(EXISTS ${candidate}/include/cuda.h)
      set(ATTN_CUDA_ROOT ${candidate})
      break()
    endif()
  endforeach()
endif()
if(NOT EXISTS ${ATTN_CUDA_ROOT}/include/cuda.h OR NOT EXISTS ${ATTN_CUDA_ROOT}/include/nvrtc.h)
  message(FATAL_ERROR "CUDA toolkit headers (cuda.h, nvrtc.h) not found; set CUDA_HOME or "
                      "-DATTN_CUDA_ROOT=/path/to/cuda")
endif()
message(STATUS "CUDA toolkit: ${ATTN_CUDA_ROOT}")
add_library(attn_cuda_headers INTERFACE)
target_include_directories(attn_cuda_headers SYSTEM INTERFACE ${ATTN_CUDA_ROOT}/include)
target_compile_definitions(attn_cuda_headers INTERFACE
  ATTN_BUILD_CUDA_ROOT="${ATTN_CUDA_ROOT}")
