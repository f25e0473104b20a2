"""The accelerator as a device of build(): quantized (requant="shift") graphs run their int8
conv2d / dense layers on the simulated accelerator and everything else on the CPU, with outputs
equal bit for bit to the CPU's build of the same graph; target options, exported libraries,
refusals and damaged kernels."""

from __future__ import annotations

import json

import numpy as np
import pytest

import nnvm
from nnvm.compiler import build
from nnvm.frontend import from_onnx
from nnvm.quantize import quantize
from nnvm.runtime import graph_runtime
from nnvm.support.errors import UserError
from nnvm.support.target import parse_target
from nnvm.targets.accel.kernel_blob import decode_plan
from nnvm.testing import onnx_models


def _run(graph, lib, params, feed):
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**params)
    m.run(**feed)
    return m, m.get_output(0).copy()


def test_offloaded_layers_match_the_cpu_bit_for_bit(quantized) -> None:
    model, qm, qp = quantized
    host = build(qm, params=qp)
    graph, lib, params = build(qm, params=qp, devices=["accel"])
    on_accel = [n.kernel for n in graph.nodes if n.device]
    # the three convs and the middle dense; the last dense's int32 sums are the graph's result
    assert len(on_accel) == 4, on_accel
    assert graph.devices == ["accel -virtual-threads=2"]
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**params)
    for seed in range(3):
        feed = onnx_models.random_inputs(model, seed=seed)
        _, want = _run(*host, feed)
        m.run(**feed)
        np.testing.assert_array_equal(m.get_output(0), want)
    summary = m.device_runtime("accel").summary()
    assert summary["launches"] == 4 * 3
    assert summary["cycles"] > summary["gemm_cycles"] > 0
    assert 0 < summary["gemm_utilization"] < 1
    assert summary["bytes_moved"]["wgt"] > 0


def test_one_virtual_thread_and_an_exported_library(quantized, tmp_path) -> None:
    model, qm, qp = quantized
    feed = onnx_models.random_inputs(model, seed=7)
    graph, lib, params = build(qm, params=qp, devices=["accel -virtual-threads=1"])
    _, want = _run(graph, lib, params, feed)
    lib.export_library(str(tmp_path / "model.so"))
    (tmp_path / "graph.json").write_text(graph.to_json())
    loaded = nnvm.runtime.load_module(str(tmp_path / "model.so"))
    m, got = _run(str(tmp_path / "graph.json"), loaded, params, feed)
    np.testing.assert_array_equal(got, want)
    with pytest.raises(UserError, match="runs nothing on 'cuda'"):
        m.device_runtime("cuda")


def test_a_multiplier_requantized_graph_stays_on_the_host(quantized) -> None:
    """Only the shift requantizer is the accelerator's arithmetic; the fixed-point multiplier's
    chain matches nothing, so nothing is placed there."""
    model = quantized[0]
    module, params = from_onnx(model)
    cal = [onnx_models.random_inputs(model, seed=50)]
    qm, qp, _ = quantize(module, params, cal, requant="multiplier", skip_first=False)
    graph, _, _ = build(qm, params=qp, devices=["accel"])
    assert graph.devices == [] and not any(n.device for n in graph.nodes)


def test_layers_too_big_for_a_small_config_stay_on_the_host(quantized, tmp_path) -> None:
    model, qm, qp = quantized
    cfg = tmp_path / "tiny.json"
    cfg.write_text(
        json.dumps({"INP_BUFF_BYTES": 256, "OUT_BUFF_BYTES": 8192, "ACC_BUFF_BYTES": 32768})
    )
    graph, lib, params = build(qm, params=qp, devices=[f"accel -config={cfg}"])
    placed = [n for n in graph.nodes if n.device]
    assert 0 < len(placed) < 4, (
        "the 3x3 convs need 18 inp entries, 16 fit; the 1x1 conv and the dense fit"
    )
    assert all(f"-config={cfg}" in n.device for n in placed)
    feed = onnx_models.random_inputs(model, seed=3)
    _, want = _run(*build(qm, params=qp), feed)
    _, got = _run(graph, lib, params, feed)
    np.testing.assert_array_equal(got, want)


def test_target_options(tmp_path) -> None:
    assert parse_target("accel").description == "accel -virtual-threads=2"
    assert parse_target("accel -virtual-threads=1").virtual_threads == 1
    with pytest.raises(UserError, match="-virtual-threads is 1 or 2"):
        parse_target("accel -virtual-threads=4")
    with pytest.raises(UserError, match="unknown accel target option '-blocks=8'"):
        parse_target("accel -blocks=8")
    with pytest.raises(UserError, match="cannot read accel config"):
        parse_target(f"accel -config={tmp_path / 'none.json'}")
    cfg = tmp_path / "c.json"
    cfg.write_text('{"DMA_BYTES_PER_CYCLE": 16}')
    t = parse_target(f"accel -config={cfg}")
    assert t.accel_config().dma_bytes_per_cycle == 16
    assert parse_target(t.description) == t  # a library's device string parses back
    cfg.write_text('{"DMA_BYTES_PER_CYCLE": 32}')
    with pytest.raises(UserError, match="changed since the library was built"):
        parse_target(t.description)
    cfg.write_text('{"BLOCK_IN": 12}')
    with pytest.raises(UserError, match="BLOCK_IN: must be a power of two"):
        build_for = parse_target(f"accel -config={cfg}")
        build_for.accel_config()


def test_damaged_kernels_are_user_errors(quantized) -> None:
    _, qm, qp = quantized
    graph, lib, _ = build(qm, params=qp, devices=["accel"])
    name = next(n.kernel for n in graph.nodes if n.device)
    blob = lib.blob(name)
    plan, inputs = decode_plan(blob, name)
    assert inputs in (4, 5) and plan.insns
    with pytest.raises(UserError, match="bad magic"):
        decode_plan(b"\x00" * 64, name)
    with pytest.raises(UserError, match="bytes, the header promises"):
        decode_plan(blob[:-4], name)
    header_end = blob.index(b"}") + 1
    with pytest.raises(UserError, match="bad header"):
        decode_plan(blob[:12] + b"{" * (header_end - 12) + blob[header_end:], name)
