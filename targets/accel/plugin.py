"""The accel package's registration, through the same entry point an out-of-tree plugin uses
(`nnvm.plugins` in pyproject.toml): its dialect, so nnvm-opt (and any tool built on the
registry) parses and prints accel programs. Placement (a Target) is not registered yet: the
accelerator's runtime binding into build() is the next step of issue 16."""

from __future__ import annotations

from nnvm.support.plugins import PLUGIN_API_VERSION, Plugin


def _dialect():
    from nnvm.targets.accel.dialect import ACCEL

    return ACCEL


PLUGIN = Plugin(api_version=PLUGIN_API_VERSION, dialects={"accel": _dialect})
