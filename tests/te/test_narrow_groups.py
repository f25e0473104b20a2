"""Groups narrower than a channel block (RegNetY's 8 channels a group, ResNeXt's 4) run in full
blocks that span several groups: data NCHW16c, kernel OIHW<og>i16o, output lane oc reading
channel ic of its own group in the same input block, lane (oc // og) * og + ic. That index is
a lane pattern (lowering/te_to_loops/index_math.py), and its load takes one of three forms
(vectorize.py `_pattern_load`): one vector shuffled (a constant base: the group's channel
unrolled), one vector permuted by the target's vpermps (the channel a loop's value), or a
broadcast of each position, blended (a target without a permute). Each form matches the
reference, with odd widths (tail tiles), stride 2 and groups of 2, 4 and 8."""

from __future__ import annotations

import pytest
from harness import check, parse
from tuned_kernels import conv_bias_relu
from xdsl.dialects import llvm, memref, scf, vector

from nnvm.targets.cpu.target import LANE_PERMUTES, CPUTarget
from nnvm.targets.llvm import host_target


def _conv(channels: int, og: int, size: int, stride: int = 1) -> str:
    """A 3x3 conv over `channels` channels in groups of `og`, NCHW16c, + bias + ReLU."""
    blocks = channels // 16
    oh = (size + 2 - 3) // stride + 1
    attrs = (
        f"strides = [{stride}, {stride}], padding = [1, 1, 1, 1], groups = {channels // og}, "
        f'data_layout = "NCHW16c", kernel_layout = "OIHW{og}i16o"'
    )
    return conv_bias_relu(
        f"tensor<1x{blocks}x{size}x{size}x16xf32>",
        f"tensor<{blocks}x1x3x3x{og}x16xf32>",
        f"tensor<1x{blocks}x1x1x16xf32>",
        f"tensor<1x{blocks}x{oh}x{oh}x16xf32>",
        attrs,
    )


def _ops(module, kind) -> list:
    return [op for op in module.walk() if isinstance(op, kind)]


def _permutes(module) -> list[llvm.CallIntrinsicOp]:
    return [
        op for op in _ops(module, llvm.CallIntrinsicOp) if op.intrin.data in LANE_PERMUTES.values()
    ]


@pytest.mark.parametrize(
    ("og", "size", "stride"),
    [(8, 17, 1), (8, 17, 2), (4, 9, 1), (2, 5, 1)],
    ids=["regnet-17-cols", "regnet-stride-2", "resnext-4", "groups-of-2"],
)
def test_narrow_groups_match_the_reference(og: int, size: int, stride: int) -> None:
    lowered = check(parse(_conv(32, og, size, stride)), atol=1e-4, name="conv")
    # the lanes read their groups' channels as one vector, not lane by lane
    if "avx512f" in host_target().required:
        assert _permutes(lowered), "the group's channel loop does not permute its input block"
    else:
        assert _ops(lowered, vector.ShuffleOp), "no lane pattern load"


def test_without_a_permute_each_position_is_broadcast(monkeypatch) -> None:
    """A target with no lane permute: the two positions a lane pair reads are broadcast and
    blended by one shuffle (RegNet's 8 a group: lanes 0-7 one channel, 8-15 another)."""
    monkeypatch.setattr(CPUTarget, "lane_permutes", lambda self: {})
    lowered = check(parse(_conv(16, 8, 9)), atol=1e-4, name="conv")
    assert not _permutes(lowered)
    masks = [list(op.mask.get_values()) for op in _ops(lowered, vector.ShuffleOp)]
    assert [*range(8), *range(24, 32)] in masks, masks


def test_an_unrolled_channel_shuffles_one_vector() -> None:
    """The group's channel unrolled: each lane's position is a constant, so the input block
    is one vector load and one constant shuffle (no permute, no scalar loads)."""
    schedule = """
      te.reorder "conv2d" (n, ocb, oh, ow, icb, kh, kw, ic, oc)
      te.unroll "conv2d" ic
      te.vectorize "conv2d" oc
    """
    lowered = check(parse(_conv(16, 4, 6)), schedule=schedule, atol=1e-4, name="conv")
    assert not _permutes(lowered)
    masks = {tuple(op.mask.get_values()) for op in _ops(lowered, vector.ShuffleOp)}
    want = {tuple(4 * (k // 4) + c for k in range(16)) for c in range(4)}
    assert want <= masks, masks
    loops = [op for op in _ops(lowered, scf.ForOp) if _ops(op, vector.ShuffleOp)]
    assert loops and not any(_ops(loop, memref.LoadOp) for loop in loops[-1:])
