"""`target="opencl"`: GPU kernels printed as OpenCL C and run through pyopencl."""
