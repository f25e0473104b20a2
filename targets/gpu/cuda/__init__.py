"""The CUDA target (`cuda -arch=sm_90`): GPU kernels -> NVPTX llvm -> PTX, run through the CUDA
driver API (ctypes; libcuda is loaded only when a device is used), or from C through the C
device runtime shipped beside this file (`c_runtime_sources`)."""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def c_runtime_sources() -> list[Path]:
    """The C CUDA device runtime, for C programs running a library built with
    devices=["cuda -arch=sm_XX"] (docs/deploy-c.md): `nnvm_cuda.c`, its header `nnvm_cuda.h`,
    and `nnvm_gpu_plan.h` (one folder up: the launch-plan reader it shares with the OpenCL
    runtime, which it includes). Compile the .c file with the program, with both folders and
    nnvm_runtime.h (`lib.export_header`) on the include path. Nothing links libcuda: the
    runtime opens it at run time (dlopen).

        cc app.c nnvm_cuda.c -I<this folder> -I<gpu folder> -Iout -Lout -lmodel -ldl -lpthread
    """
    return [_HERE / "nnvm_cuda.c", _HERE / "nnvm_cuda.h", _HERE.parent / "nnvm_gpu_plan.h"]


def c_runtime_flags() -> list[str]:
    """What a C compiler needs besides your own files to build a program with the C CUDA
    runtime: the runtime's source, the include paths of its headers and of nnvm_runtime.h, and
    the libraries it links (libdl for dlopen, libpthread; both no-ops on glibc 2.34 and
    later). No CUDA toolkit, header or library is needed to build."""
    cpu = _HERE.parent.parent / "cpu"
    includes = [f"-I{_HERE}", f"-I{_HERE.parent}", f"-I{cpu}"]
    return [str(_HERE / "nnvm_cuda.c"), *includes, "-ldl", "-lpthread"]
