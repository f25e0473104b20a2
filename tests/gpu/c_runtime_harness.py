"""What the tests of the C GPU device runtimes (test_opencl_c_runtime.py,
test_cuda_c_runtime.py) share: building their C programs under ASan/UBSan where the compiler
has them, and reading how such a program ended."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from nnvm.targets.gpu.launch_plan import Copy, LaunchPlan

HERE = Path(__file__).resolve().parent
GPU_C_DIR = HERE.parents[1] / "targets" / "gpu"  # nnvm_gpu_plan.h


def sanitizers(tmp: Path) -> list[str]:
    """ASan and UBSan flags where cc builds and runs a program with them, else []."""
    flags = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    (tmp / "probe.c").write_text("int main(void) { return 0; }\n")
    proc = subprocess.run(["cc", *flags, "probe.c", "-o", "probe"], cwd=tmp, capture_output=True)
    if proc.returncode or subprocess.run(["./probe"], cwd=tmp).returncode:
        return []
    return flags


def sanitizer_env(tmp: Path, suppress: Sequence[str] = ()) -> dict[str, str]:
    """Leaks are errors, except in the libraries `suppress` names (a driver's own); a
    sanitizer's finding exits 86, never the 1 of an error the program reports."""
    (tmp / "lsan.supp").write_text("".join(f"leak:{lib}\n" for lib in suppress))
    return {
        "ASAN_OPTIONS": "detect_leaks=1:exitcode=86",
        "LSAN_OPTIONS": f"suppressions={tmp / 'lsan.supp'}",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=86",
    }


def kernel_cache_fixture():
    """A module's autouse fixture (assign it to a name in the test module) that keeps the
    kernel cache in the session's temporary folder."""

    @pytest.fixture(autouse=True, scope="module")
    def kernel_cache(tmp_path_factory):
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("NNVM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernel-cache"))
            yield

    return kernel_cache


def build_driver(tmp: Path, device: str, runtime_flags: Sequence[str], sanitize: bool = True):
    """gpu_c_driver.c for `device` ("OPENCL", "CUDA") as tmp/driver, linked with the
    libmodel.so and nnvm_runtime.h exported in tmp and the runtime (its c_runtime_flags())."""
    cmd = ["cc", "-O1", "-g", "-Wall", "-Werror", *(sanitizers(tmp) if sanitize else [])]
    cmd += ["-o", "driver", f"-DDEVICE_{device}", str(HERE / "gpu_c_driver.c"), f"-I{tmp}"]
    cmd += ["-L.", "-lmodel", "-Wl,-rpath,$ORIGIN", *runtime_flags]
    subprocess.run(cmd, cwd=tmp, check=True)


def write_inputs(tmp: Path, graph, inputs: Mapping[str, np.ndarray]) -> list[str]:
    """The graph's inputs as raw files in tmp (in0.bin, ...), for the driver: their names."""
    files = []
    for k, info in enumerate(graph.inputs):
        data = np.ascontiguousarray(inputs[info["name"]], dtype=info["dtype"])
        (tmp / f"in{k}.bin").write_bytes(data.tobytes())
        files.append(f"in{k}.bin")
    return files


def ran(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Sanitizer" not in proc.stderr, proc.stderr[-4000:]


def failed(proc: subprocess.CompletedProcess, *needles: str) -> None:
    """Exit 1 (not a signal: no crash) with every needle in the message."""
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-4000:])
    assert "Sanitizer" not in proc.stderr, proc.stderr[-4000:]
    for needle in needles:
        assert needle in proc.stderr, (needle, proc.stderr[-4000:])


def build_plan_fuzz(tmp: Path) -> Path:
    """gpu_plan_fuzz.c (the blob reader of nnvm_gpu_plan.h on its own) built in tmp."""
    fuzz = tmp / "fuzz"
    cmd = ["cc", "-O1", "-g", "-Wall", "-Werror", *sanitizers(tmp), "-o", str(fuzz)]
    subprocess.run([*cmd, str(HERE / "gpu_plan_fuzz.c"), f"-I{GPU_C_DIR}"], check=True)
    return fuzz


def plan_summary(code: str, plan: LaunchPlan, cuda: str = "") -> str:
    """What gpu_plan_fuzz prints for a blob Python reads as (code, plan); `cuda` is its line
    for a blob with a "format" (`format nnvm-cuda/1 arch sm_90 llvm_ir 0`)."""

    def fnv(data: bytes) -> int:
        h = 2166136261
        for b in data:
            h = ((h ^ b) * 16777619) & 0xFFFFFFFF
        return h

    lines = [
        f"n_args {plan.n_args}",
        "temps" + "".join(f" {t}" for t in plan.temps),
        "consts" + "".join(f" {len(c)}:{fnv(c):08x}" for c in plan.consts),
        *([cuda] if cuda else []),
    ]
    for s in plan.steps:
        if isinstance(s, Copy):
            lines.append(f"copy {s.src[0]} {s.src[1]} {s.dst[0]} {s.dst[1]} {s.nbytes}")
        else:
            glob = " ".join(str(g * b) for g, b in zip(s.grid, s.block, strict=True))
            args = "".join(f" {k} {i}" for k, i in s.args)
            block = " ".join(map(str, s.block))
            lines.append(f"launch {s.kernel} global {glob} local {block} args{args}")
    return "\n".join(lines) + "\n"


def fuzz_plan_reader(fuzz: Path, name: str, blob: bytes, code: str, summary: str) -> None:
    """The reader reads `blob` as `summary` says and its code as `code`; it rejects every
    prefix, and reads or rejects every byte-mutated variant without a sanitizer finding."""
    tmp = fuzz.parent
    (tmp / f"{name}.json").write_bytes(blob)
    proc = subprocess.run(
        [str(fuzz), f"{name}.json", f"{name}.code"],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **sanitizer_env(tmp)},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    got, _, counts = proc.stdout.partition("prefixes")
    assert got == summary
    assert (tmp / f"{name}.code").read_bytes() == code.encode()
    assert f"prefixes rejected {len(blob)}" in "prefixes" + counts
