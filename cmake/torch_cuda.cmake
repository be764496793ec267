# What the LibTorch found by find_package(Torch) can do on GPUs, decided at configure time:
#   BATCHLAB_WITH_CUDA  LibTorch was built with CUDA (its torch_cuda target / CAFFE2_USE_CUDA):
#                       the GPU code paths (CUDA events, device properties, set_device) compile in.
#   BATCHLAB_WITH_NCCL  ... and NCCL: c10d::ProcessGroupNCCL is in libtorch_cuda for the official
#                       Linux builds; its header needs nccl.h, looked up in NCCL_ROOT, the CUDA
#                       toolkit, and a pip torch's nvidia-nccl wheel. -DBATCHLAB_NCCL=OFF disables.
# Debian's CPU LibTorch has neither, and the CPU build needs nothing from this file.
option(BATCHLAB_NCCL "Use NCCL for data parallelism on CUDA when LibTorch has it" ON)

set(BATCHLAB_WITH_CUDA OFF)
set(BATCHLAB_WITH_NCCL OFF)
if(TARGET torch_cuda OR CAFFE2_USE_CUDA)
  set(BATCHLAB_WITH_CUDA ON)
endif()

if(BATCHLAB_WITH_CUDA)
  add_compile_definitions(BATCHLAB_WITH_CUDA=1)
  if(BATCHLAB_NCCL)
    # A pip torch: <site-packages>/torch/share/cmake -> <site-packages>/nvidia/nccl/include.
    get_filename_component(_torch_site "${Torch_DIR}/../../../.." ABSOLUTE)
    find_path(BATCHLAB_NCCL_INCLUDE_DIR nccl.h
      HINTS $ENV{NCCL_ROOT}/include $ENV{NCCL_HOME}/include ${CUDAToolkit_INCLUDE_DIRS}
            ${CUDA_TOOLKIT_ROOT_DIR}/include ${_torch_site}/nvidia/nccl/include
            /usr/local/cuda/include)
    if(BATCHLAB_NCCL_INCLUDE_DIR)
      set(BATCHLAB_WITH_NCCL ON)
      add_compile_definitions(BATCHLAB_WITH_NCCL=1)
      include_directories(SYSTEM ${BATCHLAB_NCCL_INCLUDE_DIR})
    endif()
  endif()
endif()
message(STATUS "batchlab: LibTorch ${Torch_VERSION}; CUDA ${BATCHLAB_WITH_CUDA}; NCCL ${BATCHLAB_WITH_NCCL}")
