# Helpers shared by every folder's targets.

set(BATCHLAB_WARNINGS -Wall -Wextra -Wshadow)
if(BATCHLAB_WERROR)
  list(APPEND BATCHLAB_WARNINGS -Werror)
endif()

# Applies the project's warning flags, include root and (for targets using LibTorch) the shared
# precompiled LibTorch header. The first torch target builds the PCH; the rest reuse it, so the
# 15-20 s cost of parsing torch/torch.h is paid once per build.
function(batchlab_configure_target target)
  cmake_parse_arguments(ARG "TORCH" "" "" ${ARGN})
  target_compile_options(${target} PRIVATE ${BATCHLAB_WARNINGS})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
  if(ARG_TORCH)
    # fmt before torch: include directories follow link order, and a pip torch ships fmt 12
    # headers in torch/include/fmt; compiled against those, a target would need fmt::v12 symbols
    # that the libfmt it links (Debian's fmt 9) does not have.
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
    target_link_libraries(${exe} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main GTest::gmock)
    target_compile_definitions(${exe} PRIVATE
      BATCHLAB_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
      BATCHLAB_GOLDEN_DIR="${BATCHLAB_GOLDEN_DIR}"
      BATCHLAB_BINARY="$<TARGET_FILE:batchlab>")
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
