# What the LibTorch found by find_package(Torch) can do on GPUs, decided at configure time:
#   BATCHLAB_WITH_CUDA  LibTorch was built with CUDA (its torch_cuda target / CAFFE2_USE_CUDA):
#                       the GPU code paths (CUDA events, device properties, set_device) compile in.
#   BATCHLAB_WITH_NCCL  ... and NCCL: c10d::ProcessGroupNCCL is in libtorch_cuda for the official
#                       Linux builds (which link libnccl themselves); batchlab needs only nccl.h,
#                       looked up in NCCL_ROOT, the CUDA toolkit and the pip `nvidia` packages
#                       beside a pip torch (site-packages/nvidia/nccl/include, or the CUDA 13
#                       layout site-packages/nvidia/cu13/include).
# A CUDA LibTorch without nccl.h stops the configure (data parallelism would silently fall back to
# Gloo over host copies) unless -DBATCHLAB_ALLOW_NO_NCCL=ON; -DBATCHLAB_NCCL=OFF leaves NCCL out on
# purpose. Debian's CPU LibTorch has neither, and the CPU build needs nothing from this file.
# The configure log always carries one summary line:
#   batchlab: LibTorch 2.9.1, CUDA ON, NCCL ON
option(BATCHLAB_NCCL "Use NCCL for data parallelism on CUDA when LibTorch has it" ON)
option(BATCHLAB_ALLOW_NO_NCCL "Configure a CUDA build even when nccl.h is not found" OFF)

set(BATCHLAB_WITH_CUDA OFF)
set(BATCHLAB_WITH_NCCL OFF)
if(TARGET torch_cuda OR CAFFE2_USE_CUDA)
  set(BATCHLAB_WITH_CUDA ON)
endif()

# The site-packages directory holding a pip torch, or "" for other LibTorch installs. A pip
# torch's Torch_DIR is <site-packages>/torch/share/cmake/Torch; otherwise ask the Python that owns
# torch (Python3_EXECUTABLE, else $BATCHLAB_PYTHON as scripts/gpu/unpack.sh sets it, else python3).
function(batchlab_torch_site_packages out)
  get_filename_component(site "${Torch_DIR}/../../../.." ABSOLUTE)
  if(NOT EXISTS "${site}/torch/__init__.py")
    set(python "${Python3_EXECUTABLE}")
    if(NOT python)
      set(python "$ENV{BATCHLAB_PYTHON}")
    endif()
    if(NOT python)
      find_program(python NAMES python3 python)
    endif()
    set(site "")
    if(python)
      execute_process(
        COMMAND "${python}" -c
                "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))"
        OUTPUT_VARIABLE site OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    endif()
  endif()
  set(${out} "${site}" PARENT_SCOPE)
endfunction()

# A pip torch brings its CUDA runtime, NCCL, cuDNN, ... as `nvidia` wheels, and libtorch_cuda.so
# finds them through its RUNPATH ($ORIGIN/../../nvidia/*/lib). But torch's CMake config links
# CUDA::cudart of the machine's CUDA toolkit (/usr/local/cuda/lib), whose directory then becomes
# an -rpath that the linker searches before libtorch_cuda's RUNPATH for its dependencies: the
# toolkit's older libnccl.so.2 is found and the link fails on NCCL symbols it lacks (and at run time
# the toolkit's libcudart would be the one loaded). So: link the wheel's libcudart, and point the
# linker (-rpath-link) at the wheel's library directories, which is where the loader looks too.
# tests/cmake/binary_deps_test.sh checks what `ldd` resolves.
function(batchlab_use_wheel_cuda_libraries)
  batchlab_torch_site_packages(site)
  if(NOT site OR NOT TARGET torch::cudart)
    return()
  endif()
  file(GLOB cudart "${site}/nvidia/*/lib/libcudart.so.[0-9]*")
  file(GLOB lib_dirs LIST_DIRECTORIES true "${site}/nvidia/*/lib")
  if(NOT cudart)
    return()
  endif()
  list(GET cudart 0 cudart)
  set_property(TARGET torch::cudart PROPERTY INTERFACE_LINK_LIBRARIES "${cudart}")
  string(REPLACE ";" ":" dirs "${lib_dirs}")
  add_link_options("LINKER:-rpath-link,${dirs}")
  message(STATUS "batchlab: CUDA runtime and NCCL from the wheel (${site}/nvidia)")
endfunction()

if(BATCHLAB_WITH_CUDA)
  add_compile_definitions(BATCHLAB_WITH_CUDA=1)
  batchlab_use_wheel_cuda_libraries()
  if(BATCHLAB_NCCL)
    batchlab_torch_site_packages(_torch_site)
    set(_nccl_hints ${NCCL_ROOT}/include $ENV{NCCL_ROOT}/include $ENV{NCCL_HOME}/include
                    ${CUDAToolkit_INCLUDE_DIRS} ${CUDA_TOOLKIT_ROOT_DIR}/include)
    if(_torch_site)
      file(GLOB _wheel_nccl "${_torch_site}/nvidia/*/include/nccl.h"
                            "${_torch_site}/nvidia/*/*/include/nccl.h")
      foreach(_header ${_wheel_nccl})
        get_filename_component(_dir "${_header}" DIRECTORY)
        list(APPEND _nccl_hints "${_dir}")
      endforeach()
    endif()
    find_path(BATCHLAB_NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} PATHS /usr/local/cuda/include)
    if(BATCHLAB_NCCL_INCLUDE_DIR)
      set(BATCHLAB_WITH_NCCL ON)
      add_compile_definitions(BATCHLAB_WITH_NCCL=1)
      include_directories(SYSTEM ${BATCHLAB_NCCL_INCLUDE_DIR})
    elseif(NOT BATCHLAB_ALLOW_NO_NCCL)
      message(FATAL_ERROR
        "batchlab: LibTorch ${Torch_VERSION} has CUDA but nccl.h was not found (looked in "
        "NCCL_ROOT, the CUDA toolkit and ${_torch_site}/nvidia/*/include). Without it, "
        "data-parallel training would run over Gloo with host copies. Pass -DNCCL_ROOT=<dir "
        "holding include/nccl.h> (for a pip torch: find <site-packages>/nvidia -name nccl.h), "
        "or -DBATCHLAB_ALLOW_NO_NCCL=ON to build without NCCL on purpose.")
    endif()
  endif()
endif()
message(STATUS "batchlab: LibTorch ${Torch_VERSION}, CUDA ${BATCHLAB_WITH_CUDA}, "
               "NCCL ${BATCHLAB_WITH_NCCL}")
