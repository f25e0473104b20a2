"""Pass statistics (MLIR's `-mlir-pass-statistics`): counters a pass records about what it did,
kept beside the module and printed by `nnvm-opt --mlir-pass-statistics`."""

from __future__ import annotations

from dataclasses import dataclass
from weakref import WeakKeyDictionary

from xdsl.dialects.builtin import ModuleOp


@dataclass
class Statistic:
    value: int | float
    description: str


_STATS: WeakKeyDictionary[ModuleOp, dict[str, dict[str, Statistic]]] = WeakKeyDictionary()


def record_statistic(
    module: ModuleOp, pass_name: str, name: str, value: int | float, description: str
) -> None:
    """Add `value` to the named counter of `pass_name` for this module."""
    per_pass = _STATS.setdefault(module, {}).setdefault(pass_name, {})
    stat = per_pass.get(name)
    if stat is None:
        per_pass[name] = Statistic(value, description)
    else:
        stat.value += value


def statistics_of(module: ModuleOp) -> dict[str, dict[str, Statistic]]:
    return _STATS.get(module, {})


def format_statistics(stats: dict[str, dict[str, Statistic]]) -> str:
    lines = [
        "===" + "-" * 73 + "===",
        " " * 26 + "... Pass statistics report ...",
        "===" + "-" * 73 + "===",
    ]
    for pass_name, counters in stats.items():
        lines.append(f"'{pass_name}'")
        for name, stat in counters.items():
            lines.append(f"  (S) {stat.value} {name} - {stat.description}")
    return "\n".join(lines) + "\n"
