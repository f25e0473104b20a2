"""Blocked convs whose rows cannot fill a register tile (the 7x7 maps at the end of ImageNet
networks, Inception's 17x17) tile several output rows at once (targets/cpu/schedules/conv2d.py):
2 rows x 7 columns x 2 channel blocks fill AVX-512's 28 accumulators where one row filled 14.
Rows, columns and channel blocks may leave shorter tail tiles; each kernel here is checked against the
reference executor through the tuner's runner (which compiles, runs and compares it)."""

from __future__ import annotations

import re

import pytest
from tuned_kernels import assert_compute_the_kernel, task_of

from nnvm.tune.space import TaskSpace

TARGET = "llvm"  # the host: the rows asserted are AVX-512's (28 accumulators of 16 lanes)


def _kernel(cin: int, cout: int, k, size: tuple[int, int], stride: int = 1) -> str:
    kh, kw = (k, k) if isinstance(k, int) else k
    h, w = size
    ph, pw = kh // 2, kw // 2
    oh, ow = (h + 2 * ph - kh) // stride + 1, (w + 2 * pw - kw) // stride + 1
    x = f"tensor<1x{cin // 16}x{h}x{w}x16xf32>"
    wt = f"tensor<{cout // 16}x{cin // 16}x{kh}x{kw}x16x16xf32>"
    b = f"tensor<1x{cout // 16}x1x1x16xf32>"
    y = f"tensor<1x{cout // 16}x{oh}x{ow}x16xf32>"
    pad = f"[{ph}, {pw}, {ph}, {pw}]"
    return f"""builtin.module {{
  func.func @conv(%0: {x}, %1: {wt}, %2: {b}) -> {y} attributes {{nnvm.pattern = "out-elemwise-fusable"}} {{
    %3 = nnvm.conv2d %0, %1 {{strides = [{stride}, {stride}], padding = {pad}, data_layout = "NCHW16c", kernel_layout = "OIHW16i16o"}} : ({x}, {wt}) -> {y}
    %4 = nnvm.add %3, %2 : ({y}, {b}) -> {y}
    %5 = nnvm.relu %4 : ({y}) -> {y}
    func.return %5 : {y}
  }}
}}"""


def _task(text: str):
    return task_of(text, "conv", TARGET)


CASES = [
    # (cin, cout, kernel, (h, w), stride): rows per tile, channel blocks per tile (AVX-512)
    pytest.param(64, 32, 1, (7, 7), 1, 2, 2, id="1x1-7x7"),  # ResNet's last stage, 1x1
    pytest.param(32, 32, 3, (7, 7), 1, 2, 2, id="3x3-7x7"),  # its 3x3 (padded)
    pytest.param(32, 32, 3, (5, 5), 1, 2, 2, id="3x3-5x5"),  # a tail tile of 1 row
    pytest.param(32, 32, 3, (14, 14), 2, 2, 2, id="3x3-s2-to-7x7"),  # strided into 7 columns
    pytest.param(32, 48, 3, (7, 7), 1, 1, 3, id="three-blocks-7x7"),  # 3 blocks: one tile
    pytest.param(32, 80, 1, (13, 13), 1, 1, 2, id="odd-blocks-13x13"),  # 5 (SqueezeNet's 63)
    pytest.param(32, 144, 1, (7, 7), 1, 2, 2, id="odd-blocks-7x7"),  # 9: 2, ..., then a tail
    pytest.param(16, 48, 1, (56, 56), 1, 1, 3, id="three-blocks-56-wide"),  # 3 x 8, no tail
    pytest.param(32, 32, 3, (17, 17), 1, 2, 2, id="3x3-17x17"),  # tails in rows and columns
    pytest.param(32, 32, (1, 7), (17, 17), 1, 2, 2, id="1x7-17x17"),  # Inception's 1x7
    pytest.param(32, 32, (7, 1), (17, 17), 1, 2, 2, id="7x1-17x17"),  # and 7x1
    pytest.param(32, 32, 1, (14, 14), 1, 1, 2, id="14-wide-one-row"),  # a row fills the tile
]


@pytest.mark.parametrize(("cin", "cout", "k", "size", "stride", "rows", "blocks"), CASES)
def test_short_rows_stack_and_compute_the_conv(cin, cout, k, size, stride, rows, blocks) -> None:
    task = _task(_kernel(cin, cout, k, size, stride))
    space = TaskSpace(task)
    default = space.default()
    if task.target.vector_bits < 512:
        rows = default.config.get("conv.rows", 1)  # other register budgets: numerics only
    assert default.config.get("conv.rows", 1) == rows
    if task.target.vector_bits == 512:  # two channel blocks a tile (an odd count: a tail), or
        assert default.config["conv.blocks"] == blocks  # three where three divide, two not
    if rows > 1:
        assert re.search(rf'te\.split "relu" k by {rows} ', default.schedule), default.schedule
        assert 'te.unroll "conv2d" oh' in default.schedule
    candidates = [default]
    if rows > 1:  # one row per tile (the tuner's other choice) computes the same
        one_row = space.make({**default.config, "conv.rows": 1, "conv.whole_image": False})
        assert one_row is not None and 'te.unroll "conv2d" oh' not in one_row.schedule
        candidates.append(one_row)
    if (cout // 16) % default.config["conv.blocks"]:  # and one block a tile (no tail)
        one_block = space.make({**default.config, "conv.blocks": 1})
        assert one_block is not None
        candidates.append(one_block)
    assert_compute_the_kernel(task, space, candidates)


# -- row groups ---------------------------------------------------------------------------
# A dense NCHWc conv whose input does not stay in L2 runs its parallel loop in row groups
# (targets/cpu/schedules/conv2d.py `_row_group`): each group's input rows are read once by all
# its channel-block tiles instead of the whole input once a tile. The choice follows the bytes
# the conv moves, so a conv whose input fits keeps one group; every grouping computes the conv
# (checked against the reference executor through the tuner's runner).

GROUP_CASES = [
    # (cin, cout, kernel, (h, w), stride, grouped by default)
    pytest.param(256, 512, 1, (56, 56), 2, True, id="resnet-downsample-3MB-input"),
    pytest.param(256, 128, 1, (56, 56), 1, True, id="1x1-3MB-input"),
    pytest.param(128, 128, 3, (56, 56), 2, True, id="3x3-s2-1.8MB-input"),
    pytest.param(64, 64, 3, (56, 56), 1, False, id="3x3-input-fits"),
    pytest.param(512, 512, 3, (7, 7), 1, False, id="weights-9MB-input-small"),
]


@pytest.mark.parametrize(("cin", "cout", "k", "size", "stride", "grouped"), GROUP_CASES)
def test_row_groups_follow_the_bytes_moved(cin, cout, k, size, stride, grouped) -> None:
    task = _task(_kernel(cin, cout, k, size, stride))
    knob = task.knobs["conv.row_group"]
    default = task.default_config["conv.row_group"]
    assert (default < max(knob.candidates)) == grouped, (default, knob.candidates)
    schedule = TaskSpace(task).default().schedule
    assert bool(re.search(r'te\.split "relu" k by \d+ -> \(k\.g, k\.r\)', schedule)) == grouped


def test_every_row_grouping_computes_the_conv() -> None:
    """Every row grouping the knob offers for an 18-row output (stride 2, row tiles of two
    rows), one group included, against the reference."""
    task = _task(_kernel(64, 96, 3, (35, 35), 2))
    space = TaskSpace(task)
    groups = task.knobs["conv.row_group"].candidates
    assert len(groups) >= 3
    candidates = [space.make({**task.default_config, "conv.row_group": g}) for g in groups]
    assert all(c is not None for c in candidates)
    assert_compute_the_kernel(task, space, candidates)


# -- column strips ------------------------------------------------------------------------
# A conv whose input rows are too wide for L2 (S3D's temporal 7x1 conv over T x (H * W)) runs
# its parallel loop in strips of columns (`_column_strip`): a strip's input, every row of it,
# stays in L2 while each row and channel-block tile of the strip uses it. Only where the
# weights stay in L2 beside the strip: otherwise each strip would read them again.

STRIP_CASES = [
    # (cin, cout, kernel, (h, w), strips by default)
    pytest.param(64, 32, (7, 1), (8, 2048), True, id="7x1-over-2048-wide-rows"),
    pytest.param(256, 256, (3, 1), (8, 2048), False, id="weights-768KB"),
    pytest.param(64, 64, 3, (56, 56), False, id="rows-fit"),
]


@pytest.mark.parametrize(("cin", "cout", "k", "size", "strips"), STRIP_CASES)
def test_wide_rows_run_in_column_strips(cin, cout, k, size, strips) -> None:
    task = _task(_kernel(cin, cout, k, size))
    strip = task.default_config["conv.col_strip"]
    assert (strip > 0) == strips, task.default_config
    schedule = TaskSpace(task).default().schedule
    split = re.search(r'te\.split "relu" l\.o by (\d+) -> \(l\.s, l\.t\)', schedule)
    assert bool(split) == strips
    if strips:  # a strip's input (4 blocks x 8 rows x its columns) and the weights fit
        assert "conv.row_group" not in task.default_config
        assert int(split.group(1)) * 14 * 4 * 8 * 64 + 229_376 <= 1024 * 1024


def test_every_column_strip_computes_the_conv() -> None:
    """The strips the knob offers (none, half, the default, twice it; the last strip a tail)
    against the reference."""
    task = _task(_kernel(64, 32, (7, 1), (6, 1500)))
    space = TaskSpace(task)
    strips = task.knobs["conv.col_strip"].candidates
    assert 0 in strips and len(strips) == 4
    candidates = [space.make({**task.default_config, "conv.col_strip": s}) for s in strips]
    assert all(c is not None for c in candidates)
    assert_compute_the_kernel(task, space, candidates)
