"""bench/gpu_check.py, the one script for a lent NVIDIA machine, as far as it runs without one:
its arguments, and its kernel and SGEMM checks on the host emulator (`--emulate`). The driver
path (events, cuBLAS, the device peak) needs a GPU and is not exercised here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "gpu_check.py"


@pytest.fixture(scope="module")
def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_defaults(gpu_check) -> None:
    args = gpu_check.parse_args([])
    assert (args.arch, args.sgemm, args.emulate) == ("sm_90", 4096, False)
    assert args.model_list == ["mlp", "resnet18", "bert2"]
    assert args.resnet50 == "built-in"
    assert gpu_check.target_spec(args) == "cuda -arch=sm_90"
    args = gpu_check.parse_args(["--arch", "sm_80", "--device", "1", "--emulate"])
    assert gpu_check.target_spec(args) == "cuda -arch=sm_80 -device=1 -emulate"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--arch", "sm_70"], "--arch sm_70: known sm_80"),
        (["--models", "mlp,vgg"], "unknown models ['vgg']"),
        (["--resnet50", "/nonexistent/r50.onnx"], "no such file"),
        (["--sgemm", "-1"], "--sgemm must be >= 0"),
        (["--repeat", "0"], "--repeat >= 1"),
    ],
)
def test_bad_arguments(gpu_check, capsys, argv, message) -> None:
    with pytest.raises(SystemExit) as exit_:
        gpu_check.parse_args(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_emulated_run_checks_kernels_and_sgemm(gpu_check, capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path))
    argv = ["--emulate", "--sgemm", "80", "--models", "", "--resnet50", "none", "--repeat", "1"]
    code = gpu_check.main(argv)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "host emulator (no GPU)" in out
    assert out.count(" ok ") == len(gpu_check.KERNELS) + 1, out
    assert "SGEMM 80^3 (nnvm)" in out and "GFLOP/s" in out


def test_the_built_in_resnet50(gpu_check) -> None:
    """ResNet-50's topology: 53 convolutions (stem, 16 bottlenecks of three, four projections)."""
    model = gpu_check.resnet50()
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("Conv") == 53 and ops.count("Add") == 16 and ops.count("Gemm") == 1


class FakeDriver:
    """The driver calls the script's runner makes, over host memory and a fake clock."""

    def __init__(self):
        self.memory: dict[int, np.ndarray] = {}
        self.events: list[str] = []

    def use(self, ordinal: int) -> None:
        self.events.append(f"use {ordinal}")

    def alloc(self, n: int) -> int:
        buf = np.zeros(n, np.uint8)
        self.memory[buf.ctypes.data] = buf
        return buf.ctypes.data

    def copy_to_device(self, ptr: int, host: memoryview) -> None:
        self.memory[ptr][:] = np.frombuffer(host, np.uint8)

    def copy_from_device(self, host: memoryview, ptr: int) -> None:
        np.frombuffer(host, np.uint8)[...] = self.memory[ptr]

    def synchronize(self) -> None:
        self.events.append("sync")

    def event(self) -> str:
        return f"ev{len(self.events)}"

    def record(self, ev: str) -> None:
        self.events.append(f"record {ev}")

    def elapsed_ms(self, start: str, end: str) -> float:
        return 12.0


def test_the_runner_on_the_driver(gpu_check, monkeypatch) -> None:
    from nnvm.targets.gpu.cuda.driver import CudaDriver

    fake = FakeDriver()
    monkeypatch.setattr(CudaDriver, "get", classmethod(lambda cls: fake))
    runner = gpu_check.Runner(gpu_check.parse_args(["--device", "1"]))
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    ptr = runner.upload(a)
    np.testing.assert_array_equal(runner.download(ptr, a), a)
    calls = []
    assert runner.time_ms(lambda: calls.append(1), 4) == 3.0  # 12 ms over 4 launches
    assert len(calls) == 5  # one warm-up
    assert fake.events[0] == "use 1" and "sync" in fake.events
