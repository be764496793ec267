# -DBATCHLAB_FUZZ=ON (with CC=clang CXX=clang++, in a build folder of its own, e.g. build-fuzz/):
# every target is compiled for coverage-guided fuzzing with AddressSanitizer and
# UndefinedBehaviorSanitizer, and fuzz/ links its harnesses with libFuzzer (docs/fuzzing.md).
# Off by default: the normal gcc build replays the harnesses' corpora through a plain main().
option(BATCHLAB_FUZZ "Build fuzz/ with libFuzzer and the sanitizers (clang)" OFF)
if(BATCHLAB_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "BATCHLAB_FUZZ needs clang (libFuzzer): configure a fresh build folder with "
                        "CC=clang CXX=clang++ cmake -S . -B build-fuzz -DBATCHLAB_FUZZ=ON")
  endif()
  # UBSan findings abort (a finding, not a log line); frame pointers make ASan's stacks whole.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=address,undefined)
endif()
