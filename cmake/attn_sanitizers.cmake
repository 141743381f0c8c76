# Sanitizer builds (docs/reliability.md). Each goes into its own build folder:
#   -DATTN_SANITIZE=ON  AddressSanitizer + UndefinedBehaviorSanitizer over everything (g++ or
#                       clang): `make test-asan` builds the CPU tests this way into build-asan.
#   -DATTN_FUZZ=ON      clang only: the libFuzzer targets (tests/fuzz), with everything they link
#                       instrumented for coverage, ASan and UBSan: `make fuzz` into build-fuzz.
# Undefined behaviour aborts (no recovery), so a test or a fuzz run cannot pass over it.
option(ATTN_SANITIZE "Build with -fsanitize=address,undefined" OFF)
option(ATTN_FUZZ "Build the libFuzzer targets (clang)" OFF)

set(ATTN_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all
                         -fno-omit-frame-pointer)
if(ATTN_SANITIZE OR ATTN_FUZZ)
  add_compile_options(${ATTN_SANITIZER_FLAGS})
  add_link_options(-fsanitize=address,undefined)
endif()
if(ATTN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "ATTN_FUZZ needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
