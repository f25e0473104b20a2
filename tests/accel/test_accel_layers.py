"""The simulator against the numpy int8 reference on every distinct conv2d and dense shape of
ResNet-18 and MobileNetV2 (batch 1, 224x224): int32 accumulation, bias, shift, clip. The
depthwise convs of MobileNetV2 are refused (they stay on the CPU, as on VTA)."""

from __future__ import annotations

import numpy as np
import pytest

from nnvm.support.errors import UserError
from nnvm.targets.accel.config import config_from_dict
from nnvm.targets.accel.conv2d_program import conv2d_program, refusal
from nnvm.targets.accel.reference import conv2d_int8, dense_int8
from nnvm.targets.accel.run_layer import run_conv2d, run_dense
from nnvm.targets.accel.tiling import Conv2dLayer

# (in channels, out channels, input size, kernel, stride, padding)
RESNET18_CONVS = [
    (3, 64, 224, 7, 2, 3),
    (64, 64, 56, 3, 1, 1),
    (64, 128, 56, 3, 2, 1),
    (128, 128, 28, 3, 1, 1),
    (64, 128, 56, 1, 2, 0),
    (128, 256, 28, 3, 2, 1),
    (256, 256, 14, 3, 1, 1),
    (128, 256, 28, 1, 2, 0),
    (256, 512, 14, 3, 2, 1),
    (512, 512, 7, 3, 1, 1),
    (256, 512, 14, 1, 2, 0),
]
RESNET18_DENSE = [(512, 1000)]
MOBILENETV2_CONVS = [  # the stem and every pointwise (1x1) conv; depthwise ones are refused
    (3, 32, 224, 3, 2, 1),
    (32, 16, 112, 1, 1, 0),
    (16, 96, 112, 1, 1, 0),
    (96, 24, 56, 1, 1, 0),
    (24, 144, 56, 1, 1, 0),
    (144, 24, 56, 1, 1, 0),
    (144, 32, 28, 1, 1, 0),
    (32, 192, 28, 1, 1, 0),
    (192, 32, 28, 1, 1, 0),
    (192, 64, 14, 1, 1, 0),
    (64, 384, 14, 1, 1, 0),
    (384, 64, 14, 1, 1, 0),
    (384, 96, 14, 1, 1, 0),
    (96, 576, 14, 1, 1, 0),
    (576, 96, 14, 1, 1, 0),
    (576, 160, 7, 1, 1, 0),
    (160, 960, 7, 1, 1, 0),
    (960, 160, 7, 1, 1, 0),
    (960, 320, 7, 1, 1, 0),
    (320, 1280, 7, 1, 1, 0),
]
MOBILENETV2_DENSE = [(1280, 1000)]
MOBILENETV2_DEPTHWISE = [
    (32, 112, 1),
    (96, 112, 2),
    (144, 56, 1),
    (144, 56, 2),
    (192, 28, 1),
    (192, 28, 2),
    (384, 14, 1),
    (576, 14, 1),
    (576, 14, 2),
    (960, 7, 1),
]


def _operands(seed, c, o, h, k):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (1, c, h, h), dtype=np.int8)
    w = rng.integers(-128, 128, (o, c, k, k), dtype=np.int8)
    bias = rng.integers(-(1 << 16), 1 << 16, o).astype(np.int32)
    return x, w, bias


@pytest.mark.parametrize("shape", RESNET18_CONVS + MOBILENETV2_CONVS, ids=str)
def test_conv2d_bit_exact(shape):
    c, o, h, k, s, p = shape
    x, w, bias = _operands(sum(shape), c, o, h, k)
    shift = 9 if c * k * k > 256 else 6
    relu = (c + o) % 2 == 0
    vt = 2 if o % 32 == 0 else 1
    y, report = run_conv2d(x, w, bias, s, p, shift, relu, vt)
    np.testing.assert_array_equal(y, conv2d_int8(x, w, bias, s, p, shift, relu))
    oh = (h + 2 * p - k) // s + 1
    blocks_ops = oh * oh * -(-o // 16) * -(-c // 16) * k * k
    assert report.gemm_cycles == blocks_ops
    assert report.total_cycles >= report.gemm_cycles
    assert report.bytes_moved["out"] == oh * oh * -(-o // 16) * 16
    assert not report.leftover_tokens  # every token pushed was popped


@pytest.mark.parametrize("features", RESNET18_DENSE + MOBILENETV2_DENSE)
@pytest.mark.parametrize("vt", [1, 2])
def test_dense_bit_exact(features, vt):
    k, m = features
    rng = np.random.default_rng(k)
    x = rng.integers(-128, 128, (1, k), dtype=np.int8)
    w = rng.integers(-128, 128, (m, k), dtype=np.int8)
    bias = rng.integers(-1000, 1000, m).astype(np.int32)
    y, report = run_dense(x, w, bias, shift=10, virtual_threads=vt)
    np.testing.assert_array_equal(y, dense_int8(x, w, bias, 10))
    assert report.gemm_cycles == -(-m // 16) * (k // 16)


@pytest.mark.parametrize("shape", MOBILENETV2_DEPTHWISE)
def test_depthwise_stays_on_the_cpu(shape):
    c, h, s = shape
    layer = Conv2dLayer(1, c, h, h, c, 3, 3, s, 1, groups=c)
    x = np.zeros((1, c, h, h), np.int8)
    with pytest.raises(UserError, match="depthwise conv2d stay on the CPU"):
        conv2d_program(config_from_dict({}), layer, x, np.zeros((c, c, 3, 3), np.int8))


def test_accumulator_wraps_like_int32():
    # 2 * 512 * 3 * 3 products of -128 * -128 reach 75 M; with a large bias the int32 sum wraps
    x = np.full((1, 512, 3, 3), -128, np.int8)
    w = np.full((16, 512, 3, 3), -128, np.int8)
    bias = np.full(16, 2**31 - 1000, np.int64).astype(np.int32)
    y, _ = run_conv2d(x, w, bias, 1, 0, shift=20)
    np.testing.assert_array_equal(y, conv2d_int8(x, w, bias, 1, 0, 20))
    assert y.min() < 0  # the wrapped sum is negative


def test_layer_too_big_for_the_buffers_names_the_buffer():
    cfg = config_from_dict({"INP_BUFF_BYTES": 256, "UOP_BUFF_BYTES": 256})
    layer = Conv2dLayer(1, 16, 8, 8, 16, 7, 7, 1, 3)
    x, w = np.zeros((1, 16, 8, 8), np.int8), np.zeros((16, 16, 7, 7), np.int8)
    with pytest.raises(
        UserError, match=r"needs 49 inp entries .* the inp buffer holds 16 \(256 bytes\)"
    ):
        conv2d_program(cfg, layer, x, w)


def test_round_half_up_matches_the_quantizer_shift():
    x, w, bias = _operands(3, 32, 16, 6, 3)
    y, _ = run_conv2d(x, w, bias, 1, 1, shift=7, round_half_up=True)
    want = conv2d_int8(x, w, bias, 1, 1, 7, round_half_up=True)
    np.testing.assert_array_equal(y, want)
    assert (want != conv2d_int8(x, w, bias, 1, 1, 7)).any()


def test_refusal_says_why():
    cfg = config_from_dict({})
    assert refusal(cfg, Conv2dLayer(1, 64, 56, 56, 64, 3, 3, 1, 1)) is None
    assert "depthwise" in refusal(cfg, Conv2dLayer(1, 32, 8, 8, 32, 3, 3, 1, 1, groups=32))
    assert "exceeds the LOAD pad fields" in refusal(cfg, Conv2dLayer(1, 16, 8, 8, 16, 3, 3, 1, 16))
    small = config_from_dict({"INP_BUFF_BYTES": 256, "UOP_BUFF_BYTES": 256})
    assert "the inp buffer holds 16" in refusal(small, Conv2dLayer(1, 16, 8, 8, 16, 7, 7, 1, 3))


@pytest.mark.parametrize("vt", [1, 2])
def test_per_channel_shifts(vt):
    # nnvm.quantize's shift requantizer: one shift per output channel, rounding half up
    x, w, bias = _operands(5, 48, 40, 9, 3)
    shifts = np.random.default_rng(1).integers(0, 14, 40)
    y, _ = run_conv2d(x, w, bias, 2, 1, shifts, relu=False, virtual_threads=vt, round_half_up=True)
    np.testing.assert_array_equal(y, conv2d_int8(x, w, bias, 2, 1, shifts, round_half_up=True))


def test_bad_shift():
    x, w, _ = _operands(0, 16, 16, 4, 1)
    with pytest.raises(UserError, match="requantization shifts are integers in 0..31"):
        run_conv2d(x, w, shift=np.array([40] * 16))


@pytest.mark.parametrize(
    "config",
    [
        {"BATCH": 2, "BLOCK_IN": 32, "BLOCK_OUT": 16},
        {"BLOCK_IN": 8, "BLOCK_OUT": 32, "ACC_BUFF_BYTES": 64 * 1024, "OUT_BUFF_BYTES": 16 * 1024},
    ],
)
@pytest.mark.parametrize("vt", [1, 2])
def test_other_core_shapes(config, vt):
    cfg = config_from_dict(config)
    rng = np.random.default_rng(7)
    x = rng.integers(
        -128, 128, (3, 40, 10, 10), dtype=np.int8
    )  # batch and channels not whole blocks
    w = rng.integers(-128, 128, (24, 40, 3, 3), dtype=np.int8)
    bias = rng.integers(-5000, 5000, 24).astype(np.int32)
    y, report = run_conv2d(x, w, bias, 1, 1, 8, True, vt, cfg)
    np.testing.assert_array_equal(y, conv2d_int8(x, w, bias, 1, 1, 8, True))
    blocks_ops = -(-3 // cfg.batch) * 100 * -(-24 // cfg.block_out) * -(-40 // cfg.block_in) * 9
    assert report.gemm_cycles == blocks_ops
