"""Schedules as IR: how a te kernel is computed, as a list of primitives in a `te.schedule`.

    te.schedule {
      te.split "C" j by 8 -> (j.o, j.i)
      te.reorder "C" (i, j.o, k, j.i)
      te.vectorize "C" j.i
      te.parallel "C" i
      te.compute_at "pad" at "C" j.o
    }

Stages are named by their `te.compute` tag (placeholders by `arg<k>`), axes by name; each
primitive that makes new axes or stages names them explicitly, so a schedule is readable,
diffable and can be written by hand or by a tuner. The primitives are applied in order by
`lower-te-to-loops` (semantics and diagnostics: stages.py). `bind` is for GPU targets (the
CPU rejects it); `tensorize` names one of the target's tensor intrinsics (intrinsics.py; the
CPU has the byte dot product `dot_u8i8`, the accelerator its GEMM block `gemm`); `set_scope`
and `double_buffer` place a stage in a target's on-chip memory (the accelerator's inp, wgt and
acc buffers) and give it two alternating buffers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IntegerAttr, StringAttr, i64
from xdsl.ir import Attribute, Block, Region
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoTerminator

_IDENT = re.compile(r"[A-Za-z_][\w$.]*")


def _strs(values: Sequence[str]) -> ArrayAttr[StringAttr]:
    return ArrayAttr([StringAttr(v) for v in values])


def _ints(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def _name_text(name: str) -> str:
    return name if _IDENT.fullmatch(name) else '"' + name.replace('"', '\\"') + '"'


def _parse_name(parser: Parser, what: str = "an axis name") -> str:
    name = parser.parse_optional_identifier_or_str_literal()
    if name is None:
        parser.raise_error(f"expected {what}")
    assert name is not None
    return name


def _parse_names(parser: Parser) -> list[str]:
    return parser.parse_comma_separated_list(parser.Delimiter.PAREN, lambda: _parse_name(parser))


def _print_names(names: Sequence[str]) -> str:
    return "(" + ", ".join(_name_text(n) for n in names) + ")"


class Primitive(IRDLOperation):
    """A schedule primitive: applies to the stage named `stage`."""

    stage = prop_def(StringAttr)

    @property
    def stage_name(self) -> str:
        return self.stage.data

    def _print_stage(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.stage_name)

    def _finish_print(self, printer: Printer) -> None:
        if self.attributes:
            printer.print_op_attributes(self.attributes)

    @classmethod
    def _finish_parse(cls, parser: Parser, props: dict[str, Attribute]) -> IRDLOperation:
        attrs = parser.parse_optional_attr_dict()
        op = cls.create(properties=props)
        op.attributes.update(attrs)
        return op


# ----------------------------------------------------------------------------------------------
# Loop structure: split, tile, fuse, reorder
# ----------------------------------------------------------------------------------------------


@irdl_op_definition
class SplitOp(Primitive):
    """`te.split "S" i by 4 -> (i.o, i.i)`: i = i.o * 4 + i.i (a tail where 4 does not divide);
    `nparts 4` fixes the outer extent instead."""

    name = "te.split"
    axis = prop_def(StringAttr)
    factor = opt_prop_def(IntegerAttr.constr(type=i64))
    nparts = opt_prop_def(IntegerAttr.constr(type=i64))
    outer = prop_def(StringAttr)
    inner = prop_def(StringAttr)

    @staticmethod
    def make(
        stage: str, axis: str, factor: int | None = None, nparts: int | None = None,
        outer: str | None = None, inner: str | None = None,
    ) -> SplitOp:  # fmt: skip
        props: dict[str, Attribute] = {
            "stage": StringAttr(stage),
            "axis": StringAttr(axis),
            "outer": StringAttr(outer or f"{axis}.o"),
            "inner": StringAttr(inner or f"{axis}.i"),
        }
        if factor is not None:
            props["factor"] = IntegerAttr(factor, i64)
        if nparts is not None:
            props["nparts"] = IntegerAttr(nparts, i64)
        return SplitOp.create(properties=props)

    @property
    def factor_value(self) -> int | None:
        return None if self.factor is None else self.factor.value.data  # type: ignore[attr-defined]

    @property
    def nparts_value(self) -> int | None:
        return None if self.nparts is None else self.nparts.value.data  # type: ignore[attr-defined]

    def print(self, printer: Printer) -> None:
        self._print_stage(printer)
        printer.print_string(" " + _name_text(self.axis.data))
        if self.factor is not None:
            printer.print_string(f" by {self.factor_value}")
        if self.nparts is not None:
            printer.print_string(f" nparts {self.nparts_value}")
        printer.print_string(" -> " + _print_names([self.outer.data, self.inner.data]))
        self._finish_print(printer)

    @classmethod
    def parse(cls, parser: Parser) -> IRDLOperation:
        stage = parser.parse_str_literal(" (a stage name)")
        axis = _parse_name(parser)
        props: dict[str, Attribute] = {"stage": StringAttr(stage), "axis": StringAttr(axis)}
        if parser.parse_optional_keyword("by") is not None:
            props["factor"] = IntegerAttr(parser.parse_integer(allow_boolean=False), i64)
        elif parser.parse_optional_keyword("nparts") is not None:
            props["nparts"] = IntegerAttr(parser.parse_integer(allow_boolean=False), i64)
        else:
            parser.raise_error("expected 'by <factor>' or 'nparts <count>'")
        outer, inner = f"{axis}.o", f"{axis}.i"
        if parser.parse_optional_punctuation("->") is not None:
            names = _parse_names(parser)
            if len(names) != 2:
                parser.raise_error("te.split names two axes: -> (outer, inner)")
            outer, inner = names
        props["outer"], props["inner"] = StringAttr(outer), StringAttr(inner)
        return cls._finish_parse(parser, props)


@irdl_op_definition
class TileOp(Primitive):
    """`te.tile "S" (i, j) by (4, 8) -> (i.o, j.o, i.i, j.i)`: two splits and a reorder."""

    name = "te.tile"
    axes = prop_def(ArrayAttr[StringAttr])
    factors = prop_def(DenseArrayBase)
    new_axes = prop_def(ArrayAttr[StringAttr])

    @staticmethod
    def make(
        stage: str,
        axes: Sequence[str],
        factors: Sequence[int],
        results: Sequence[str] | None = None,
    ) -> TileOp:
        if results is None:
            results = [f"{a}.o" for a in axes] + [f"{a}.i" for a in axes]
        return TileOp.create(
            properties={
                "stage": StringAttr(stage),
                "axes": _strs(axes),
                "factors": _ints(factors),
                "new_axes": _strs(results),
            }
        )

    def print(self, printer: Printer) -> None:
        self._print_stage(printer)
        axes = [a.data for a in self.axes.data]
        factors = [int(f) for f in self.factors.get_values()]
        printer.print_string(" " + _print_names(axes))
        printer.print_string(" by (" + ", ".join(str(f) for f in factors) + ")")
        printer.print_string(" -> " + _print_names([r.data for r in self.new_axes.data]))
        self._finish_print(printer)

    @classmethod
    def parse(cls, parser: Parser) -> IRDLOperation:
        stage = parser.parse_str_literal(" (a stage name)")
        axes = _parse_names(parser)
        parser.parse_keyword("by")
        factors = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, lambda: parser.parse_integer(allow_boolean=False)
        )
        results = [f"{a}.o" for a in axes] + [f"{a}.i" for a in axes]
        if parser.parse_optional_punctuation("->") is not None:
            results = _parse_names(parser)
        props = {
            "stage": StringAttr(stage),
            "axes": _strs(axes),
            "factors": _ints(factors),
            "new_axes": _strs(results),
        }
        return cls._finish_parse(parser, props)


@irdl_op_definition
class FuseOp(Primitive):
    """`te.fuse "S" (i, j) -> ij`: adjacent loops become one (i = ij / |j|, j = ij % |j|)."""

    name = "te.fuse"
    axes = prop_def(ArrayAttr[StringAttr])
    fused = prop_def(StringAttr)

    @staticmethod
    def make(stage: str, axes: Sequence[str], fused: str | None = None) -> FuseOp:
        return FuseOp.create(
            properties={
                "stage": StringAttr(stage),
                "axes": _strs(axes),
                "fused": StringAttr(fused or ".".join(axes) + ".fused"),
            }
        )

    def print(self, printer: Printer) -> None:
        self._print_stage(printer)
        printer.print_string(" " + _print_names([a.data for a in self.axes.data]))
        printer.print_string(" -> " + _name_text(self.fused.data))
        self._finish_print(printer)

    @classmethod
    def parse(cls, parser: Parser) -> IRDLOperation:
        stage = parser.parse_str_literal(" (a stage name)")
        axes = _parse_names(parser)
        fused = ".".join(axes) + ".fused"
        if parser.parse_optional_punctuation("->") is not None:
            fused = _parse_name(parser)
        props = {"stage": StringAttr(stage), "axes": _strs(axes), "fused": StringAttr(fused)}
        return cls._finish_parse(parser, props)


@irdl_op_definition
class ReorderOp(Primitive):
    """`te.reorder "S" (j, i)`: the named loops take these relative positions."""

    name = "te.reorder"
    axes = prop_def(ArrayAttr[StringAttr])

    @staticmethod
    def make(stage: str, axes: Sequence[str]) -> ReorderOp:
        return ReorderOp.create(properties={"stage": StringAttr(stage), "axes": _strs(axes)})

    def print(self, printer: Printer) -> None:
        self._print_stage(printer)
        printer.print_string(" " + _print_names([a.data for a in self.axes.data]))
        self._finish_print(printer)

    @classmethod
    def parse(cls, parser: Parser) -> IRDLOperation:
        stage = parser.parse_str_literal(" (a stage name)")
        axes = _parse_names(parser)
        return cls._finish_parse(parser, {"stage": StringAttr(stage), "axes": _strs(axes)})


# ----------------------------------------------------------------------------------------------
# Loop annotations: vectorize, parallel, unroll, bind, tensorize
# ----------------------------------------------------------------------------------------------


class _AxisPrimitive(Primitive):
    axis = prop_def(StringAttr)

    @classmethod
    def make(cls, stage: str, axis: str) -> IRDLOperation:
        return cls.create(properties={"stage": StringAttr(stage), "axis": StringAttr(axis)})

    def print(self, printer: Printer) -> None:
        self._print_stage(printer)
        printer.print_string(" " + _name_text(self.axis.data))
        self._finish_print(printer)

    @classmethod
    def parse(cls, parser: Parser) -> IRDLOperation:
        stage = parser.parse_str_literal(" (a stage name)")
        axis = _parse_name(parser)
        return cls._finish_parse(parser, {"stage": StringAttr(stage), "axis": StringAttr(axis)})


@irdl_op_definition
class VectorizeOp(_AxisPrimitive):
    """`te.vectorize "S" j.i`: the innermost loop becomes vector ops (a tail where needed)."""

    name = "te.vectorize"


@irdl_op_definition
class ParallelOp(_AxisPrimitive):
    """`te.parallel "S" i`: iterations of this loop run on the thread pool."""

    name = "te.parallel"


@irdl_op_definition
class UnrollOp(_AxisPrimitive):
    """`te.unroll "S" i.i`: the loop is replaced by copies of its body."""

    name = "te.unroll"


class _AxisTargetPrimitive(Primitive):
    """`te.<op> "S" axis KEYWORD "target"`: an axis handed to something of the target (a GPU
    thread index, an accelerator intrinsic), named by the string property TARGET."""

    axis = prop_def(StringAttr)
    KEYWORD: ClassVar[str]
    TARGET: ClassVar[str]

    @property
    def target_name(self) -> str:
        return self.properties[self.TARGET].data  # type: ignore[attr-defined]

    @classmethod
    def make(cls, stage: str, axis: str, target: str) -> IRDLOperation:
        props = {
            "stage": StringAttr(stage),
            "axis": StringAttr(axis),
            cls.TARGET: StringAttr(target),
        }
        return cls.create(properties=props)  # type: ignore[arg-type]

    def print(self, printer: Printer) -> None:
        self._print_stage(printer)
        printer.print_string(f" {_name_text(self.axis.data)} {self.KEYWORD} ")
        printer.print_string_literal(self.target_name)
        self._finish_print(printer)

    @classmethod
    def parse(cls, parser: Parser) -> IRDLOperation:
        stage = parser.parse_str_literal(" (a stage name)")
        axis = _parse_name(parser)
        parser.parse_keyword(cls.KEYWORD)
        target = parser.parse_str_literal()
        props = {
            "stage": StringAttr(stage),
            "axis": StringAttr(axis),
            cls.TARGET: StringAttr(target),
        }
        return cls._finish_parse(parser, props)


@irdl_op_definition
class BindOp(_AxisTargetPrimitive):
    """`te.bind "S" i to "blockIdx.x"`: map a loop onto a GPU thread index (GPU targets)."""

    name = "te.bind"
    thread = prop_def(StringAttr)
    KEYWORD: ClassVar[str] = "to"
    TARGET: ClassVar[str] = "thread"


@irdl_op_definition
class TensorizeOp(_AxisTargetPrimitive):
    """`te.tensorize "S" j.i with "dot_u8i8"`: replace the loops under an axis (it and the
    ones inside it) by one of the target's tensor intrinsics, after checking that they compute
    the intrinsic's pattern over its operand layouts (lowering/te_to_loops/tensorize.py)."""

    name = "te.tensorize"
    intrinsic = prop_def(StringAttr)
    KEYWORD: ClassVar[str] = "with"
    TARGET: ClassVar[str] = "intrinsic"


@irdl_op_definition
class PrefetchOp(Primitive):
    """`te.prefetch "S" "arg1" at k.i by 64`: at the start of each iteration of the loop
    k.i, ask the CPU to fetch what S will read of tensor arg1 `offset` iterations later (the
    element its read touches with the inner loops at 0), so a stream from memory arrives
    before it is needed (TVM's `s[S].prefetch(tensor, axis, offset)`). A hint: it changes no
    result, and an address past the tensor is harmless.

    `te.prefetch "S" "arg1" at k.i by 64 spread i.o`: the iterations of an outer loop i.o
    (extent T) share the fetch instead of each repeating it: iteration (i, k) fetches what is
    read at k.i = offset + (i * extent(k.i) + k) / T. With i.o the row tiles that reread one
    depth block of a matmul's weights and `offset` that block's depth, the next block arrives
    at a steady pace while all T tiles compute, not during the first tile alone."""

    name = "te.prefetch"
    tensor = prop_def(StringAttr)
    axis = prop_def(StringAttr)
    offset = prop_def(IntegerAttr.constr(type=i64))
    spread = opt_prop_def(StringAttr)

    @staticmethod
    def make(
        stage: str, tensor: str, axis: str, offset: int, spread: str | None = None
    ) -> PrefetchOp:
        props: dict[str, Attribute] = {
            "stage": StringAttr(stage),
            "tensor": StringAttr(tensor),
            "axis": StringAttr(axis),
            "offset": IntegerAttr(offset, i64),
        }
        if spread is not None:
            props["spread"] = StringAttr(spread)
        return PrefetchOp.create(properties=props)

    def print(self, printer: Printer) -> None:
        self._print_stage(printer)
        printer.print_string(" ")
        printer.print_string_literal(self.tensor.data)
        printer.print_string(f" at {_name_text(self.axis.data)} by {self.offset.value.data}")
        if self.spread is not None:
            printer.print_string(f" spread {_name_text(self.spread.data)}")
        self._finish_print(printer)

    @classmethod
    def parse(cls, parser: Parser) -> IRDLOperation:
        stage = parser.parse_str_literal(" (a stage name)")
        tensor = parser.parse_str_literal(" (the tensor to prefetch)")
        parser.parse_keyword("at")
        axis = _parse_name(parser)
        parser.parse_keyword("by")
        offset = parser.parse_integer(allow_boolean=False, allow_negative=False)
        props: dict[str, Attribute] = {
            "stage": StringAttr(stage),
            "tensor": StringAttr(tensor),
            "axis": StringAttr(axis),
            "offset": IntegerAttr(offset, i64),
        }
        if parser.parse_optional_keyword("spread") is not None:
            props["spread"] = StringAttr(_parse_name(parser, "the loop that shares the fetch"))
        return cls._finish_parse(parser, props)


# ----------------------------------------------------------------------------------------------
# Placement: compute_at, compute_inline, compute_root
# ----------------------------------------------------------------------------------------------


@irdl_op_definition
class ComputeAtOp(Primitive):
    """`te.compute_at "P" at "C" j.o`: compute the part of P that one iteration of C's loop
    j.o reads, inside that loop, into a small local buffer."""

    name = "te.compute_at"
    target = prop_def(StringAttr)
    axis = prop_def(StringAttr)

    @staticmethod
    def make(stage: str, target: str, axis: str) -> ComputeAtOp:
        return ComputeAtOp.create(
            properties={
                "stage": StringAttr(stage),
                "target": StringAttr(target),
                "axis": StringAttr(axis),
            }
        )

    def print(self, printer: Printer) -> None:
        self._print_stage(printer)
        printer.print_string(" at ")
        printer.print_string_literal(self.target.data)
        printer.print_string(" " + _name_text(self.axis.data))
        self._finish_print(printer)

    @classmethod
    def parse(cls, parser: Parser) -> IRDLOperation:
        stage = parser.parse_str_literal(" (a stage name)")
        parser.parse_keyword("at")
        target = parser.parse_str_literal(" (the consumer stage)")
        axis = _parse_name(parser)
        props = {"stage": StringAttr(stage), "target": StringAttr(target), "axis": StringAttr(axis)}
        return cls._finish_parse(parser, props)


class _StagePrimitive(Primitive):
    @classmethod
    def make(cls, stage: str) -> IRDLOperation:
        return cls.create(properties={"stage": StringAttr(stage)})

    def print(self, printer: Printer) -> None:
        self._print_stage(printer)
        self._finish_print(printer)

    @classmethod
    def parse(cls, parser: Parser) -> IRDLOperation:
        stage = parser.parse_str_literal(" (a stage name)")
        return cls._finish_parse(parser, {"stage": StringAttr(stage)})


@irdl_op_definition
class ComputeInlineOp(_StagePrimitive):
    """`te.compute_inline "P"`: P's formula is substituted into its readers (no buffer)."""

    name = "te.compute_inline"


@irdl_op_definition
class ComputeRootOp(_StagePrimitive):
    """`te.compute_root "P"`: P gets its own loop nest and a whole buffer (the default)."""

    name = "te.compute_root"


@irdl_op_definition
class SetScopeOp(Primitive):
    """`te.set_scope "S" "acc"`: S's buffer lives in one of the target's memory scopes (an
    accelerator's on-chip buffer), as TVM's `s[S].set_scope`; a target without that scope
    rejects it (Target.check_schedule)."""

    name = "te.set_scope"
    scope = prop_def(StringAttr)

    @staticmethod
    def make(stage: str, scope: str) -> SetScopeOp:
        return SetScopeOp.create(
            properties={"stage": StringAttr(stage), "scope": StringAttr(scope)}
        )

    @property
    def scope_name(self) -> str:
        return self.scope.data

    def print(self, printer: Printer) -> None:
        self._print_stage(printer)
        printer.print_string(" ")
        printer.print_string_literal(self.scope.data)
        self._finish_print(printer)

    @classmethod
    def parse(cls, parser: Parser) -> IRDLOperation:
        stage = parser.parse_str_literal(" (a stage name)")
        scope = parser.parse_str_literal(" (a memory scope)")
        return cls._finish_parse(parser, {"stage": StringAttr(stage), "scope": StringAttr(scope)})


@irdl_op_definition
class DoubleBufferOp(_StagePrimitive):
    """`te.double_buffer "S"`: S (in an on-chip scope, computed at a loop) gets two buffers
    that alternate between the loop's iterations, so iteration k+1's copy can be filled while
    iteration k's is read (TVM's `s[S].double_buffer()`; on the accelerator, its two virtual
    threads)."""

    name = "te.double_buffer"


# ----------------------------------------------------------------------------------------------
# New stages: cache_write, cache_read, rfactor
# ----------------------------------------------------------------------------------------------


@irdl_op_definition
class CacheWriteOp(Primitive):
    """`te.cache_write "C" -> "C.local"`: C.local computes what C computed (a local buffer,
    e.g. register accumulators once computed at a tile of C); C becomes a copy of it."""

    name = "te.cache_write"
    result = prop_def(StringAttr)

    @staticmethod
    def make(stage: str, result: str | None = None) -> CacheWriteOp:
        return CacheWriteOp.create(
            properties={
                "stage": StringAttr(stage),
                "result": StringAttr(result or f"{stage}.local"),
            }
        )

    def print(self, printer: Printer) -> None:
        self._print_stage(printer)
        printer.print_string(" -> ")
        printer.print_string_literal(self.result.data)
        self._finish_print(printer)

    @classmethod
    def parse(cls, parser: Parser) -> IRDLOperation:
        stage = parser.parse_str_literal(" (a stage name)")
        result = f"{stage}.local"
        if parser.parse_optional_punctuation("->") is not None:
            result = parser.parse_str_literal()
        return cls._finish_parse(parser, {"stage": StringAttr(stage), "result": StringAttr(result)})


@irdl_op_definition
class CacheReadOp(Primitive):
    """`te.cache_read "arg0" for ["C"] -> "A.local"`: the readers read a copy of the tensor,
    which compute_at can place per tile (packing a panel into a local buffer).

    `... -> "B.p" panel 1 by 32` also changes the copy's layout: axis 1 is split by 32, its
    outer part becomes the first axis and its inner part the last, so a 16x96 tensor is copied
    into 3x16x32 panels and a reader's `B[k, j]` becomes `B.p[j // 32, k, j % 32]` (GEMM
    column panels). A factor that does not divide the axis pads the last panel with zeros.

    `... -> "A.shared" scope "shared"` names the memory the copy lives in (a target's
    `memory_scopes`: "shared" a GPU block's workgroup buffer, "local" a thread's private one);
    no scope: wherever the target puts a temporary."""

    name = "te.cache_read"
    readers = prop_def(ArrayAttr[StringAttr])
    result = prop_def(StringAttr)
    panel_axis = opt_prop_def(IntegerAttr.constr(type=i64))
    panel_factor = opt_prop_def(IntegerAttr.constr(type=i64))
    scope = opt_prop_def(StringAttr)

    @staticmethod
    def make(
        stage: str, readers: Sequence[str], result: str | None = None,
        panel: tuple[int, int] | None = None, scope: str | None = None,
    ) -> CacheReadOp:  # fmt: skip
        props: dict[str, Attribute] = {
            "stage": StringAttr(stage),
            "readers": _strs(readers),
            "result": StringAttr(result or f"{stage}.local"),
        }
        if panel is not None:
            props["panel_axis"] = IntegerAttr(panel[0], i64)
            props["panel_factor"] = IntegerAttr(panel[1], i64)
        if scope is not None:
            props["scope"] = StringAttr(scope)
        return CacheReadOp.create(properties=props)

    @property
    def scope_name(self) -> str | None:
        """The memory scope the copy lives in, or None (the target's default)."""
        return None if self.scope is None else self.scope.data

    @property
    def panel(self) -> tuple[int, int] | None:
        """(axis, factor) of the packed layout, or None for a copy in the same layout."""
        if self.panel_axis is None or self.panel_factor is None:
            return None
        return (
            self.panel_axis.value.data,  # type: ignore[attr-defined]
            self.panel_factor.value.data,  # type: ignore[attr-defined]
        )

    def print(self, printer: Printer) -> None:
        self._print_stage(printer)
        printer.print_string(" for [")
        printer.print_list([r.data for r in self.readers.data], printer.print_string_literal)
        printer.print_string("] -> ")
        printer.print_string_literal(self.result.data)
        if self.scope is not None:
            printer.print_string(" scope ")
            printer.print_string_literal(self.scope.data)
        panel = self.panel
        if panel is not None:
            printer.print_string(f" panel {panel[0]} by {panel[1]}")
        self._finish_print(printer)

    @classmethod
    def parse(cls, parser: Parser) -> IRDLOperation:
        stage = parser.parse_str_literal(" (a stage name)")
        parser.parse_keyword("for")
        readers = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, parser.parse_str_literal
        )
        result = f"{stage}.local"
        if parser.parse_optional_punctuation("->") is not None:
            result = parser.parse_str_literal()
        props: dict[str, Attribute] = {
            "stage": StringAttr(stage),
            "readers": _strs(readers),
            "result": StringAttr(result),
        }
        if parser.parse_optional_keyword("scope") is not None:
            props["scope"] = StringAttr(parser.parse_str_literal(" (a memory scope)"))
        if parser.parse_optional_keyword("panel") is not None:
            axis = parser.parse_integer(allow_boolean=False, context_msg=" (the panel axis)")
            parser.parse_keyword("by")
            factor = parser.parse_integer(allow_boolean=False, context_msg=" (the panel width)")
            props["panel_axis"] = IntegerAttr(axis, i64)
            props["panel_factor"] = IntegerAttr(factor, i64)
        return cls._finish_parse(parser, props)


@irdl_op_definition
class RFactorOp(Primitive):
    """`te.rfactor "C" k.i -> "C.rf"`: C.rf reduces over every reduction axis but k.i, which
    becomes its innermost data axis (so it can be vectorized); C sums C.rf over k.i."""

    name = "te.rfactor"
    axis = prop_def(StringAttr)
    result = prop_def(StringAttr)

    @staticmethod
    def make(stage: str, axis: str, result: str | None = None) -> RFactorOp:
        return RFactorOp.create(
            properties={
                "stage": StringAttr(stage),
                "axis": StringAttr(axis),
                "result": StringAttr(result or f"{stage}.rf"),
            }
        )

    def print(self, printer: Printer) -> None:
        self._print_stage(printer)
        printer.print_string(" " + _name_text(self.axis.data) + " -> ")
        printer.print_string_literal(self.result.data)
        self._finish_print(printer)

    @classmethod
    def parse(cls, parser: Parser) -> IRDLOperation:
        stage = parser.parse_str_literal(" (a stage name)")
        axis = _parse_name(parser)
        result = f"{stage}.rf"
        if parser.parse_optional_punctuation("->") is not None:
            result = parser.parse_str_literal()
        props = {"stage": StringAttr(stage), "axis": StringAttr(axis), "result": StringAttr(result)}
        return cls._finish_parse(parser, props)


# ----------------------------------------------------------------------------------------------
# The container
# ----------------------------------------------------------------------------------------------


@irdl_op_definition
class ScheduleOp(IRDLOperation):
    """`te.schedule { primitives }`: the schedule of the te kernel it sits in."""

    name = "te.schedule"
    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    def __init__(self, primitives: Sequence[IRDLOperation] = ()):
        block = Block()
        block.add_ops(primitives)
        super().__init__(regions=[Region(block)])

    @property
    def primitives(self) -> list[Primitive]:
        if not self.body.blocks:
            return []
        return [op for op in self.body.block.ops if isinstance(op, Primitive)]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)
        if self.attributes:
            printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> ScheduleOp:
        region = parser.parse_region()
        if not region.blocks:
            region.add_block(Block())
        attrs = parser.parse_optional_attr_dict()
        op = cls.create(regions=[region])
        op.attributes.update(attrs)
        return op


SCHEDULE_OPS = [
    ScheduleOp,
    SplitOp,
    TileOp,
    FuseOp,
    ReorderOp,
    VectorizeOp,
    ParallelOp,
    UnrollOp,
    BindOp,
    TensorizeOp,
    PrefetchOp,
    ComputeAtOp,
    ComputeInlineOp,
    ComputeRootOp,
    SetScopeOp,
    DoubleBufferOp,
    CacheWriteOp,
    CacheReadOp,
    RFactorOp,
]
