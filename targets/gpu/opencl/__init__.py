"""`target="opencl"`: GPU kernels printed as OpenCL C and run through pyopencl, or from C
through the C device runtime shipped beside this file (`c_runtime_sources`)."""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def c_runtime_sources() -> list[Path]:
    """The C OpenCL device runtime, for C programs running a library built with
    devices=["opencl"] (docs/deploy-c.md): `nnvm_opencl.c`, its header `nnvm_opencl.h`, and
    `nnvm_gpu_plan.h` (one folder up: the launch-plan reader it shares with the CUDA runtime,
    which it includes). Compile the .c file with the program, with both folders and
    nnvm_runtime.h (`lib.export_header`) on the include path, and link libOpenCL:

        cc app.c nnvm_opencl.c -I<this folder> -I<gpu folder> -Iout -Lout -lmodel -lOpenCL -ldl
    """
    return [_HERE / "nnvm_opencl.c", _HERE / "nnvm_opencl.h", _HERE.parent / "nnvm_gpu_plan.h"]


def c_runtime_flags() -> list[str]:
    """What a C compiler needs besides your own files to build a program with the C OpenCL
    runtime: the runtime's source, the include paths of its headers and of nnvm_runtime.h, and
    the libraries it links (libOpenCL; libdl for dlsym, a no-op on glibc 2.34 and later)."""
    cpu = _HERE.parent.parent / "cpu"
    includes = [f"-I{_HERE}", f"-I{_HERE.parent}", f"-I{cpu}"]
    return [str(_HERE / "nnvm_opencl.c"), *includes, "-lOpenCL", "-ldl"]
