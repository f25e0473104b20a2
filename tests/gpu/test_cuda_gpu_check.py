"""bench/gpu_check.py, the one script for a lent NVIDIA machine, as far as it runs without one:
its arguments, and its kernel and SGEMM checks on the host emulator (`--emulate`). The driver
path (events, cuBLAS, the device peak) needs a GPU and is not exercised here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

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
    assert gpu_check.target_spec(args) == "cuda -arch=sm_90"
    args = gpu_check.parse_args(["--arch", "sm_80", "--device", "1", "--emulate"])
    assert gpu_check.target_spec(args) == "cuda -arch=sm_80 -device=1 -emulate"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--arch", "sm_70"], "--arch sm_70: known sm_80"),
        (["--models", "mlp,vgg"], "unknown models ['vgg']"),
        (["--resnet50", "/nonexistent/r50.onnx"], "no such file"),
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
    code = gpu_check.main(["--emulate", "--sgemm", "80", "--models", "", "--repeat", "1"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "host emulator (no GPU)" in out
    assert out.count(" ok ") == len(gpu_check.KERNELS) + 1, out
    assert "SGEMM 80^3 (nnvm)" in out and "GFLOP/s" in out
