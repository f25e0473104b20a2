"""What the ONNX importer supports: each op type of the default domain, the opsets it imports
at, and how (a converter of its own, or the ONNX function body the standard defines it by,
inlined into ops that have converters)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import onnx

from nnvm.frontend.onnx.registry import CONVERTERS


@dataclass(frozen=True)
class OpSupport:
    op_type: str
    how: str  # "converter" or "function"
    first_opset: int
    last_opset: int

    @property
    def opsets(self) -> str:
        return f"{self.first_opset}-{self.last_opset}"


@cache
def _schemas() -> dict[str, list[onnx.defs.OpSchema]]:
    table: dict[str, list[onnx.defs.OpSchema]] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain in ("", "ai.onnx"):
            table.setdefault(schema.name, []).append(schema)
    for versions in table.values():
        versions.sort(key=lambda s: s.since_version)
    return table


def _last_opset(versions: list[onnx.defs.OpSchema]) -> int:
    """The newest opset the op exists at (a deprecated op ends the version before)."""
    newest = versions[-1]
    if newest.deprecated:
        return newest.since_version - 1
    return onnx.defs.onnx_opset_version()


#: Ops whose function bodies never import: sequences (SequenceMap) and random numbers
#: (Bernoulli's RandomUniformLike) are not graph-dialect values.
_SEQUENCE_BODIES = frozenset({"SequenceMap", "Bernoulli"})


def _has_body(schema: onnx.defs.OpSchema) -> bool:
    """The op has a function body whose ops the importer has (a fixed body is checked op by
    op; a context-dependent one depends on the call's types and is taken on trust)."""
    if schema.name in _SEQUENCE_BODIES:
        return False
    if schema.has_context_dependent_function:
        return True
    if not schema.has_function:
        return False
    fn = onnx.FunctionProto()
    fn.ParseFromString(schema.get_function_with_opset_version(schema.function_opset_versions[-1]))
    known = set(CONVERTERS) | set(_schemas_with_body())
    return all(n.op_type in known for n in fn.node)


@cache
def _schemas_with_body() -> frozenset[str]:
    """Op types with a context-dependent body (taken on trust when they appear in a body)."""
    return frozenset(
        name
        for name, versions in _schemas().items()
        if any(s.has_context_dependent_function for s in versions) and name not in _SEQUENCE_BODIES
    )


@cache
def op_support() -> tuple[OpSupport, ...]:
    """Every supported op type, sorted by name."""
    rows: list[OpSupport] = []
    for op_type, versions in _schemas().items():
        last = _last_opset(versions)
        conv = CONVERTERS.get(op_type)
        if conv is not None:
            first = max(conv.since, versions[0].since_version)
            rows.append(OpSupport(op_type, "converter", first, last))
            continue
        with_body = [s for s in versions if _has_body(s)]
        if with_body:
            rows.append(OpSupport(op_type, "function", with_body[0].since_version, last))
    return tuple(sorted(rows, key=lambda r: r.op_type))


def table() -> str:
    """`nnvm-translate --list-onnx-ops`: one line per op type."""
    rows = op_support()
    width = max(len(r.op_type) for r in rows)
    lines = [f"{'op':<{width}}  {'opsets':<7}  how"]
    lines += [f"{r.op_type:<{width}}  {r.opsets:<7}  {r.how}" for r in rows]
    counts = {how: sum(r.how == how for r in rows) for how in ("converter", "function")}
    lines.append(
        f"{len(rows)} op types: {counts['converter']} by converters, {counts['function']} "
        "through their ONNX function bodies (inlined; the body's ops must import)"
    )
    return "\n".join(lines) + "\n"
