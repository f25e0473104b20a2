"""The C OpenCL device runtime (targets/gpu/opencl/nnvm_opencl.c): a C program with no Python
(gpu_c_driver.c) runs libraries built with devices=["opencl"] on PoCL and gets what the
Python runtime and the CPU build get; malformed program blobs, OpenCL C that does not build
and a device index past the last device are errors with a message, never a crash; the
program-blob reader reads what Python's read_blob reads and survives truncation and
corruption (gpu_plan_fuzz.c, under ASan/UBSan where the compiler has them)."""

from __future__ import annotations

import base64
import functools
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from c_runtime_harness import (
    build_driver,
    build_plan_fuzz,
    failed,
    fuzz_plan_reader,
    kernel_cache_fixture,
    plan_summary,
    ran,
    sanitizer_env,
    write_inputs,
)
from onnx import helper
from opencl_harness import requires_opencl

import nnvm
from nnvm.compiler import build, save_param_dict
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime
from nnvm.targets.gpu.launch_plan import Copy, read_blob
from nnvm.targets.gpu.opencl import c_runtime_flags, c_runtime_sources
from nnvm.targets.gpu.opencl.runtime import opencl_devices
from nnvm.testing import onnx_models

HERE = Path(__file__).resolve().parent


@functools.cache
def _c_toolchain() -> str:
    """Why a C program using OpenCL cannot be built here ('' when it can)."""
    cc = shutil.which("cc")
    if cc is None:
        return "no C compiler (cc)"
    probe = (
        "#define CL_TARGET_OPENCL_VERSION 120\n#include <CL/cl.h>\n"
        "int main(void) { cl_uint n; return clGetPlatformIDs(0, 0, &n) == 0 ? 0 : 0; }\n"
    )
    proc = subprocess.run(
        [cc, "-x", "c", "-", "-o", "/dev/null", "-lOpenCL"],
        input=probe,
        capture_output=True,
        text=True,
    )
    if proc.returncode:
        return (
            "no OpenCL headers or libOpenCL.so (apt-get install ocl-icd-opencl-dev opencl-headers)"
        )
    return ""


requires_c_opencl = pytest.mark.skipif(_c_toolchain() != "", reason=_c_toolchain() or "-")
pytestmark = requires_c_opencl  # and requires_opencl on every test that runs a kernel


kernel_cache = kernel_cache_fixture()


def _shared_matmul():
    """A MatMul with M, N >= 32: the shared-memory tile template (docs/gpu.md)."""
    node = helper.make_node("MatMul", ["x", "w"], ["y"])
    return onnx_models.single_op(node, (70, 45), {"w": (45, 97)})


MODELS = {
    "mlp": onnx_models.mlp,
    "resnet_like": onnx_models.resnet_like,  # temporaries and constants
    "transformer_encoder": onnx_models.transformer_encoder,  # temporaries, several steps
    "shared_matmul": _shared_matmul,
}


def _sanitizer_env(tmp: Path) -> dict[str, str]:
    """The OpenCL driver's own leaks are not the runtime's (PoCL keeps some until exit)."""
    return sanitizer_env(tmp, suppress=("libpocl", "libOpenCL", "libLLVM"))


class Program:
    """A model built for OpenCL, exported, and the C driver linked against it."""

    def __init__(self, name: str, tmp: Path, sanitize: bool = False):
        self.dir = tmp
        model = MODELS[name]()
        self.inputs = onnx_models.random_inputs(model, seed=7)
        self.module, params = from_onnx(model)
        self.graph, self.lib, self.params = build(
            self.module, target="llvm", params=params, devices=["opencl"]
        )
        self.host_params = params
        self.lib.export_library(tmp / "libmodel.so")
        self.lib.export_header(tmp / "nnvm_runtime.h")
        (tmp / "model.params").write_bytes(save_param_dict(self.params, self.graph.model_hash))
        build_driver(tmp, "OPENCL", c_runtime_flags(), sanitize)
        self.in_files = write_inputs(tmp, self.graph, self.inputs)
        self.out_files = [f"out{k}.bin" for k in range(len(self.graph.outputs))]

    def run(self, *options: str) -> subprocess.CompletedProcess:
        for f in self.out_files:
            (self.dir / f).unlink(missing_ok=True)
        return subprocess.run(
            ["./driver", *options, "model.params", *self.in_files, *self.out_files],
            cwd=self.dir,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, **_sanitizer_env(self.dir), "NNVM_NUM_THREADS": "2"},
        )

    def outputs(self) -> list[np.ndarray]:
        return [
            np.fromfile(self.dir / f, dtype=info.dtype).reshape(info.shape)
            for f, info in zip(self.out_files, self.graph.outputs, strict=True)
        ]

    def python_outputs(self, cpu: bool = False) -> list[np.ndarray]:
        if cpu:
            graph, lib, params = build(self.module, target="llvm", params=self.host_params)
            m = graph_runtime.create(graph, lib, nnvm.cpu(0))
        else:
            params = self.params
            m = graph_runtime.create(self.graph, self.lib, nnvm.opencl(0))
        m.set_input(**params)
        m.run(**self.inputs)
        return [m.get_output(k) for k in range(m.get_num_outputs())]

    def blob(self, kernel: str | None = None) -> tuple[str, bytes]:
        kernel = kernel or self.graph.nodes[0].kernel
        return kernel, self.lib.blob(kernel)


@requires_opencl
@pytest.mark.parametrize("name", list(MODELS))
def test_c_program_matches_python_runtime(name: str, tmp_path: Path) -> None:
    prog = Program(name, tmp_path)
    assert prog.graph.devices == ["opencl"]
    assert all(n.device == "opencl" for n in prog.graph.nodes)
    plans = [read_blob(prog.lib.blob(n.kernel)) for n in prog.graph.nodes]
    if name == "resnet_like":
        assert any(p.temps for _, p in plans) and any(p.consts for _, p in plans)
    if name == "shared_matmul":
        assert any("__local" in code for code, _ in plans), "the shared-memory matmul template"
    ran(prog.run("--runs", "2"))  # the second run reuses programs, temporaries, constants
    got = prog.outputs()
    for g, w in zip(got, prog.python_outputs(), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4)
    for g, w in zip(got, prog.python_outputs(cpu=True), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4)


@pytest.fixture(scope="module")
def mlp(tmp_path_factory) -> Program:
    """The mlp's driver under ASan/UBSan (where cc has them): the runtime's error paths."""
    return Program("mlp", tmp_path_factory.mktemp("mlp"), sanitize=True)


@requires_opencl
def test_copy_steps_and_constants(mlp: Program) -> None:
    """A plan whose kernel writes a temporary that copy steps move to the output (through a
    second temporary), with an unused constant and a 0-byte copy: same results."""
    kernel, blob = mlp.blob(mlp.graph.nodes[-1].kernel)
    doc = json.loads(blob)
    plan = doc["plan"]
    out = plan["n_args"] - 1
    nbytes = mlp.graph.outputs[0].nbytes
    launch = plan["steps"][0]
    assert len(plan["steps"]) == 1 and launch["args"][-1] == ["arg", out]
    launch["args"][-1] = ["temp", len(plan["temps"])]
    first = len(plan["temps"])
    plan["temps"] += [nbytes, nbytes]
    plan["consts"].append(base64.b64encode(bytes(range(7))).decode())
    plan["steps"] += [
        {"copy": [["temp", first], ["temp", first + 1]], "bytes": nbytes},
        {"copy": [["const", 0], ["temp", first]], "bytes": 0},
        {"copy": [["temp", first + 1], ["arg", out]], "bytes": nbytes},
    ]
    (mlp.dir / "copies.json").write_text(json.dumps(doc))
    code, parsed = read_blob((mlp.dir / "copies.json").read_bytes())
    assert sum(isinstance(s, Copy) for s in parsed.steps) == 3
    ran(mlp.run("--runs", "2", "--blob", f"{kernel}=copies.json"))
    for g, w in zip(mlp.outputs(), mlp.python_outputs(), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4)


def _edited(fn):
    """A blob -> that blob's JSON changed by fn."""

    def edit(blob: bytes) -> bytes:
        doc = json.loads(blob)
        fn(doc)
        return json.dumps(doc).encode()

    return edit


def _step0(key: str, value):
    return _edited(lambda d: d["plan"]["steps"][0].__setitem__(key, value))


BAD_BLOBS = {  # name: (the bad blob made from a good one, what the message says)
    "empty": (lambda b: b"", ("is not JSON", "truncated")),
    "truncated": (lambda b: b[: len(b) // 2], ("is not JSON", "truncated")),
    "cut_at_end": (lambda b: b[:-1], ("is not JSON", "truncated")),
    "corrupt": (lambda b: b.replace(b'"plan"', b'"plan" x', 1), ("is not JSON", "expected ':'")),
    "trailing": (lambda b: b + b"}", ("is not JSON", "trailing data")),
    "not_a_plan": (_edited(lambda d: d.pop("plan")), ('"plan" is missing',)),
    "bad_ref": (
        _edited(lambda d: d["plan"]["steps"][0]["args"].__setitem__(0, ["temp", 3])),
        ("not a launch plan", "steps[0].args[0] is not a buffer of the plan"),
    ),
    "bad_base64": (_edited(lambda d: d["plan"]["consts"].append("abc!")), ("is not base64",)),
    "negative_grid": (_step0("grid", [-1, 1, 1]), ("steps[0].grid",)),
    "no_such_kernel": (
        _step0("launch", "nope"),
        ('clCreateKernel("nope")', "CL_INVALID_KERNEL_NAME (-46)"),
    ),
    "cuda_blob": (
        _edited(lambda d: d.__setitem__("format", "nnvm-cuda/1")),
        ("is a nnvm-cuda/1 blob, not OpenCL C",),
    ),
    "does_not_build": (
        _edited(lambda d: d.__setitem__("code", "__kernel void broken( { not C }")),
        ("clBuildProgram failed", "CL_BUILD_PROGRAM_FAILURE (-11)", "build log"),
    ),
}


@requires_opencl
@pytest.mark.parametrize("case", list(BAD_BLOBS))
def test_bad_blob_is_an_error(mlp: Program, case: str) -> None:
    kernel, blob = mlp.blob()
    make, needles = BAD_BLOBS[case]
    (mlp.dir / f"{case}.json").write_bytes(make(blob))
    proc = mlp.run("--blob", f"{kernel}={case}.json")
    failed(proc, f"launch failed for kernel {kernel}", *needles)


@requires_opencl
def test_invalid_device_index(mlp: Program) -> None:
    n = len(opencl_devices())
    failed(mlp.run("--device", str(n)), f"no OpenCL device {n}: {n} found")
    failed(mlp.run("--device", "-3"), "no OpenCL device -3")


@requires_opencl
def test_device_index_of_a_target(mlp: Program) -> None:
    cases = {
        "opencl": 0,
        "cl": 0,
        "opencl -device=2": 2,
        "opencl -tiles=registers -device=1": 1,
        "opencl -device=": -1,
        "opencl -device=x": -1,
        "cuda -arch=sm_90": -1,
        "": -1,
    }
    for target, want in cases.items():
        proc = subprocess.run(
            ["./driver", "--device-index", target], cwd=mlp.dir, capture_output=True, text=True
        )
        assert proc.returncode == 0 and int(proc.stdout) == want, (target, proc.stdout)


def test_plan_reader_reads_what_python_reads_and_survives_corruption(tmp_path: Path) -> None:
    """Read as Python's read_blob reads: a real kernel's blob with constants and temporaries,
    and a small hand-made one (escapes, a surrogate pair, whitespace, copies, keys in another
    order, a key nobody reads holding every kind of JSON value); every prefix of each
    rejected, every byte-mutated variant read or rejected without a sanitizer finding."""
    fuzz = build_plan_fuzz(tmp_path)
    model = onnx_models.resnet_like()
    module, params = from_onnx(model)
    graph, lib, _ = build(module, target="llvm", params=params, devices=["opencl"])
    blobs = [lib.blob(n.kernel) for n in graph.nodes]
    real = min((b for b in blobs if read_blob(b)[1].consts), key=len)
    small = (
        b'{"plan": {"steps": [{"launch": "k\\u00e9", "block": [4, 2, 1], "grid": [3, 1, 1],'
        b' "args": [["arg", 1], ["temp", 0], ["const", 1]]}, {"bytes": 6, "copy": [["temp", 0],'
        b' ["arg", 0]]}], "n_args": 2, "temps": [8], "consts": ["", "AQID/w=="]},\n "code":'
        b' "__kernel void k() {} /* \\"\\\\\\/\\t \\ud83d\\ude00 */\\n",'
        b' "ignored": [true, false, null, -1.5e+3, 0.25, {}, []]}'
    )
    for name, blob in {"real": real, "small": small}.items():
        code, plan = read_blob(blob)
        fuzz_plan_reader(fuzz, name, blob, code, plan_summary(code, plan))


def test_sources_ship_with_the_package() -> None:
    c_file, header, plan = c_runtime_sources()
    assert c_file.name == "nnvm_opencl.c" and c_file.is_file()
    assert header.name == "nnvm_opencl.h" and header.is_file()
    assert plan.name == "nnvm_gpu_plan.h" and plan.is_file()  # shared with the CUDA runtime
    assert "nnvm_opencl_device_api" in header.read_text()
    assert '#include "nnvm_gpu_plan.h"' in c_file.read_text()
    text = (HERE.parents[1] / "pyproject.toml").read_text()
    assert '"nnvm.targets.gpu.opencl" = ["*.c", "*.h"]' in text
    assert '"nnvm.targets.gpu" = ["*.h"]' in text
