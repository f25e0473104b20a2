"""gpu dialect kernels -> llvm dialect functions for the NVPTX backend (convert-gpu-to-llvm)."""
