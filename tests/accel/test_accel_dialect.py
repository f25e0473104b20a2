"""The accel dialect: a generated layer program printed as an accel.program parses back to the
same instructions and micro-ops; malformed programs are located UserErrors."""

from __future__ import annotations

import numpy as np
import pytest

from nnvm.support.errors import UserError
from nnvm.targets.accel.config import DEFAULT_CONFIG
from nnvm.targets.accel.conv2d_program import conv2d_program
from nnvm.targets.accel.isa import decode_uops
from nnvm.targets.accel.program_ir import parse_program, program_to_ir
from nnvm.targets.accel.tiling import Conv2dLayer

LOAD = 'accel.dma_load {buffer = "inp", sram_base = 0 : i64, dram_base = 0 : i64, size = array<i64: 1, 1>, x_stride = 1 : i64, pad = array<i64: 0, 0, 0, 0>}'


@pytest.mark.parametrize("vt", [1, 2])
@pytest.mark.parametrize(
    "layer", [Conv2dLayer(1, 48, 9, 9, 40, 3, 3, 2, 1), Conv2dLayer.dense(1, 64, 32)]
)
def test_layer_program_round_trips_through_text(layer, vt):
    x = np.zeros((layer.batch, layer.in_channels, layer.height, layer.width), np.int8)
    w = np.zeros((layer.out_channels, layer.in_channels, layer.kernel_h, layer.kernel_w), np.int8)
    program = conv2d_program(DEFAULT_CONFIG, layer, x, w, shift=4, virtual_threads=vt)
    uops = decode_uops(program.region("uop"))
    module = program_to_ir(program.insns, uops)
    module.verify()
    assert parse_program(str(module)) == (program.insns, uops)


@pytest.mark.parametrize(
    "body, message",
    [
        (LOAD.replace('"inp"', '"sram"'), "unknown buffer 'sram'"),
        (
            'accel.alu {op = "div", uops = array<i64: 0, 1>, loops = array<i64: 1, 1>, dst = array<i64: 0, 0>, src = array<i64: 0, 0>}',
            "unknown op 'div'",
        ),
        ('accel.token_push {queue = "load->compute"}', "follows no instruction"),
        ('accel.finish\n accel.token_pop {queue = "store->compute"}', "precedes no instruction"),
        ('accel.token_pop {queue = "x->y"}', "unknown queue 'x->y'"),
        (
            f'{LOAD}\n accel.token_push {{queue = "compute->store"}}',
            "runs on the load module; it cannot use queue 'compute->store'",
        ),
        (
            LOAD.replace("pad = array<i64: 0, 0, 0, 0>", "pad = array<i64: 0, 0, 0, 16>"),
            "x_pad_after = 16 is out of range",
        ),
    ],
)
def test_bad_programs(body, message):
    with pytest.raises(UserError, match=message):
        parse_program(f"accel.program {{\n {body}\n}}")
