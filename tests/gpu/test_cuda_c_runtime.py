"""The C CUDA device runtime (targets/gpu/cuda/nnvm_cuda.c), with no GPU: a C program with no
Python (gpu_c_driver.c) runs libraries built with devices=["cuda -arch=sm_XX"] over a fake
libcuda (fake_libcuda.c: host memory, a call log, injected failures) that the runtime opens
through NNVM_LIBCUDA. The log must show what the Python runtime would do: every launch of
every kernel's launch plan with its grid, block and buffers, copies of the right sizes,
modules loaded and constants uploaded once across runs, every buffer freed and the context
released at the end. Each failing driver call, no driver, an -emulate build, PTX for a newer
GPU and malformed blobs end the program with exit 1 and a message naming the call and its
CUresult (under ASan/UBSan where cc has them). What this cannot show: that a real driver
accepts the PTX and the kernels compute the right values (tests/gpu/test_cuda_target.py checks
the kernels under the host emulator; bench/gpu_check.py on a GPU)."""

from __future__ import annotations

import base64
import ctypes
import functools
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
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

from nnvm.compiler import build, save_param_dict
from nnvm.frontend import from_onnx
from nnvm.targets.gpu.cuda import c_runtime_flags, c_runtime_sources
from nnvm.targets.gpu.cuda.blob import decode_blob
from nnvm.targets.gpu.launch_plan import Copy, Launch, LaunchPlan
from nnvm.testing import onnx_models

HERE = Path(__file__).resolve().parent
SM90 = "cuda -arch=sm_90"


@functools.cache
def _no_cc() -> str:
    """Why the test programs cannot be built here ('' when they can)."""
    return "" if shutil.which("cc") else "no C compiler (cc)"


pytestmark = pytest.mark.skipif(_no_cc() != "", reason=_no_cc() or "-")


kernel_cache = kernel_cache_fixture()


@pytest.fixture(scope="module")
def fake(tmp_path_factory) -> Path:
    """The fake driver, as libcuda.so.1 in a folder of its own."""
    out = tmp_path_factory.mktemp("fake") / "libcuda.so.1"
    cmd = ["cc", "-O1", "-g", "-Wall", "-Werror", "-shared", "-fPIC", "-o", str(out)]
    subprocess.run([*cmd, str(HERE / "fake_libcuda.c"), "-lpthread"], check=True)
    return out


def fnv1a(data: bytes) -> int:
    h = 2166136261
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def fill_byte(kernel: str) -> int:
    """The byte a FAKE_CUDA_FILL launch of `kernel` writes (fake_libcuda.c)."""
    return (fnv1a(kernel.encode()) & 0xFF) | 1


class Log:
    """The fake driver's log, one call a line."""

    def __init__(self, text: str):
        self.lines = [line.split() for line in text.splitlines()]

    def of(self, call: str) -> list[list[str]]:
        return [w for w in self.lines if w and w[0] == call]

    def clean(self) -> None:
        """No call a real driver would refuse; contexts balanced; nothing left at exit."""
        assert not self.of("violation"), self.of("violation")
        assert len(self.of("push")) == len(self.of("pop"))
        assert self.lines[-1] == "exit allocations 0 modules 0 contexts 0".split(), self.lines[-3:]


class Program:
    """A model built for a CUDA target, exported, and the C driver linked against it."""

    def __init__(self, name: str, tmp: Path, fake: Path, target: str = SM90):
        self.dir, self.fake = tmp, fake
        model = getattr(onnx_models, name)()
        module, params = from_onnx(model)
        self.graph, self.lib, params = build(module, target="llvm", params=params, devices=[target])
        self.lib.export_library(tmp / "libmodel.so")
        self.lib.export_header(tmp / "nnvm_runtime.h")
        (tmp / "model.params").write_bytes(save_param_dict(params, self.graph.model_hash))
        build_driver(tmp, "CUDA", c_runtime_flags())
        self.in_files = write_inputs(tmp, self.graph, onnx_models.random_inputs(model, seed=7))
        self.out_files = [f"out{k}.bin" for k in range(len(self.graph.outputs))]

    def plan(self, kernel: str) -> LaunchPlan:
        return decode_blob(self.lib.blob(kernel))[0]

    def run(
        self, *options: str, libcuda: Path | None = None, files: bool = True, **fake_env: str
    ) -> tuple[subprocess.CompletedProcess, Log]:
        """The driver over the fake (or `libcuda`) on the model's files (unless not `files`);
        fake_env: FAKE_CUDA_<KEY> variables."""
        log = self.dir / "calls.log"
        log.unlink(missing_ok=True)
        for f in self.out_files:
            (self.dir / f).unlink(missing_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_CUDA_")}
        env.update({f"FAKE_CUDA_{k.upper()}": v for k, v in fake_env.items()})
        env.update(sanitizer_env(self.dir), FAKE_CUDA_LOG=str(log), NNVM_NUM_THREADS="2")
        env["NNVM_LIBCUDA"] = str(libcuda or self.fake)
        args = [*options, *(["model.params", *self.in_files, *self.out_files] if files else [])]
        proc = subprocess.run(
            ["./driver", *args], cwd=self.dir, capture_output=True, text=True, env=env, timeout=120
        )
        return proc, Log(log.read_text() if log.exists() else "")


@pytest.fixture(scope="module")
def resnet(tmp_path_factory, fake) -> Program:
    """resnet_like: constants, a temporary, a two-launch plan, 3-d grids and blocks."""
    return Program("resnet_like", tmp_path_factory.mktemp("resnet"), fake)


def test_model_run_replays_the_python_plans(resnet: Program) -> None:
    """Two runs: every launch of every plan in order, with the grid, block and buffers the plan
    says; constants uploaded and temporaries allocated once, modules loaded once; the host's
    copies of the sizes of its buffers; everything released."""
    proc, log = resnet.run("--runs", "2", fill="1")
    ran(proc)
    log.clean()
    nodes = resnet.graph.nodes
    assert all(n.device == SM90 for n in nodes)
    plans = {n.kernel: resnet.plan(n.kernel) for n in nodes}
    assert any(p.temps for p in plans.values()) and any(p.consts for p in plans.values())
    assert any(sum(isinstance(s, Launch) for s in p.steps) > 1 for p in plans.values())

    sizes = {int(w[1]): int(w[2]) for w in log.of("alloc")}
    uploads = [(int(w[1]), int(w[2]), w[3]) for w in log.of("htod")]
    launches = iter(log.of("launch"))
    bound: dict[tuple[str, str, int], int] = {}  # (kernel, kind, index) -> allocation
    for _ in range(2):  # runs
        for node in nodes:
            plan = plans[node.kernel]
            for step in plan.steps:
                if isinstance(step, Copy):
                    continue  # none in this model: test_copy_steps
                w = next(launches)
                grid, block = tuple(map(int, w[3:6])), tuple(map(int, w[7:10]))
                assert (w[1], grid, block) == (step.kernel, step.grid, step.block), w
                params = [tuple(map(int, p.split(":"))) for p in w[12:]]
                assert int(w[11]) == len(params) == len(step.args), w
                for (kind, k), (alloc, size) in zip(step.args, params, strict=True):
                    assert bound.setdefault((node.kernel, kind, k), alloc) == alloc, (w, kind, k)
                    if kind == "temp":
                        assert size == max(plan.temps[k], 1)
                    elif kind == "const":
                        data = plan.consts[k]
                        assert size == max(len(data), 1)
                        want = [(alloc, len(data), f"{fnv1a(data):08x}")] if data else []
                        assert [u for u in uploads if u[0] == alloc] == want  # once
    assert next(launches, None) is None
    assert not log.of("dtod")
    # one module per kernel, loaded at its first launch; one synchronization per kernel launch
    assert len(log.of("module")) == len(plans)
    assert sorted(w[2] for w in log.of("function")) == sorted(
        s.kernel for p in plans.values() for s in p.steps
    )
    assert len(log.of("sync")) == 2 * len(nodes) + 1  # and one before the release
    assert len(log.of("retain")) == len(log.of("release")) == 1
    # the host's copies fill and read whole buffers; temporaries and constants are not copied
    device_side = {a for (_, kind, _), a in bound.items() if kind != "arg"}
    for w in log.of("htod") + log.of("dtoh"):
        if int(w[1]) not in device_side:
            assert int(w[2]) == sizes[int(w[1])], w
    # the output is what the last launch wrote into it (the fake fills its last parameter)
    last = [s for s in plans[nodes[-1].kernel].steps if isinstance(s, Launch)][-1]
    assert last.args[-1] == ("arg", plans[nodes[-1].kernel].n_args - 1)
    out = np.fromfile(resnet.dir / resnet.out_files[0], np.uint8)
    assert out.size == resnet.graph.outputs[0].nbytes
    assert (out == fill_byte(last.kernel)).all()


def _edited(fn: Callable[[dict], None]) -> Callable[[bytes], bytes]:
    def edit(blob: bytes) -> bytes:
        doc = json.loads(blob)
        fn(doc)
        return json.dumps(doc).encode()

    return edit


def test_copy_steps(resnet: Program) -> None:
    """A plan whose kernel writes a temporary that copy steps move to the output through a
    second temporary (and a 0-byte copy of a constant): cuMemcpyDtoD of the plan's sizes
    between the plan's buffers, and the output is what the kernel wrote."""
    kernel = resnet.graph.nodes[-1].kernel
    nbytes = resnet.graph.outputs[0].nbytes

    def redirect(doc: dict) -> None:
        plan = doc["plan"]
        out, first = plan["n_args"] - 1, len(plan["temps"])
        assert plan["steps"][-1]["args"][-1] == ["arg", out]
        plan["steps"][-1]["args"][-1] = ["temp", first]
        plan["temps"] += [nbytes, nbytes]
        plan["consts"].append(base64.b64encode(bytes(range(7))).decode())
        const = len(plan["consts"]) - 1
        plan["steps"] += [
            {"copy": [["temp", first], ["temp", first + 1]], "bytes": nbytes},
            {"copy": [["const", const], ["temp", first]], "bytes": 0},
            {"copy": [["temp", first + 1], ["arg", out]], "bytes": nbytes},
        ]

    (resnet.dir / "copies.json").write_bytes(_edited(redirect)(resnet.lib.blob(kernel)))
    proc, log = resnet.run("--runs", "2", "--blob", f"{kernel}=copies.json", fill="1")
    ran(proc)
    log.clean()
    copies = log.of("dtod")  # dtod DST SRC NBYTES
    assert len(copies) == 4 and all(int(w[3]) == nbytes for w in copies)
    assert copies[2:] == copies[:2]  # the same buffers in the second run
    (temp2, temp1), (out_id, src) = [w[1:3] for w in copies[:2]]
    assert src == temp2 and len({temp1, temp2, out_id}) == 3
    launch = [w for w in log.of("launch") if w[1].startswith(kernel)][0]
    assert launch[-1].split(":")[0] == temp1  # the kernel wrote the first temporary
    assert out_id in [w[1] for w in log.of("dtoh")]  # which the host reads
    out = np.fromfile(resnet.dir / resnet.out_files[0], np.uint8)
    assert (out == fill_byte(launch[1])).all()


def _first_launch(prog: Program) -> tuple:
    step = prog.plan(prog.graph.nodes[0].kernel).steps[0]
    assert isinstance(step, Launch)
    return (step.kernel, *step.grid, *step.block)


def _host_allocations(resnet: Program) -> int:
    _, log = resnet.run()
    words = [w[0] for w in log.lines]
    return words[: words.index("module")].count("alloc")


FAILURES: dict[str, tuple] = {  # name: (fake env, options, message); or callables of the program
    "init": ({"fail": "cuInit=100"}, (), ["cuInit failed: CUDA_ERROR_NO_DEVICE (100)"]),
    "unknown_code": ({"fail": "cuInit=12345"}, (), ["cuInit failed: CUresult 12345 (12345)"]),
    "count": (
        {"fail": "cuDeviceGetCount=3"},
        (),
        ["cuDeviceGetCount failed: CUDA_ERROR_NOT_INITIALIZED (3)"],
    ),
    "no_such_device": ({}, ("--device", "1"), ["no CUDA device 1: this machine has 1"]),
    "negative_device": ({"devices": "2"}, ("--device", "-1"), ["no CUDA device -1"]),
    "capability": (
        {"fail": "cuDeviceGetAttribute=101"},
        (),
        ["cuDeviceGetAttribute(compute capability of device 0) failed: CUDA_ERROR_INVALID_DEVICE"],
    ),
    "context": (
        {"fail": "cuDevicePrimaryCtxRetain=201"},
        (),
        ["cuDevicePrimaryCtxRetain(device 0) failed: CUDA_ERROR_INVALID_CONTEXT (201)"],
    ),
    "push": (
        {"fail": "cuCtxPushCurrent_v2#1=201"},
        (),
        ["alloc: cuCtxPushCurrent failed: CUDA_ERROR_INVALID_CONTEXT (201)"],
    ),
    "out_of_memory": (
        {"fail": "cuMemAlloc_v2#2=2"},
        (),
        ["could not allocate", "cuMemAlloc(", " bytes) failed: CUDA_ERROR_OUT_OF_MEMORY (2)"],
    ),
    "out_of_memory_for_a_constant": (
        lambda p: {"fail": f"cuMemAlloc_v2#{_host_allocations(p) + 1}=2"},
        (),
        lambda p: [
            f"launch failed for kernel {p.graph.nodes[0].kernel}",
            f"cuMemAlloc(constant 0, {len(p.plan(p.graph.nodes[0].kernel).consts[0])} bytes) "
            "failed: CUDA_ERROR_OUT_OF_MEMORY (2)",
        ],
    ),
    "upload": (
        {"fail": "cuMemcpyHtoD_v2#1=1"},
        (),
        ["copy_to_device: cuMemcpyHtoD(", " bytes) failed: CUDA_ERROR_INVALID_VALUE (1)"],
    ),
    "module": (
        {"fail": "cuModuleLoadDataEx=218"},
        (),
        [
            "launch failed for kernel fused_conv2d",
            "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (218); JIT log:\n"
            "ptxas fatal   : fake JIT failure 218",
        ],
    ),
    "function": (
        {"fail": "cuModuleGetFunction=500"},
        (),
        ['cuModuleGetFunction("fused_conv2d_add_relu_', "failed: CUDA_ERROR_NOT_FOUND (500)"],
    ),
    "launch": (
        {"fail": "cuLaunchKernel=719"},
        (),
        lambda p: [
            f"launch failed for kernel {p.graph.nodes[0].kernel}",
            "cuLaunchKernel({}, grid {}x{}x{}, block {}x{}x{}) failed: CUDA_ERROR_LAUNCH_FAILED "
            "(719)".format(*_first_launch(p)),
        ],
    ),
    "fault": (
        {"fail": "cuCtxSynchronize#1=700"},
        (),
        ["cuCtxSynchronize (after its launches) failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)"],
    ),
    "download": (
        {"fail": "cuMemcpyDtoH_v2=1"},
        (),
        ["copy_from_device: cuMemcpyDtoH(", " bytes) failed: CUDA_ERROR_INVALID_VALUE (1)"],
    ),
}


@pytest.mark.parametrize("case", list(FAILURES))
def test_a_failing_driver_call_is_an_error(resnet: Program, case: str) -> None:
    """Exit 1 with the call and its CUresult, and still nothing left allocated or retained."""
    env, options, needles = FAILURES[case]
    env = env(resnet) if callable(env) else env
    needles = needles(resnet) if callable(needles) else needles
    proc, log = resnet.run(*options, **env)
    failed(proc, *needles)
    assert log.of("fail") or "fail" not in env, "the failure was not injected"
    if case not in ("init", "unknown_code"):  # no exit line: the driver never initialized
        log.clean()


def test_no_driver(resnet: Program, fake: Path, tmp_path: Path) -> None:
    """The program does not link libcuda: it starts without one and says what is missing; a
    library that is not a CUDA driver is one too."""
    proc, _ = resnet.run(libcuda=tmp_path / "nowhere" / "libcuda.so.1")
    failed(proc, "no CUDA driver on this machine", "nowhere/libcuda.so.1", "NNVM_LIBCUDA")
    (tmp_path / "empty.c").write_text("int not_a_driver;\n")
    empty = tmp_path / "libempty.so"
    cmd = ["cc", "-shared", "-fPIC", "-o", str(empty), "empty.c"]
    subprocess.run(cmd, cwd=tmp_path, check=True)
    proc, _ = resnet.run(libcuda=empty)
    failed(proc, f"the CUDA driver {empty} has no cuInit")
    if shutil.which("readelf"):
        needed = subprocess.run(
            ["readelf", "-d", "driver"], cwd=resnet.dir, capture_output=True, text=True
        ).stdout
        assert "NEEDED" in needed and "libcuda" not in needed
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:  # this machine has none: the default name fails the same way
        env = {k: v for k, v in os.environ.items() if k != "NNVM_LIBCUDA"}
        proc = subprocess.run(
            ["./driver", "model.params", *resnet.in_files, *resnet.out_files],
            cwd=resnet.dir,
            capture_output=True,
            text=True,
            env={**env, **sanitizer_env(resnet.dir)},
        )
        failed(proc, "no CUDA driver on this machine (libcuda.so.1: cannot open")


def test_num_devices(resnet: Program, tmp_path: Path) -> None:
    proc, _ = resnet.run("--num-devices", files=False, devices="3")
    assert proc.returncode == 0 and proc.stdout.split()[0] == "3", proc.stderr
    proc, _ = resnet.run("--num-devices", files=False, libcuda=tmp_path / "libcuda.so.1")
    assert proc.returncode == 1 and proc.stdout.split()[0] == "-1"
    assert "no CUDA driver on this machine" in proc.stderr


def test_device_index_of_a_target(resnet: Program) -> None:
    cases = {
        SM90: 0,
        "cuda": 0,
        "nvptx -arch=sm_80": 0,
        "cuda -arch=sm_90 -device=2": 2,
        "cuda -device=1 -tiles=registers": 1,
        "cuda -arch=sm_90 -emulate": 0,  # refused at its first launch
        "cuda -device=": -1,
        "cuda -device=x": -1,
        "opencl": -1,
        "cudax": -1,
        "": -1,
    }
    for target, want in cases.items():
        proc = subprocess.run(
            ["./driver", "--device-index", target], cwd=resnet.dir, capture_output=True, text=True
        )
        assert proc.returncode == 0 and int(proc.stdout) == want, (target, proc.stdout)


def test_arch_newer_than_the_device(resnet: Program, tmp_path: Path) -> None:
    """sm_90 PTX on a compute capability 8.0 device is refused before the driver sees it; PTX
    whose blob claims sm_80 but targets sm_90 is refused by the JIT, whose log is shown."""
    proc, log = resnet.run(cc="8.0")
    failed(
        proc,
        "was built for sm_90, but CUDA device 0 has compute capability 8.0",
        "rebuild for target 'cuda -arch=sm_80'",
    )
    assert not log.of("module")
    log.clean()
    kernel = resnet.graph.nodes[0].kernel
    blob = _edited(lambda d: d.__setitem__("arch", "sm_80"))(resnet.lib.blob(kernel))
    (resnet.dir / "claims_sm80.json").write_bytes(blob)
    proc, log = resnet.run("--blob", f"{kernel}=claims_sm80.json", cc="8.0")
    failed(
        proc,
        "cuModuleLoadDataEx failed: CUDA_ERROR_NO_BINARY_FOR_GPU (209); JIT log:\n",
        "SM version specified by .target is higher",
    )
    log.clean()


def test_sm80_build_runs_on_sm80_and_newer(tmp_path: Path, fake: Path) -> None:
    prog = Program("mlp", tmp_path, fake, target="cuda -arch=sm_80")
    for cc in ("8.0", "8.6", "9.0"):
        proc, log = prog.run(cc=cc)
        ran(proc)
        log.clean()
        assert len(log.of("launch")) == len(prog.graph.nodes)


def test_emulate_build_is_refused(tmp_path: Path, fake: Path) -> None:
    prog = Program("mlp", tmp_path, fake, target="cuda -arch=sm_90 -emulate")
    assert decode_blob(prog.lib.blob(prog.graph.nodes[0].kernel))[3]  # it carries LLVM IR
    proc, log = prog.run()
    failed(proc, "was built for `cuda -emulate`", "the C runtime runs PTX on a GPU only")
    assert not log.of("module")
    log.clean()


def _step0(key: str, value):
    return _edited(lambda d: d["plan"]["steps"][0].__setitem__(key, value))


BAD_BLOBS = {  # name: (the bad blob made from a good one, what the message says)
    "truncated": (lambda b: b[: len(b) // 2], ["is not JSON", "truncated"]),
    "not_a_plan": (_edited(lambda d: d["plan"].pop("steps")), ["plan.steps is not an array"]),
    "bad_ref": (
        _step0("args", [["const", 9]]),
        ["not a launch plan", "steps[0].args[0] is not a buffer of the plan"],
    ),
    "opencl_program": (
        _edited(lambda d: d.pop("format")),
        ['is not a CUDA module (no "format"; OpenCL C?'],
    ),
    "other_format": (
        _edited(lambda d: d.__setitem__("format", "nnvm-cuda/2")),
        ["is a nnvm-cuda/2 blob, not nnvm-cuda/1"],
    ),
    "bad_arch": (_edited(lambda d: d.__setitem__("arch", "gfx90a")), ['"arch" (gfx90a)']),
    "not_ptx": (
        _edited(lambda d: d.__setitem__("code", "__kernel void k() {}")),
        ["cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_IMAGE (200)"],
    ),
    "no_such_kernel": (
        _step0("launch", "nope"),
        ['cuModuleGetFunction("nope") failed: CUDA_ERROR_NOT_FOUND (500)'],
    ),
    "too_many_threads": (
        _step0("block", [64, 32, 1]),
        ["block 64x32x1) failed: CUDA_ERROR_INVALID_VALUE (1)"],
    ),
}


@pytest.mark.parametrize("case", list(BAD_BLOBS))
def test_bad_blob_is_an_error(resnet: Program, case: str) -> None:
    kernel = resnet.graph.nodes[0].kernel
    make, needles = BAD_BLOBS[case]
    (resnet.dir / f"{case}.json").write_bytes(make(resnet.lib.blob(kernel)))
    proc, log = resnet.run("--blob", f"{kernel}={case}.json")
    failed(proc, f"launch failed for kernel {kernel}", *needles)
    log.clean()


def test_plan_reader_reads_cuda_blobs(resnet: Program, tmp_path: Path) -> None:
    """The shared reader reads a CUDA blob as decode_blob does (format, arch, PTX, plan), and
    one with LLVM IR (-emulate) as such; prefixes and mutations as test_opencl_c_runtime's."""
    fuzz = build_plan_fuzz(tmp_path)
    blobs = [resnet.lib.blob(n.kernel) for n in resnet.graph.nodes]
    real = min((b for b in blobs if decode_blob(b)[0].consts), key=len)
    emulated = _edited(lambda d: d.__setitem__("llvm_ir", "; ModuleID = 'k'\n"))(real)
    for name, blob, ir in (("real", real, 0), ("emulated", emulated, 1)):
        plan, ptx, arch, _ = decode_blob(blob)
        cuda = f"format nnvm-cuda/1 arch {arch} llvm_ir {ir}"
        fuzz_plan_reader(fuzz, name, blob, ptx, plan_summary(ptx, plan, cuda))


def test_sources_ship_with_the_package() -> None:
    c_file, header, plan = c_runtime_sources()
    assert c_file.name == "nnvm_cuda.c" and c_file.is_file()
    assert header.name == "nnvm_cuda.h" and "nnvm_cuda_device_api" in header.read_text()
    assert plan.name == "nnvm_gpu_plan.h" and plan.is_file()
    includes = re.findall(r'#include [<"]([^>"]+)', c_file.read_text())
    assert "nnvm_gpu_plan.h" in includes and "cuda.h" not in includes  # no CUDA toolkit needed
    text = (HERE.parents[1] / "pyproject.toml").read_text()
    assert '"nnvm.targets.gpu.cuda" = ["*.c", "*.h"]' in text
    assert '"nnvm.targets.gpu" = ["*.h"]' in text
