"""The CUDA target (`cuda -arch=sm_90`): GPU kernels -> NVPTX llvm -> PTX, run through the CUDA
driver API (ctypes; libcuda is loaded only when a device is used)."""
