# Finds LibTorch: the one inside the pinned `torch` wheel of the project virtualenv (.venv/, made by
# scripts/setup_venv.sh), so batchlab and its Python peers use one build. Another LibTorch 2.x
# (a user's own PyTorch install) is taken with -DTorch_DIR=... or CMAKE_PREFIX_PATH, or with
# -DBATCHLAB_PYTHON=/path/to/python whose `torch` is asked for torch.utils.cmake_prefix_path.
# Sets BATCHLAB_PYTHON (the interpreter that owns torch; the tests' peers run under it) and
# Python3_EXECUTABLE (cmake/torch_cuda.cmake reads it).
set(BATCHLAB_PYTHON "" CACHE FILEPATH "Python whose torch package holds the LibTorch to build against")
if(NOT BATCHLAB_PYTHON)
  if(EXISTS ${PROJECT_SOURCE_DIR}/.venv/bin/python)
    set(BATCHLAB_PYTHON ${PROJECT_SOURCE_DIR}/.venv/bin/python CACHE FILEPATH "" FORCE)
  elseif(DEFINED ENV{BATCHLAB_PYTHON})
    set(BATCHLAB_PYTHON $ENV{BATCHLAB_PYTHON} CACHE FILEPATH "" FORCE)
  endif()
endif()
if(NOT Torch_DIR AND BATCHLAB_PYTHON)
  execute_process(COMMAND ${BATCHLAB_PYTHON} -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
                  OUTPUT_VARIABLE _torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE _torch_rc ERROR_VARIABLE _torch_err)
  if(NOT _torch_rc EQUAL 0)
    message(FATAL_ERROR "batchlab: ${BATCHLAB_PYTHON} cannot import torch (${_torch_err}). "
                        "Run `bash scripts/setup.sh` (it installs the pinned torch wheel into .venv/).")
  endif()
  list(PREPEND CMAKE_PREFIX_PATH ${_torch_prefix})
endif()
if(NOT Torch_DIR AND NOT BATCHLAB_PYTHON)
  message(STATUS "batchlab: no .venv/ (bash scripts/setup.sh makes it); looking for LibTorch on CMAKE_PREFIX_PATH")
endif()
set(Python3_EXECUTABLE ${BATCHLAB_PYTHON})

# find_package(Torch) of a CUDA LibTorch enables CUDA and, with no GPU to ask, would guess the
# architectures (with a warning); batchlab compiles no kernels of its own, so name Hopper (the lent
# H100/H200) unless the caller chose.
if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST} AND NOT TORCH_CUDA_ARCH_LIST)
  set(TORCH_CUDA_ARCH_LIST "9.0")
endif()
find_package(Torch REQUIRED)
if(Torch_VERSION VERSION_LESS 2.0)
  message(FATAL_ERROR "batchlab: LibTorch ${Torch_VERSION} found at ${Torch_DIR}; batchlab needs 2.x "
                      "(bash scripts/setup.sh installs the pinned torch wheel into .venv/).")
endif()
