"""The accelerator from the command line: nnvm-tune --quantize shift --device accel tunes its
layers on the cycle model (and the host's kernels on the host) into one log, and nnvm-compile
with the same options and --tuning-log builds with it; a device with no cycle model is
refused before any trial."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import pytest

from nnvm.support.tuning_log import read_log
from nnvm.tools.compile import main as compile_main
from nnvm.tools.tune import main as tune_main


@pytest.fixture(scope="module")
def model_files(tmp_path_factory, quantized):
    folder = tmp_path_factory.mktemp("accel-cli")
    onnx.save(quantized[0], folder / "convs.onnx")  # the float model (conftest.convs_model)
    rng = np.random.default_rng(1)
    np.savez(folder / "calib.npz", x=rng.standard_normal((4, 2, 5, 12, 12)).astype(np.float32))
    return folder


def test_tune_and_build_the_accelerator_from_the_cli(model_files, capsys):
    quant = ["--quantize", "shift", "--calibration", str(model_files / "calib.npz")]
    log = model_files / "tune.jsonl"
    rc = tune_main([str(model_files / "convs.onnx"), "--log", str(log), *quant,
                    "--device", "accel", "--trials", "4", "--batch", "4", "--confirm-rounds",
                    "0", "--search", "random"])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "3 on devices, measured on their cycle models" in out
    targets = {r.target for r in read_log(log).trials}
    assert any(t.startswith("accel") for t in targets), targets
    assert any(not t.startswith("accel") for t in targets), "the host's conv was not tuned"
    rc = compile_main([str(model_files / "convs.onnx"), "-o", str(model_files / "out"), *quant,
                       "--device", "accel", "--tuning-log", str(log), "--run"])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "(3 on accel" in out
    tuned = int(out.split("tuning log: ")[1].split()[0])
    assert tuned >= 4, out  # three accel layers and at least the host's conv


def test_a_device_without_a_cycle_model_is_refused(model_files):
    """A task of a device target with no cycle model (CUDA) has nowhere to be measured: the
    check refuses it before any trial."""
    from nnvm.support.target import parse_target
    from nnvm.tune.routed_runner import RoutedRunner
    from nnvm.tune.task import Task

    device = parse_target("cuda -emulate")
    task = Task("k", "w", device, "", "", [], [], 0, 1, 0, "t")
    with pytest.raises(Exception, match="no cycle model"):
        RoutedRunner.check([task])


def test_cli_error_for_an_unknown_device(model_files):
    proc = subprocess.run(
        [sys.executable, "-m", "nnvm.tools.tune", str(model_files / "convs.onnx"), "--log",
         str(model_files / "x.jsonl"), "--device", "nosuch"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "unknown target 'nosuch'" in proc.stderr
    assert not (model_files / "x.jsonl").exists()
