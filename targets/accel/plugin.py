"""The accel package's registration, through the same entry point an out-of-tree plugin uses
(`nnvm.plugins` in pyproject.toml): its dialect (nnvm-opt parses and prints accel IR), its
passes (accel-partition, accel-lower-layers, lower-te-to-accel, accel-insert-tokens, accel-apply-tuning-log) and its
target (`build(..., devices=["accel"])`)."""

from __future__ import annotations

from nnvm.support.plugins import PLUGIN_API_VERSION, Plugin


def _dialect():
    from nnvm.targets.accel.dialect import ACCEL

    return ACCEL


def _partition():
    from nnvm.targets.accel.partition import AccelPartition

    return AccelPartition


def _lower_layers():
    from nnvm.targets.accel.lower_layers import AccelLowerLayers

    return AccelLowerLayers


def _lower_te():
    from nnvm.targets.accel.te_plan import LowerTEToAccel

    return LowerTEToAccel


def _insert_tokens():
    from nnvm.targets.accel.tokens import AccelInsertTokens

    return AccelInsertTokens


def _apply_tuning_log():
    from nnvm.targets.accel.tuned_layers import AccelApplyTuningLog

    return AccelApplyTuningLog


def _target():
    from nnvm.targets.accel.target import AccelTarget

    return AccelTarget


PLUGIN = Plugin(
    api_version=PLUGIN_API_VERSION,
    dialects={"accel": _dialect},
    passes={
        "accel-partition": _partition,
        "accel-lower-layers": _lower_layers,
        "lower-te-to-accel": _lower_te,
        "accel-insert-tokens": _insert_tokens,
        "accel-apply-tuning-log": _apply_tuning_log,
    },
    targets={"accel": _target},
)
