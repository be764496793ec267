# Helpers shared by every folder's targets.

set(BATCHLAB_WARNINGS -Wall -Wextra -Wshadow)
# GCC 12 reports -Wrestrict, -Warray-bounds and -Wstringop-overflow on std::string's copies inside
# libstdc++ itself when it inlines them at -O3 under C++20 (GCC bugs 105329, 105651, 107138; gone
# in 13): false positives in a system header, about memcpy bounds the code cannot reach.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  list(APPEND BATCHLAB_WARNINGS -Wno-restrict -Wno-array-bounds -Wno-stringop-overflow)
endif()
if(BATCHLAB_WERROR)
  list(APPEND BATCHLAB_WARNINGS -Werror)
endif()

# The wheel's LibTorch ships fmt 12 headers in torch/include/fmt, and its -isystem directory comes
# before /usr/include, where Debian's fmt 9 (the libfmt batchlab links) lives: a target that sees
# torch's include directory would compile against fmt 12 and fail to link (fmt::v12 symbols) or
# to compile (fmt::join moved to fmt/ranges.h). A directory holding only a link to the fmt headers
# of the fmt package found above, put first on every target's include path, keeps one fmt. The c10d
# and c10 headers that include fmt compile with fmt 9.
get_target_property(_fmt_dirs fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
set(_fmt_root /usr/include)
foreach(_dir ${_fmt_dirs})
  if(EXISTS ${_dir}/fmt/format.h)
    set(_fmt_root ${_dir})
  endif()
endforeach()
set(BATCHLAB_FMT_SHIM ${PROJECT_BINARY_DIR}/fmt-include)
file(MAKE_DIRECTORY ${BATCHLAB_FMT_SHIM})
file(CREATE_LINK ${_fmt_root}/fmt ${BATCHLAB_FMT_SHIM}/fmt SYMBOLIC)

# Unity builds: each target's sources are compiled BATCHLAB_UNITY_BATCH_SIZE at a time, as one
# translation unit each. A file of a LibTorch target spends ~5.6 s loading the 720 MB precompiled
# LibTorch header and most of the rest instantiating the same torch and GoogleTest templates, so one
# batch of 8 costs little more than one file (docs/performance.md, "Cold build"). Names with
# internal linkage must then be unique within a target: a clash is a compile error, never a silent
# change. A file with its own compile definitions is compiled alone (CMake leaves it out).
# -DBATCHLAB_UNITY_BUILD=OFF compiles every file alone (quicker rebuilds of one edited file).
option(BATCHLAB_UNITY_BUILD "Compile each target's sources in batches (CMake unity builds)" ON)
set(BATCHLAB_UNITY_BATCH_SIZE 8 CACHE STRING "Sources per unity batch")

# Applies the project's warning flags, include root and (for targets using LibTorch) the shared
# precompiled LibTorch header. The first torch target builds the PCH; the rest reuse it, so the
# 15-20 s cost of parsing torch/torch.h is paid once per build.
function(batchlab_configure_target target)
  cmake_parse_arguments(ARG "TORCH" "" "" ${ARGN})
  target_compile_options(${target} PRIVATE ${BATCHLAB_WARNINGS})
  target_include_directories(${target} SYSTEM BEFORE PRIVATE ${BATCHLAB_FMT_SHIM})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
  if(BATCHLAB_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON
                                               UNITY_BUILD_BATCH_SIZE ${BATCHLAB_UNITY_BATCH_SIZE})
  endif()
  if(ARG_TORCH)
    target_link_libraries(${target} PUBLIC fmt::fmt torch)
    if(BATCHLAB_PCH)
      get_property(pch_owner GLOBAL PROPERTY BATCHLAB_PCH_OWNER)
      if(NOT pch_owner)
        target_precompile_headers(${target} PRIVATE ${PROJECT_SOURCE_DIR}/cmake/torch_pch.h)
        set_property(GLOBAL PROPERTY BATCHLAB_PCH_OWNER ${target})
      else()
        target_precompile_headers(${target} REUSE_FROM ${pch_owner})
      endif()
    endif()
  endif()
endfunction()

# batchlab_add_library(NAME DIR [TORCH] [LIBS ...]): every .cpp below DIR (so adding a file never
# means editing a list); an INTERFACE target while a folder has no sources yet.
function(batchlab_add_library name dir)
  cmake_parse_arguments(ARG "TORCH;NORECURSE" "" "LIBS" ${ARGN})
  if(ARG_NORECURSE)
    file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${dir}/*.cpp)
  else()
    file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${dir}/*.cpp)
  endif()
  if(sources)
    add_library(${name} STATIC ${sources})
    if(ARG_TORCH)
      batchlab_configure_target(${name} TORCH)
    else()
      batchlab_configure_target(${name})
    endif()
    target_link_libraries(${name} PUBLIC ${ARG_LIBS})
  else()
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} INTERFACE ${ARG_LIBS})
    if(ARG_TORCH)
      target_link_libraries(${name} INTERFACE fmt::fmt torch)
    endif()
  endif()
endfunction()

# batchlab_add_test_suite(NAME DIR LIBS ...): one GoogleTest executable per folder of tests/
# (DIR relative to tests/, e.g. core/optim), so one folder's tests build without the others'.
# Files named *_slow_test.cpp go into NAME_slow, labelled `slow` and left out of the default run.
# FIXTURE NAME: every test requires the CTest fixture NAME (FIXTURES_SETUP of another test).
function(batchlab_add_test_suite name dir)
  cmake_parse_arguments(ARG "TORCH;NEEDS_BINARY" "FIXTURE" "LIBS" ${ARGN})
  file(GLOB_RECURSE all CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/*_test.cpp)
  set(fast "")
  set(slow "")
  foreach(f ${all})
    if(f MATCHES "_slow_test\\.cpp$")
      list(APPEND slow ${f})
    else()
      list(APPEND fast ${f})
    endif()
  endforeach()
  foreach(kind fast slow)
    if(NOT ${kind})
      continue()
    endif()
    set(exe ${name})
    if(kind STREQUAL "slow")
      set(exe ${name}_slow)
    endif()
    add_executable(${exe} ${${kind}} ${ARG_UNPARSED_ARGUMENTS})
    if(ARG_TORCH)
      batchlab_configure_target(${exe} TORCH)
    else()
      batchlab_configure_target(${exe})
    endif()
    # Paths (checkout, golden data, binary, peer Python) come from batchlab_test_paths
    # (tests/test_paths.h), never from -D values: see there.
    target_link_libraries(${exe} PRIVATE ${ARG_LIBS} batchlab_test_paths GTest::gtest GTest::gtest_main
                                         GTest::gmock)
    if(ARG_NEEDS_BINARY)
      add_dependencies(${exe} batchlab)
    endif()
    # One label per test: gtest_discover_tests writes PROPERTIES into a script unquoted, so a
    # two-element list would become LABELS <dir> plus a stray property named "slow".
    set(labels ${dir})
    if(kind STREQUAL "slow")
      set(labels slow)
    endif()
    if(ARG_FIXTURE)
      # Every test of the suite needs what the CTest fixture's setup test makes (a database, ...).
      gtest_discover_tests(${exe} PROPERTIES LABELS "${labels}" FIXTURES_REQUIRED "${ARG_FIXTURE}"
                           DISCOVERY_TIMEOUT 60)
    else()
      gtest_discover_tests(${exe} PROPERTIES LABELS "${labels}" DISCOVERY_TIMEOUT 60)
    endif()
  endforeach()
endfunction()
