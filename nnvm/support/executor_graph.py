"""The executor graph as data: the ordered kernel calls (each with its device), where every
argument lives, the storage plan. Entry points are generated from it; runtimes and tools read it."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from nnvm.support.errors import UserError

FORMAT_VERSION = 1


@dataclass
class TensorInfo:
    shape: list[int]
    dtype: str

    @property
    def nbytes(self) -> int:
        import numpy as np

        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass
class Ref:
    """Where a kernel argument lives: kind is input|param|constant|arena|output, with the
    input/output index, the param or constant name, or the arena byte offset."""

    kind: str
    index: int = 0
    name: str = ""
    offset: int = 0


@dataclass
class Node:
    kernel: str
    inputs: list[Ref]
    outputs: list[Ref]
    input_info: list[TensorInfo]
    output_info: list[TensorInfo]
    device: str = ""
    """The device target the kernel runs on ('' for the host)."""


@dataclass
class Copy:
    """A graph output that no kernel writes (a returned input, param or duplicate)."""

    source: Ref
    output: int


@dataclass
class ExecutorGraph:
    inputs: list[dict[str, Any]]
    outputs: list[TensorInfo]
    params: list[dict[str, Any]]
    constants: dict[str, dict[str, Any]]
    nodes: list[Node]
    copies: list[Copy]
    arena_bytes: int
    naive_bytes: int
    kernels: list[str]
    model_hash: str = ""
    format_version: int = FORMAT_VERSION
    target: str = ""
    devices: list[str] = field(default_factory=list)
    """Device targets' strings; a node's `device` is one of them ('' is the host)."""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @staticmethod
    def from_json(text: str) -> ExecutorGraph:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise UserError(f"graph JSON is malformed: {err}") from None
        if data.get("format_version") != FORMAT_VERSION:
            raise UserError(
                f"graph format version {data.get('format_version')} is not supported "
                f"(this nnvm reads version {FORMAT_VERSION})"
            )

        def ref(d: dict[str, Any]) -> Ref:
            return Ref(**d)

        def info(d: dict[str, Any]) -> TensorInfo:
            return TensorInfo(**d)

        try:
            return ExecutorGraph(
                inputs=data["inputs"],
                outputs=[info(o) for o in data["outputs"]],
                params=data["params"],
                constants=data["constants"],
                nodes=[
                    Node(
                        n["kernel"],
                        [ref(r) for r in n["inputs"]],
                        [ref(r) for r in n["outputs"]],
                        [info(i) for i in n["input_info"]],
                        [info(i) for i in n["output_info"]],
                        n.get("device", ""),
                    )
                    for n in data["nodes"]
                ],
                copies=[Copy(ref(c["source"]), c["output"]) for c in data["copies"]],
                arena_bytes=data["arena_bytes"],
                naive_bytes=data["naive_bytes"],
                kernels=data["kernels"],
                model_hash=data.get("model_hash", ""),
                format_version=data["format_version"],
                target=data.get("target", ""),
                devices=list(data.get("devices", [])),
                extra=data.get("extra", {}),
            )
        except (KeyError, TypeError) as err:
            raise UserError(f"graph JSON lacks or mistypes a field: {err}") from None


def model_hash(*parts: bytes | str) -> str:
    """A short content hash tying library, graph and params of one build together."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
    return h.hexdigest()[:32]
