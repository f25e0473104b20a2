"""The accelerator's te path (te_layer.py's kernel and schedule, lower_te.py, tokens.py) against
the numpy int8 reference and the hand-written generator it replaced (conv2d_program.plan_layer):
the same outputs bit for bit, and cycles within 2% of it (the cycle model is
deterministic); the schedule is IR that prints, parses back and lowers to the same program;
tokens recomputed from read/write ranges run the hand-written stream as fast as its own."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_accel_layers import MOBILENETV2_CONVS, RESNET18_CONVS, _operands

from nnvm.registry import make_context
from nnvm.support.diagnostics import DiagnosticError, parse_module
from nnvm.targets.accel.config import DEFAULT_CONFIG
from nnvm.targets.accel.conv2d_program import (
    conv2d_program,
    plan_layer,
)
from nnvm.targets.accel.reference import conv2d_int8
from nnvm.targets.accel.simulator import simulate
from nnvm.targets.accel.te_layer import scheduled_kernel
from nnvm.targets.accel.te_plan import plan_layer_te, plan_of_kernel
from nnvm.targets.accel.tiling import Conv2dLayer, Tiling, choose_tiling
from nnvm.targets.accel.tokens import insert_tokens

FAST = [
    (32, 32, 8, 3, 1, 1),
    (20, 24, 13, 3, 2, 1),
    (64, 128, 28, 1, 2, 0),
    (512, 1000, 1, 1, 1, 0),
]
"""Small layers: padding, odd sizes and partial tiles, stride-2 1x1, a dense."""


def _run(shape, vt, planner, shift=None, relu=True, seed=0):
    c, o, h, k, s, p = shape
    x, w, bias = _operands(seed, c, o, h, k)
    shifts = np.arange(o) % 5 + 6 if shift is None else shift
    layer = Conv2dLayer(1, c, h, h, o, k, k, s, p)
    program = conv2d_program(
        DEFAULT_CONFIG, layer, x, w, bias, shifts, relu, vt, round_half_up=True, planner=planner
    )
    report = simulate(DEFAULT_CONFIG, program.insns, program.dram)
    want = conv2d_int8(x, w, bias, s, p, shifts, relu, round_half_up=True)
    np.testing.assert_array_equal(program.output(), want)
    return program, report


def _compare(shape, vt, shift=None):
    _, hand = _run(shape, vt, plan_layer, shift)
    program, te = _run(shape, vt, plan_layer_te, shift)
    assert te.gemm_cycles == hand.gemm_cycles
    assert te.total_cycles <= 1.02 * hand.total_cycles, (
        shape,
        vt,
        te.total_cycles,
        hand.total_cycles,
    )
    return program


@pytest.mark.parametrize("vt", [1, 2])
@pytest.mark.parametrize("shape", FAST)
def test_te_path_matches_the_handwritten_program(shape, vt):
    _compare(shape, vt)
    _compare(shape, vt, shift=9)  # one immediate shift for every channel


@pytest.mark.slow
@pytest.mark.parametrize("vt", [1, 2])
@pytest.mark.parametrize("shape", sorted(set(RESNET18_CONVS + MOBILENETV2_CONVS)))
def test_te_path_on_every_resnet18_and_mobilenetv2_conv(shape, vt):
    _compare(shape, vt)


def test_schedule_text_round_trips_to_the_same_program():
    """The default schedule is te IR: printed, parsed back and lowered, it is the program
    accel-lower-layers runs."""
    cfg, layer = DEFAULT_CONFIG, Conv2dLayer(1, 48, 10, 10, 32, 3, 3, 1, 1)
    tiling = choose_tiling(cfg, layer, 2)
    text = str(scheduled_kernel(cfg, layer, tiling, 2, True))
    assert 'te.tensorize "conv" bn with "gemm"' in text
    assert 'te.double_buffer "inp.local"' in text
    module = parse_module(make_context(), f"builtin.module {{\n{text}\n}}", "<kernel>")
    fn = next(op for op in module.walk() if op.name == "func.func")
    parsed = plan_of_kernel(cfg, layer, fn, tiling, 2)
    direct = plan_layer_te(cfg, layer, True, 2)
    assert parsed.insns == direct.insns and parsed.uops == direct.uops


def test_tokens_from_ranges_run_the_handwritten_stream():
    """The hand-written stream with its tokens dropped and recomputed: same result, no
    deadlock, no slower."""
    shape = (64, 64, 28, 3, 1, 1)
    for vt in (1, 2):
        program, report = _run(shape, vt, plan_layer)
        bare = [
            replace(i, pop_prev=False, pop_next=False, push_prev=False, push_next=False)
            for i in program.insns
        ]
        dram = program.plan.pack(*_packed_operands(shape))
        again = simulate(DEFAULT_CONFIG, insert_tokens(bare, program.plan.uops), dram)
        assert np.array_equal(program.plan.output(dram), program.output())
        assert again.total_cycles <= report.total_cycles * 1.01


def _packed_operands(shape, seed=0):
    c, o, h, k, _, _ = shape
    x, w, bias = _operands(seed, c, o, h, k)
    shifts = np.arange(o) % 5 + 6
    half = np.where(shifts > 0, np.left_shift(1, np.maximum(shifts, 1) - 1), 0)
    return x, w, (bias.astype(np.int64) + half).astype(np.int32), shifts


def test_without_tokens_the_stream_races():
    """The tokens matter: with none, a double-buffered stream's loads overwrite inputs the GEMM
    has not read yet in the cycle model, and the result is wrong (or the run fails)."""
    shape = (64, 64, 28, 3, 1, 1)
    program, _ = _run(shape, 2, plan_layer_te)
    bare = [
        replace(i, pop_prev=False, pop_next=False, push_prev=False, push_next=False)
        for i in program.insns
    ]
    dram = program.plan.pack(*_packed_operands(shape))
    simulate(DEFAULT_CONFIG, bare, dram)
    assert not np.array_equal(program.plan.output(dram), program.output())


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    b=st.integers(1, 3),
    c=st.integers(1, 48),
    o=st.integers(1, 40),
    h=st.integers(1, 9),
    k=st.sampled_from([1, 3]),
    s=st.integers(1, 2),
    data=st.data(),
)
def test_any_tiling_is_exact_or_a_located_error(b, c, o, h, k, s, data):
    """Random layers (batch 1 to 3) and tilings through the te path (tails in every split,
    tiles that do not divide, either loop order, one or two virtual threads): the program
    computes the reference's bits, or the lowering refuses with a located diagnostic, nothing
    else."""
    p = data.draw(st.integers(0, k // 2))
    if (h + 2 * p - k) // s + 1 < 1:
        return
    cfg = DEFAULT_CONFIG
    layer = Conv2dLayer(b, c, h, h, o, k, k, s, p)
    ob, ib = -(-o // 16), -(-c // 16)
    tiling = Tiling(
        data.draw(st.integers(1, ob)),
        data.draw(st.integers(1, ib)),
        data.draw(st.integers(1, layer.out_height)),
        data.draw(st.integers(1, layer.out_width)),
        data.draw(st.sampled_from(["weights", "inputs"])),
    )
    vt = data.draw(st.integers(1, 2))
    fn = scheduled_kernel(cfg, layer, tiling, vt, False, None)
    try:
        plan = plan_of_kernel(cfg, layer, fn, tiling, vt)
    except DiagnosticError as err:
        assert err.op is not None and err.message.startswith(("lower-te-to-accel", "te."))
        event(f"refused: {err.message[:60]}")
        return
    event("simulated")
    x, w, bias = _operands(0, c, o, h, k)
    x = np.concatenate([x] + [np.roll(x, j, axis=1) for j in range(1, b)])  # b distinct images
    shifts = np.arange(o) % 5 + 6
    dram = plan.pack(x, w, bias, shifts)
    simulate(cfg, plan.insns, dram)
    np.testing.assert_array_equal(plan.output(dram), conv2d_int8(x, w, bias, s, p, shifts, False))
