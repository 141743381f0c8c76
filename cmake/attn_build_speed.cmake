# Build time (a clean build on a 2-core machine is most of CI's time; README, "Two commands"):
#   ATTN_PCH (ON)            precompiles the heavy third-party headers each target includes:
#                            nlohmann/json (workloads/workload_spec.hpp brings it nearly
#                            everywhere), CLI11 in the executables, GoogleTest in the tests.
#                            -DATTN_PCH=OFF builds without them, e.g. to see that every file
#                            includes what it uses.
#   ATTN_UNITY (ON)          unity builds of the executables and the test modules (below).
#   ATTN_TEST_OPTIMIZE (-Og) the optimisation of the test executables' own files in an optimised
#                            build: the code under test (the libraries, the binaries) keeps the
#                            build type's flags, the test bodies need none of -O3's time.
option(ATTN_PCH "Precompile nlohmann/json, CLI11 and GoogleTest headers" ON)
set(ATTN_TEST_OPTIMIZE "-Og" CACHE STRING
    "Optimisation flag for the test executables' sources in Release and RelWithDebInfo builds")

function(attn_precompile_headers target)
  if(ATTN_PCH)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()

# Unity builds for the targets whose files all instantiate the same header-only code: each of
# the executables' command files emitted its own -O3 copy of the ~400 CLI11 functions it uses, and
# each test file its own GoogleTest and nlohmann/json code. ATTN_UNITY=OFF compiles file by file.
option(ATTN_UNITY "Compile the executables and tests in batches of files (unity build)" ON)
set(ATTN_UNITY_BATCH 8 CACHE STRING "Files per unity batch")
function(attn_unity_build target)
  if(ATTN_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${ATTN_UNITY_BATCH})
  endif()
endfunction()

function(attn_test_build_options target)
  target_compile_options(${target} PRIVATE
                         $<$<CONFIG:Release,RelWithDebInfo>:${ATTN_TEST_OPTIMIZE}>)
  attn_precompile_headers(${target} <gtest/gtest.h> <nlohmann/json.hpp>)
endfunction()
