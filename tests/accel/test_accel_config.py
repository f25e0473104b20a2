"""The accelerator configuration: VTA's defaults, JSON loading, and errors naming the key and
the file for unknown keys, wrong types, non-power-of-two blocks and buffers that cannot hold one
entry or disagree."""

from __future__ import annotations

import json

import pytest

from nnvm.support.errors import UserError
from nnvm.targets.accel.config import DEFAULT_CONFIG, AccelConfig, load_config


def test_defaults_are_vta_like():
    cfg = DEFAULT_CONFIG
    assert (cfg.batch, cfg.block_in, cfg.block_out) == (1, 16, 16)
    assert {b: cfg.depth(b) for b in ("uop", "inp", "wgt", "acc", "out")} == {
        "uop": 8192,
        "inp": 2048,
        "wgt": 1024,
        "acc": 2048,
        "out": 2048,
    }
    assert cfg.entry_bytes("acc") == 64


def test_json_round_trip(tmp_path):
    path = tmp_path / "accel.json"
    path.write_text(
        json.dumps({"BLOCK_OUT": 32, "ACC_BUFF_BYTES": 256 * 1024, "OUT_BUFF_BYTES": 64 * 1024})
    )
    cfg = load_config(path)
    assert cfg.block_out == 32 and cfg.depth("acc") == 2048 and cfg.source == str(path)
    path.write_text(cfg.to_json())
    assert load_config(path) == cfg


@pytest.mark.parametrize(
    "data, message",
    [
        ({"BLOCK": 16}, "unknown accel config key 'BLOCK'"),
        ({"BLOCK_IN": "16"}, "key BLOCK_IN: expected an integer, got str '16'"),
        ({"BLOCK_IN": 16.0}, "key BLOCK_IN: expected an integer, got float"),
        ({"CLOCK_MHZ": True}, "key CLOCK_MHZ: expected an integer, got bool"),
        ({"BLOCK_OUT": 24}, "key BLOCK_OUT: must be a power of two, got 24"),
        ({"BATCH": 0}, "key BATCH: must be positive"),
        (
            {"WGT_BUFF_BYTES": 128},
            r"key WGT_BUFF_BYTES: 128 bytes is smaller than one wgt entry \(256 bytes\)",
        ),
        (
            {"INP_BUFF_BYTES": 1000},
            "key INP_BUFF_BYTES: 1000 bytes is not a whole number of 16-byte inp entries",
        ),
        (
            {"OUT_BUFF_BYTES": 16 * 1024},
            "key OUT_BUFF_BYTES: the out buffer mirrors the acc buffer",
        ),
        ({"ACC_WIDTH": 16}, "key ACC_WIDTH: the simulator implements 32-bit values only"),
        ({"SHARED_DMA": 2}, "key SHARED_DMA: is 0 or 1, got 2"),
    ],
)
def test_bad_configs_name_key_and_file(tmp_path, data, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(UserError, match=message) as err:
        load_config(path)
    assert str(path) in err.value.message


def test_bad_files(tmp_path):
    with pytest.raises(UserError, match="cannot read accel config"):
        load_config(tmp_path / "missing.json")
    (tmp_path / "broken.json").write_text('{"BATCH": 1,,}')
    with pytest.raises(UserError, match=r"broken.json:1:13: bad JSON"):
        load_config(tmp_path / "broken.json")
    (tmp_path / "list.json").write_text("[1]")
    with pytest.raises(UserError, match="is a JSON object, got list"):
        load_config(tmp_path / "list.json")


def test_dataclass_validates_too():
    with pytest.raises(UserError, match="BLOCK_IN: must be a power of two"):
        AccelConfig(block_in=12)
