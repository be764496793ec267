# Sourced on a machine without a package registry (a lent GPU machine): unpacks the .deb files
# that scripts/gpu/fetch-debs.sh fetched under /opt/batchlab-deps and points CMake, pkg-config,
# the compiler and the loader at them and at the LibTorch of the machine's PyTorch.
# Usage (repository root): source scripts/gpu/unpack.sh [DIR]      (DIR defaults to .gpu-debs)
# The Python that owns torch: $BATCHLAB_PYTHON, else /opt/torch/.venv/bin/python3 (the lent
# machines' PyTorch), else python3.
_dir=${1:-.gpu-debs}
_prefix=/opt/batchlab-deps
_lib=$_prefix/usr/lib/x86_64-linux-gnu
mkdir -p "$_prefix"
for _f in "$_dir"/*.deb; do dpkg -x "$_f" "$_prefix"; done
# zlib1g-dev's libz.so is an absolute link to Debian's libz.so.1.2.13: point it at the host's zlib.
_hostz=$(ls /usr/lib/x86_64-linux-gnu/libz.so.1 /lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1)
[ -n "$_hostz" ] && ln -sfn "$_hostz" "$_lib/libz.so"
_python=${BATCHLAB_PYTHON:-}
if [ -z "$_python" ]; then
  if [ -x /opt/torch/.venv/bin/python3 ]; then _python=/opt/torch/.venv/bin/python3; else _python=python3; fi
fi
# cmake/torch_cuda.cmake asks this Python where torch lives when Torch_DIR does not tell.
export BATCHLAB_PYTHON=$_python
_torch=$("$_python" -c 'import torch; print(torch.utils.cmake_prefix_path)')
export CMAKE_PREFIX_PATH="$_torch:$_prefix/usr:$_lib/cmake"
export CMAKE_LIBRARY_PATH="$_lib${CMAKE_LIBRARY_PATH:+:$CMAKE_LIBRARY_PATH}"
export PKG_CONFIG_PATH="$_lib/pkgconfig:$_prefix/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PATH="/usr/local/cuda/bin:$_prefix/usr/bin:$PATH"
# torch 2.11's CUDA headers include cuda.h and cuda_runtime_api.h, which its CMake targets do not put
# on the include path there; the lent machines keep them under the toolkit's targets/ folder and the
# wheel's nvidia/cu13/include (seen 2026-11-28: the build stopped at ATenCUDAGeneral.h without them).
_cuda_inc=$(dirname $(ls /usr/local/cuda/targets/*/include/cuda_runtime_api.h \
  "$(dirname "$(dirname "$(dirname "$_torch")")")"/nvidia/cu13/include/cuda_runtime_api.h 2>/dev/null) 2>/dev/null |
  sort -u | tr '\n' ':')
export CPATH="$_prefix/usr/include:${_cuda_inc}${CPATH:+$CPATH}"
export LIBRARY_PATH="$_lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
export LD_LIBRARY_PATH="$_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Hopper (H100, H200); torch's cmake compiles nothing for it, but checks the list.
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
echo "unpack: deps in $_prefix; LibTorch from $_torch;" \
  "$("$_python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)')"
