"""The GPU target family: the shared GpuTarget base and default schedules, OpenCL (opencl/) and
CUDA (cuda/) on top of it."""
