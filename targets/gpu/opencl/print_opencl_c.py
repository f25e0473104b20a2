"""OpenCL C from a lowered `gpu.module`: each `gpu.func kernel` becomes a `__kernel void` taking
`__global` pointers, its scf/arith/math/memref ops one C statement per SSA value (the OpenCL
compiler folds them); a buffer in memory space 3 is a `__local` array. An op it has no rule for
is a UserError naming the op and the kernel."""

from __future__ import annotations

import math

from xdsl.dialects import gpu, memref, scf
from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    Signedness,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from nnvm.lowering.te_to_gpu.memory_scopes import WORKGROUP_SPACE
from nnvm.support.errors import UserError

PRELUDE = """\
static inline long nnvm_floordiv(long a, long b) {
  long q = a / b;
  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline long nnvm_ceildiv(long a, long b) {
  long q = a / b;
  return (q * b != a && ((a < 0) == (b < 0))) ? q + 1 : q;
}
"""
"""Helpers the arith ops without a C operator use (MLIR's floor / ceil division)."""

BINARY = {
    "arith.addf": "+", "arith.subf": "-", "arith.mulf": "*", "arith.divf": "/",
    "arith.addi": "+", "arith.subi": "-", "arith.muli": "*", "arith.divsi": "/",
    "arith.remsi": "%", "arith.andi": "&", "arith.ori": "|", "arith.xori": "^",
    "arith.shli": "<<", "arith.shrsi": ">>",
}  # fmt: skip
UNSIGNED_BINARY = {"arith.divui": "/", "arith.remui": "%", "arith.shrui": ">>"}
CALLS = {
    "arith.maxnumf": "fmax", "arith.minnumf": "fmin", "arith.maxsi": "max", "arith.minsi": "min",
    "arith.remf": "fmod", "math.exp": "exp", "math.exp2": "exp2", "math.expm1": "expm1",
    "math.log": "log", "math.log2": "log2", "math.log10": "log10", "math.log1p": "log1p",
    "math.sqrt": "sqrt", "math.rsqrt": "rsqrt", "math.cbrt": "cbrt", "math.tanh": "tanh",
    "math.erf": "erf", "math.sin": "sin", "math.cos": "cos", "math.tan": "tan",
    "math.asin": "asin", "math.acos": "acos", "math.atan": "atan", "math.atan2": "atan2",
    "math.sinh": "sinh", "math.cosh": "cosh", "math.asinh": "asinh", "math.acosh": "acosh",
    "math.atanh": "atanh", "math.absf": "fabs", "math.absi": "abs", "math.floor": "floor",
    "math.ceil": "ceil", "math.round": "round", "math.roundeven": "rint", "math.trunc": "trunc",
    "math.powf": "pow", "math.fma": "fma", "math.copysign": "copysign",
    "math.ctpop": "popcount", "math.ctlz": "clz",
}  # fmt: skip
UNSIGNED_CALLS = {"arith.maxui": "max", "arith.minui": "min"}
CMPF = {
    "oeq": "==", "ogt": ">", "oge": ">=", "olt": "<", "ole": "<=", "one": "!=",
    "ueq": "==", "ugt": ">", "uge": ">=", "ult": "<", "ule": "<=", "une": "!=",
}  # fmt: skip
CMPI = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">="}
CMPI_UNSIGNED = {"ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}
CASTS = (
    "arith.sitofp", "arith.fptosi", "arith.extf", "arith.truncf", "arith.extsi", "arith.trunci",
    "arith.index_cast",
)  # fmt: skip
UNSIGNED_CASTS = ("arith.uitofp", "arith.fptoui", "arith.extui", "arith.index_castui")
GPU_INDEX = {
    "gpu.block_id": "get_group_id",
    "gpu.thread_id": "get_local_id",
    "gpu.block_dim": "get_local_size",
    "gpu.grid_dim": "get_num_groups",
    "gpu.global_id": "get_global_id",
}


VECTOR_LANES = (2, 3, 4, 8, 16)
"""The lane counts OpenCL C has vector types for."""


RESERVED = (
    set(CALLS.values())
    | set(UNSIGNED_CALLS.values())
    | set(GPU_INDEX.values())
    | {
        "auto", "bool", "break", "case", "char", "const", "constant", "continue", "default",
        "do", "double", "else", "enum", "extern", "float", "for", "global", "goto", "half",
        "if", "inline", "int", "kernel", "local", "long", "private", "register", "restrict",
        "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
        "uchar", "uint", "ulong", "union", "unsigned", "ushort", "void", "volatile", "while",
        "barrier", "fmax", "fmin", "isnan", "pown", "rint", "select", "min", "max", "abs",
        "NAN", "INFINITY", "true", "false",
    }
)  # fmt: skip
"""Names a value may not take in OpenCL C (a buffer named `exp` would hide the builtin)."""


def c_type(t: Attribute, memory: bool = False) -> str:
    """The OpenCL C type of a scalar or vector (`memory`: as stored in a buffer, where bool is a
    byte). A vector of bools is a `charN` of 0s and 1s (OpenCL C has no bool vectors; such
    values are only read lane by lane)."""
    if isinstance(t, VectorType):
        (lanes,) = t.get_shape()
        if lanes not in VECTOR_LANES:
            raise UserError(f"OpenCL C has no {lanes}-lane vectors ({t})")
        elt = t.element_type
        return f"{'char' if _is_bool(elt) else c_type(elt)}{lanes}"
    if isinstance(t, Float32Type):
        return "float"
    if isinstance(t, Float64Type):
        return "double"
    if isinstance(t, IndexType):
        return "long"
    if isinstance(t, IntegerType):
        width = t.width.data
        if width == 1:
            return "uchar" if memory else "bool"
        names = {8: "char", 16: "short", 32: "int", 64: "long"}
        if width not in names:
            raise UserError(f"OpenCL C has no {width}-bit integers")
        name = names[width]
        return f"u{name}" if t.signedness.data == Signedness.UNSIGNED else name
    raise UserError(f"OpenCL C kernels do not take {t}")


def _is_bool(t: Attribute) -> bool:
    return isinstance(_scalar(t), IntegerType) and _scalar(t).width.data == 1  # type: ignore[attr-defined]


def _scalar(t: Attribute) -> Attribute:
    """A vector's lane type; a scalar's own."""
    return t.element_type if isinstance(t, VectorType) else t  # type: ignore[return-value]


def unsigned_type(t: Attribute) -> str:
    name = c_type(_scalar(t))
    return name if name.startswith("u") or name == "bool" else f"u{name}"


def literal(attr: Attribute, t: Attribute) -> str:
    if isinstance(attr, FloatAttr):
        v = float(attr.value.data)
        suffix = "f" if isinstance(t, Float32Type) else ""
        if math.isnan(v):
            return "NAN"
        if math.isinf(v):
            return "INFINITY" if v > 0 else "(-INFINITY)"
        return f"{v!r}{suffix}"
    if isinstance(attr, IntegerAttr):
        v = int(attr.value.data)
        if isinstance(t, IntegerType) and t.width.data == 1:
            return "true" if v else "false"
        if isinstance(t, IndexType) or (isinstance(t, IntegerType) and t.width.data == 64):
            return f"{v}L" if v != -(2**63) else "(-9223372036854775807L - 1)"
        return str(v)
    raise UserError(f"OpenCL C: no literal for {attr}")


class KernelPrinter:
    """One gpu.func kernel -> its OpenCL C function."""

    def __init__(self, kernel: gpu.FuncOp):
        self.kernel = kernel
        self.lines: list[str] = []
        self.names: dict[SSAValue, str] = {}
        self.taken: set[str] = set()
        self.depth = 1
        self.lane: int | None = None
        """The lane being printed while a vector op is printed lane by lane."""
        self.captured: list[str] = []

    # -- names and emission -------------------------------------------------------------

    def name(self, v: SSAValue) -> str:
        if self.lane is not None and isinstance(v.type, VectorType):
            return f"{self._name(v)}.s{self.lane:x}"
        return self._name(v)

    def _name(self, v: SSAValue) -> str:
        if v not in self.names:
            hint = v.name_hint or ""
            base = "".join(c if c.isalnum() or c == "_" else "_" for c in hint)
            if (
                not base
                or not (base[0].isalpha() or base[0] == "_")
                or base in self.taken
                or base in RESERVED
                or base.startswith(("vload", "vstore", "convert_", "as_", "nnvm_"))
            ):
                base = f"v{len(self.names)}" if not base else f"{base}_{len(self.names)}"
            self.taken.add(base)
            self.names[v] = base
        return self.names[v]

    def line(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def define(self, v: SSAValue, expr: str) -> None:
        if self.lane is not None:
            self.captured.append(expr)
            return
        self.line(f"{c_type(v.type)} {self.name(v)} = {expr};")

    def fail(self, op: Operation, why: str = "") -> UserError:
        what = f"{op.name} ({why})" if why else op.name
        return UserError(
            f"the OpenCL C printer cannot print {what} in kernel {self.kernel.sym_name.data}"
        )

    # -- the kernel ---------------------------------------------------------------------

    def print(self) -> str:
        block = self.kernel.body.block
        params = []
        for arg in block.args:
            t = arg.type
            if not isinstance(t, MemRefType):
                raise UserError(
                    f"kernel {self.kernel.sym_name.data} takes {t}; GPU kernels take buffers"
                )
            params.append(
                f"__global {c_type(t.element_type, memory=True)}* restrict {self.name(arg)}"
            )
        size = self.kernel.attributes.get("gpu.known_block_size") or self.kernel.properties.get(
            "known_block_size"
        )
        attr = ""
        if size is not None:
            x, y, z = (int(d) for d in size.get_values())  # type: ignore[attr-defined]
            attr = f"__attribute__((reqd_work_group_size({x}, {y}, {z}))) "
        self.block(block)
        head = f"__kernel {attr}void {self.kernel.sym_name.data}({', '.join(params)}) {{"
        return "\n".join([head, *self.lines, "}"])

    def block(self, block: Block) -> None:
        for op in block.ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        name = op.name
        if name.startswith("vector."):
            self.vector_op(op)
            return
        vector_result = any(isinstance(r.type, VectorType) for r in op.results)
        lane_type = _scalar(op.results[0].type) if op.results else None
        native = (name in BINARY and not _is_bool(lane_type)) or (  # type: ignore[arg-type]
            name in CALLS and isinstance(lane_type, Float32Type | Float64Type)
        )
        # C operators, float builtins and scf results take vectors as they are; the rest goes
        # lane by lane
        if self.lane is None and vector_result and not native and not op.regions:
            self.lanewise(op)
            return
        r = op.results[0] if op.results else None
        args = [self.name(v) for v in op.operands]
        if name == "arith.constant":
            self.define(r, literal(op.properties["value"], r.type))  # type: ignore[arg-type]
        elif name in BINARY:
            self.define(r, f"{args[0]} {BINARY[name]} {args[1]}")  # type: ignore[arg-type]
        elif name in UNSIGNED_BINARY:
            u = unsigned_type(r.type)  # type: ignore[union-attr]
            expr = f"({u}){args[0]} {UNSIGNED_BINARY[name]} ({u}){args[1]}"
            self.define(r, expr)  # type: ignore[arg-type]
        elif name == "math.fpowi":  # pown takes an int exponent
            self.define(r, f"pown({args[0]}, (int){args[1]})")  # type: ignore[arg-type]
        elif name in CALLS:
            self.define(r, f"{CALLS[name]}({', '.join(args)})")  # type: ignore[arg-type]
        elif name in UNSIGNED_CALLS:
            u = unsigned_type(r.type)  # type: ignore[union-attr]
            self.define(r, f"{UNSIGNED_CALLS[name]}(({u}){args[0]}, ({u}){args[1]})")  # type: ignore[arg-type]
        elif name in ("arith.maximumf", "arith.minimumf"):  # NaN-propagating, as LLVM's
            f = "fmax" if name == "arith.maximumf" else "fmin"
            a, b = args
            self.define(r, f"(isnan({a}) || isnan({b})) ? ({a} + {b}) : {f}({a}, {b})")  # type: ignore[arg-type]
        elif name == "arith.negf":
            self.define(r, f"-{args[0]}")  # type: ignore[arg-type]
        elif name in ("arith.floordivsi", "arith.ceildivsi"):
            fn = "nnvm_floordiv" if name == "arith.floordivsi" else "nnvm_ceildiv"
            self.define(r, f"({c_type(_scalar(r.type))}){fn}({args[0]}, {args[1]})")  # type: ignore[union-attr, arg-type]
        elif name == "arith.ceildivui":
            u = unsigned_type(r.type)  # type: ignore[union-attr]
            a, b = f"({u}){args[0]}", f"({u}){args[1]}"
            self.define(r, f"({a} + {b} - 1) / {b}")  # type: ignore[arg-type]
        elif name == "arith.cmpf":
            self.cmpf(op, args)
        elif name == "arith.cmpi":
            self.cmpi(op, args)
        elif name == "arith.select":
            self.define(r, f"{args[0]} ? {args[1]} : {args[2]}")  # type: ignore[arg-type]
        elif name in ("arith.trunci", "arith.extsi") and _is_bool(
            r.type if name == "arith.trunci" else op.operands[0].type  # type: ignore[union-attr]
        ):  # MLIR keeps the low bit; a sign-extended true is -1
            expr = (
                f"({args[0]} & 1) != 0"
                if name == "arith.trunci"
                else f"-({c_type(_scalar(r.type))}){args[0]}"
            )  # type: ignore[union-attr]
            self.define(r, expr)  # type: ignore[arg-type]
        elif name in CASTS:
            self.define(r, f"({c_type(_scalar(r.type))}){args[0]}")  # type: ignore[union-attr, arg-type]
        elif name in UNSIGNED_CASTS:
            src = unsigned_type(op.operands[0].type)
            self.define(r, f"({c_type(_scalar(r.type))})(({src}){args[0]})")  # type: ignore[union-attr, arg-type]
        elif name == "arith.bitcast":
            self.define(r, f"as_{c_type(_scalar(r.type))}({args[0]})")  # type: ignore[union-attr, arg-type]
        elif name in GPU_INDEX:
            dim = "xyz".index(op.properties["dimension"].data.value)  # type: ignore[attr-defined]
            self.define(r, f"(long){GPU_INDEX[name]}({dim})")  # type: ignore[arg-type]
        elif name == "gpu.barrier":
            self.line("barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);")
        elif name == "memref.load":
            self.define(r, self.load(op, args))  # type: ignore[arg-type]
        elif name == "memref.store":
            self.store(op, args)
        elif name in ("memref.alloca", "memref.alloc"):
            self.private(op)
        elif name == "memref.dealloc":
            pass
        elif name == "scf.for":
            self.for_(op)  # type: ignore[arg-type]
        elif name == "scf.if":
            self.if_(op)  # type: ignore[arg-type]
        elif name in ("gpu.return", "scf.yield"):
            if op.operands:
                raise self.fail(op, "yields outside scf.for / scf.if")
        else:
            raise self.fail(op)

    # -- vectors ------------------------------------------------------------------------

    def lanewise(self, op: Operation, scalar: str | None = None) -> None:
        """A vector op printed as its scalar rule on each lane (`v.s0`, `v.s1`, ...), the lanes
        gathered into one vector value: every scalar rule (NaN-propagating max, casts,
        predicates) holds per lane, and the OpenCL compiler vectorizes the lanes again."""
        r = op.results[0]
        (lanes,) = r.type.get_shape()  # type: ignore[attr-defined]
        c_type(r.type)  # a lane count OpenCL C has
        exprs: list[str] = []
        for k in range(lanes):
            self.lane, self.captured = k, []
            try:
                if scalar is None:
                    self.op(op)
                else:
                    self.define(r, f"{scalar}({', '.join(self.name(v) for v in op.operands)})")
            finally:
                self.lane = None
            if len(self.captured) != 1:
                raise self.fail(op, "no per-lane rule")
            value = self.captured[0]
            exprs.append(f"({value}) ? 1 : 0" if _is_bool(r.type) else value)
        self.define(r, f"({c_type(r.type)})({', '.join(f'({e})' for e in exprs)})")

    def vector_op(self, op: Operation) -> None:
        """vector.load / store (vloadN / vstoreN at the element's address; bytes lane by lane
        for bools), their masked forms (each lane under its mask bit: a masked-off lane never
        touches memory), broadcast, create_mask and fma."""
        name = op.name
        if self.lane is not None:
            raise self.fail(op, "a vector op inside a lane")
        if name in ("vector.load", "vector.maskedload"):
            r = op.results[0]
            ref, *rest = op.operands
            idx = rest[: len(rest) - (2 if name == "vector.maskedload" else 0)]
            base = self._name(ref)
            off = self.offset(op, ref, [self._name(i) for i in idx])
            (lanes,) = r.type.get_shape()  # type: ignore[attr-defined]
            if name == "vector.load" and not _is_bool(r.type):
                self.define(r, f"vload{lanes}(0, {base} + ({off}))")
                return
            items = []
            for k in range(lanes):
                item = f"{base}[({off}) + {k}]"
                if _is_bool(r.type):
                    item = f"({item} != 0)"
                if name == "vector.maskedload":
                    mask, passthru = (self._name(v) for v in rest[-2:])
                    item = f"({mask}.s{k:x} ? {item} : {passthru}.s{k:x})"
                items.append(f"({item})")
            self.define(r, f"({c_type(r.type)})({', '.join(items)})")
        elif name in ("vector.store", "vector.maskedstore"):
            if name == "vector.store":
                value, ref, *idx = op.operands
                mask = None
            else:
                ref, *idx, mask, value = op.operands
            v, base = self._name(value), self._name(ref)
            off = self.offset(op, ref, [self._name(i) for i in idx])
            (lanes,) = value.type.get_shape()  # type: ignore[attr-defined]
            if mask is None and not _is_bool(value.type):
                self.line(f"vstore{lanes}({v}, 0, {base} + ({off}));")
                return
            for k in range(lanes):
                item = f"(uchar){v}.s{k:x}" if _is_bool(value.type) else f"{v}.s{k:x}"
                store = f"{base}[({off}) + {k}] = {item};"
                self.line(store if mask is None else f"if ({self._name(mask)}.s{k:x}) {store}")
        elif name == "vector.broadcast":
            r = op.results[0]
            x = self._name(op.operands[0])
            self.define(
                r, f"({c_type(r.type)})({'(' + x + ') ? 1 : 0' if _is_bool(r.type) else x})"
            )
        elif name == "vector.create_mask":
            r = op.results[0]
            (lanes,) = r.type.get_shape()  # type: ignore[attr-defined]
            (count,) = (self._name(v) for v in op.operands)
            bits = ", ".join(f"({k}L < {count}) ? 1 : 0" for k in range(lanes))
            self.define(r, f"({c_type(r.type)})({bits})")
        elif name == "vector.fma":
            self.lanewise(op, scalar="fma")
        else:
            raise self.fail(op)

    # -- ops with more to them ----------------------------------------------------------

    def cmpf(self, op: Operation, args: list[str]) -> None:
        pred = op.properties["predicate"].value.data  # type: ignore[attr-defined]
        names = [
            "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
            "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true",
        ]  # fmt: skip
        p = names[pred]
        a, b = args
        if p in ("false", "true"):
            expr = p
        elif p == "ord":
            expr = f"!isnan({a}) && !isnan({b})"
        elif p == "uno":
            expr = f"isnan({a}) || isnan({b})"
        elif p.startswith("o"):
            expr = f"{a} {CMPF[p]} {b}" if p != "one" else f"({a} < {b} || {a} > {b})"
        else:  # unordered: true when either is NaN
            expr = f"(isnan({a}) || isnan({b}) || {a} {CMPF[p]} {b})"
            if p == "une":
                expr = f"{a} != {b}"
        self.define(op.results[0], expr)

    def cmpi(self, op: Operation, args: list[str]) -> None:
        pred = op.properties["predicate"].value.data  # type: ignore[attr-defined]
        names = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
        p = names[pred]
        a, b = args
        if p in CMPI:
            self.define(op.results[0], f"{a} {CMPI[p]} {b}")
        else:
            u = unsigned_type(op.operands[0].type)
            self.define(op.results[0], f"({u}){a} {CMPI_UNSIGNED[p]} ({u}){b}")

    def offset(self, op: Operation, ref: SSAValue, indices: list[str]) -> str:
        t = ref.type
        if not isinstance(t, MemRefType):
            raise self.fail(op, "not a memref")
        shape = t.get_shape()
        if any(d < 0 for d in shape):
            raise self.fail(op, "a dynamic shape")
        layout = t.layout
        if layout is not None and str(layout) not in ("", "#none", "none"):
            if "strided" in str(layout) or "affine_map" in str(layout):
                raise self.fail(op, f"layout {layout}")
        if not indices:
            return "0"
        expr = indices[0]
        for d, i in zip(shape[1:], indices[1:], strict=True):
            expr = f"({expr}) * {d}L + {i}"
        return expr

    def load(self, op: Operation, args: list[str]) -> str:
        ref, *idx = op.operands
        text = f"{args[0]}[{self.offset(op, ref, args[1:])}]"
        elt = ref.type.element_type  # type: ignore[attr-defined]
        if isinstance(elt, IntegerType) and elt.width.data == 1:
            return f"({text} != 0)"
        return text

    def store(self, op: Operation, args: list[str]) -> None:
        ref = op.operands[1]
        off = self.offset(op, ref, args[2:])
        elt = ref.type.element_type  # type: ignore[attr-defined]
        v = args[0]
        if isinstance(elt, IntegerType) and elt.width.data == 1:
            v = f"(uchar){v}"
        self.line(f"{args[1]}[{off}] = {v};")

    def private(self, op: Operation) -> None:
        """A buffer allocated inside a kernel is the thread's own: a private array; one in
        memory space 3 (lower-te-to-gpu's shared stages) is the work-group's: a `__local`
        array, which OpenCL C allows only at the kernel's outermost scope."""
        t = op.results[0].type
        assert isinstance(t, MemRefType)
        if op.operands or any(d < 0 for d in t.get_shape()):
            raise self.fail(op, "a dynamic size")
        count = max(math.prod(t.get_shape()), 1)
        elt = c_type(t.element_type, memory=True)
        space = t.memory_space
        if isinstance(space, IntegerAttr) and space.value.data == WORKGROUP_SPACE:
            if op.parent_op() is not self.kernel:
                raise self.fail(op, "a __local buffer inside a loop or branch")
            self.line(f"__local {elt} {self.name(op.results[0])}[{count}];")
            return
        if not isinstance(space, NoneAttr) and not (
            isinstance(space, IntegerAttr) and space.value.data == 0
        ):
            raise self.fail(op, f"memory space {space}")
        self.line(f"{elt} {self.name(op.results[0])}[{count}];")

    def for_(self, op: scf.ForOp) -> None:
        lb, ub, step = (self.name(v) for v in (op.lb, op.ub, op.step))
        body = op.body.block
        iv, *carried = body.args
        for res, init in zip(op.results, op.iter_args, strict=True):
            self.line(f"{c_type(res.type)} {self.name(res)} = {self.name(init)};")
        i = self.name(iv)
        self.line(f"for ({c_type(iv.type)} {i} = {lb}; {i} < {ub}; {i} += {step}) {{")
        self.depth += 1
        for arg, res in zip(carried, op.results, strict=True):
            self.define(arg, self.name(res))
        self._body(body, [self.name(r) for r in op.results])
        self.depth -= 1
        self.line("}")

    def if_(self, op: scf.IfOp) -> None:
        for res in op.results:
            self.line(f"{c_type(res.type)} {self.name(res)};")
        self.line(f"if ({self.name(op.cond)}) {{")
        outs = [self.name(r) for r in op.results]
        self.depth += 1
        self._body(op.true_region.block, outs)
        self.depth -= 1
        if op.false_region.blocks and list(op.false_region.block.ops):
            self.line("} else {")
            self.depth += 1
            self._body(op.false_region.block, outs)
            self.depth -= 1
        self.line("}")

    def _body(self, block: Block, outs: list[str]) -> None:
        """A region's ops; its terminator's operands assigned to `outs`."""
        for inner in block.ops:
            if isinstance(inner, scf.YieldOp):
                for name, v in zip(outs, inner.operands, strict=True):
                    self.line(f"{name} = {self.name(v)};")
            else:
                self.op(inner)


def print_opencl_c(module: gpu.ModuleOp) -> str:
    """The OpenCL C program of a gpu.module: the prelude, then each kernel."""
    parts = [PRELUDE]
    for op in module.body.block.ops:
        if isinstance(op, gpu.FuncOp):
            parts.append(KernelPrinter(op).print())
        elif not isinstance(op, memref.GlobalOp):
            raise UserError(f"the OpenCL C printer cannot print {op.name} in a gpu.module")
    return "\n\n".join(parts) + "\n"
