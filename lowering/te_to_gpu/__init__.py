"""te kernels with bound loops -> gpu.module kernels and gpu.launch_func."""
