"""What toyacc contributes to nnvm: its dialect and pass (an xDSL Universe) and its target (an
nnvm Plugin), both named in pyproject.toml's entry points."""

from __future__ import annotations

from xdsl.universe import Universe

from nnvm.support.plugins import PLUGIN_API_VERSION, Plugin


def _dialect():
    from toyacc.dialect import TOYACC

    return TOYACC


def _offload():
    from toyacc.offload import ToyAccOffload

    return ToyAccOffload


def _target():
    from toyacc.target import ToyAccTarget

    return ToyAccTarget


UNIVERSE = Universe(all_dialects={"toyacc": _dialect}, all_passes={"toyacc-offload": _offload})
PLUGIN = Plugin(api_version=PLUGIN_API_VERSION, targets={"toyacc": _target})
