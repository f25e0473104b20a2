"""fuse: group graph ops into kernels by op-pattern kind (TVM's fusion rules) and outline each
group as `func.func private @fused_<ops>_<hash>`, called from the graph.

The rules, walking the graph in order and offering each op to the group that produced one of
its operands:
* injective chains fuse: elemwise, broadcast and injective ops join each other's groups;
* an out-elemwise-fusable op (conv2d, dense, matmul, pooling) absorbs its elementwise and
  broadcast epilogue (bias, relu, the add of a residual) when the shape stays the same;
* a reduction absorbs elementwise/broadcast producers, and its elementwise epilogue;
* opaque ops stand alone;
* a value used outside a group ends it: an op joins only the group whose output it is the sole
  user of, so no intermediate of a group is ever needed elsewhere (and no cycle can form);
  except a diamond: when all uses of the output meet again in one op through ops that may all
  join (GELU's x * (1 + erf(x / sqrt 2)) / 2), they join together.

One group is one kernel. The hash is structural (ops, shapes, attributes; not names), so
identical groups share one function, one compile and one tuning record."""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType, UnitAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from nnvm.dialects.nnvm.autodiff import RECOMPUTE
from nnvm.dialects.nnvm.sources import ConstantOp
from nnvm.dialects.nnvm.traits import OpPatternKind, pattern_kind
from nnvm.passes.graph_utils import is_source
from nnvm.support.ir_digest import StructuralDigest
from nnvm.support.pass_statistics import record_statistic

FUSED_PREFIX = "fused_"
#: Attribute on each fused function: the pattern kind of the group (for schedules, plan-memory).
PATTERN_ATTR = "nnvm.pattern"

K = OpPatternKind


@dataclass
class Group:
    ops: list[Operation]
    kind: OpPatternKind

    @property
    def output(self) -> Operation:
        return self.ops[-1]


def _same_shape(a: SSAValue, b: SSAValue) -> bool:
    return (
        isinstance(a.type, TensorType)
        and isinstance(b.type, TensorType)
        and a.type.get_shape() == b.type.get_shape()
    )


def can_join(group: Group, op: Operation, via: SSAValue) -> bool:
    """May `op` (a consumer of the group's output `via`) join `group`? The pattern-kind rules."""
    kind = pattern_kind(op)
    if group.kind <= K.INJECTIVE and kind <= K.INJECTIVE:
        return True
    if group.kind <= K.BROADCAST and kind == K.COMM_REDUCE:
        return True
    if group.kind in (K.OUT_ELEMWISE_FUSABLE, K.COMM_REDUCE) and kind <= K.BROADCAST:
        return _same_shape(op.results[0], via)
    return False


def joined_kind(group_kind: OpPatternKind, kind: OpPatternKind) -> OpPatternKind:
    if group_kind in (K.OUT_ELEMWISE_FUSABLE, K.COMM_REDUCE):
        return group_kind
    return max(group_kind, kind)


@dataclass
class GroupBuilder:
    enable: bool
    max_group_size: int
    group_of: dict[Operation, Group] = field(default_factory=dict)
    groups: list[Group] = field(default_factory=list)
    destined: dict[Operation, Group] = field(default_factory=dict)
    """Ops of an approved diamond, each joining its group when it is offered."""

    def offer(self, op: Operation) -> None:
        if op in self.destined:
            self._join(self.destined.pop(op), op)
            return
        if self.enable and len(op.results) == 1 and pattern_kind(op) != K.OPAQUE:
            for operand in op.operands:
                producer = operand.owner
                group = self.group_of.get(producer)  # type: ignore[arg-type]
                if group is None or group.output is not producer or len(producer.results) != 1:
                    continue
                if len(group.ops) >= self.max_group_size or not can_join(group, op, operand):
                    continue
                if any(use.operation is not op for use in producer.results[0].uses):
                    # the group's output is needed elsewhere: the group ends here, unless all
                    # its uses meet again in one op through ops that may join it (a diamond)
                    diamond = self._diamond(group, operand)
                    if diamond is None or diamond[0] is not op:
                        continue
                    for later in diamond[1:]:
                        self.destined[later] = group
                self._join(group, op)
                return
        group = Group([op], pattern_kind(op))
        self.groups.append(group)
        self.group_of[op] = group

    def _join(self, group: Group, op: Operation) -> None:
        group.ops.append(op)
        group.kind = joined_kind(group.kind, pattern_kind(op))
        self.group_of[op] = group

    def _diamond(self, group: Group, value: SSAValue, limit: int = 16) -> list[Operation] | None:
        """The ops, in program order, from `value` to the one op where all paths from it meet
        again (GELU's x * (1 + erf(x / sqrt 2)) / 2 uses x twice), when every one of them may
        join `group`: then none of their values is needed outside the group. None otherwise."""
        inside: set[SSAValue] = {value}
        region: list[Operation] = []
        op = value.owner.next_op  # type: ignore[union-attr]
        while op is not None and len(region) < limit:
            if any(v in inside for v in op.operands):
                if (
                    len(op.results) != 1
                    or op in self.destined
                    or pattern_kind(op) == K.OPAQUE
                    or len(group.ops) + len(region) >= self.max_group_size
                    or not can_join(group, op, value)
                ):
                    return None
                region.append(op)
                inside.add(op.results[0])
                open_values = [v for v in inside if any(u.operation not in region for u in v.uses)]
                if open_values == [op.results[0]]:
                    return region
            op = op.next_op
        return None


def _computes(op: Operation) -> bool:
    """A graph op that computes (not a param or constant, not the function's own calls or
    return): nnvm's, or another dialect's graph-level op (an accelerator's offloaded layer,
    opaque to the pattern rules, so a kernel of its own)."""
    return not is_source(op) and not isinstance(op, func.ReturnOp | func.CallOp)


def kernel_name(group: Group, digest: str) -> str:
    names = [op.name.removeprefix("nnvm.").replace(".", "_") for op in group.ops]
    if len(names) > 6:
        names = names[:5] + [f"and{len(names) - 5}more"]
    return FUSED_PREFIX + "_".join(names) + "_" + digest[:8]


def outline(group: Group) -> tuple[func.FuncOp, list[SSAValue]]:
    """A private function computing the group, and the values to call it with."""
    members = set(group.ops)
    inputs: list[SSAValue] = []
    cloned_constants: dict[SSAValue, Operation] = {}
    for op in group.ops:
        for operand in op.operands:
            owner = operand.owner
            if owner in members or operand in inputs:
                continue
            if isinstance(owner, ConstantOp):
                cloned_constants.setdefault(operand, owner)
            else:
                inputs.append(operand)
    block = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, block.args, strict=True))
    for value, const in cloned_constants.items():
        clone = const.clone(clone_name_hints=False)
        block.add_op(clone)
        mapping[value] = clone.results[0]
    for op in group.ops:
        clone = op.clone(value_mapper=mapping, clone_name_hints=False)
        for res in clone.results:
            res.name_hint = None
        block.add_op(clone)
    outputs = [mapping[r] for r in group.output.results]
    block.add_op(func.ReturnOp(*outputs))
    fn = func.FuncOp(
        "kernel",
        ([v.type for v in inputs], [v.type for v in outputs]),
        Region(block),
        visibility="private",
    )
    fn.attributes[PATTERN_ATTR] = StringAttr(group.kind.label)
    return fn, inputs


@dataclass(frozen=True)
class FuseOpsPass(ModulePass):
    """Group ops into kernels by op-pattern kind and outline each group as a function."""

    name = "fuse"

    max_group_size: int = 256
    """Largest number of graph ops in one kernel."""

    enable: bool = True
    """false: no fusion, every op becomes a kernel of its own."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        existing = {f.sym_name.data: f for f in op.ops if isinstance(f, func.FuncOp)}
        by_digest: dict[str, str] = {}
        digest_of = StructuralDigest()
        for fn in list(existing.values()):
            if fn.sym_name.data.startswith(FUSED_PREFIX) or not fn.body.blocks:
                continue
            builder = GroupBuilder(self.enable, max(1, self.max_group_size))
            for node in fn.body.block.ops:
                if _computes(node):
                    builder.offer(node)
            for group in builder.groups:
                kernel, inputs = outline(group)
                digest = digest_of(kernel)
                name = by_digest.get(digest)
                if name is None:
                    name = kernel_name(group, digest)
                    k = 1
                    while name in existing:  # a different kernel with the same short name
                        name = f"{kernel_name(group, digest)}_{k}"
                        k += 1
                    kernel.sym_name = StringAttr(name)
                    op.body.block.add_op(kernel)
                    existing[name] = kernel
                    by_digest[digest] = name
                else:
                    kernel.erase()
                call = func.CallOp(name, inputs, [r.type for r in group.output.results])
                if any(RECOMPUTE in member.attributes for member in group.ops):
                    call.attributes[RECOMPUTE] = UnitAttr()  # CSE keeps the recomputation
                Rewriter.insert_op(call, InsertPoint.before(group.output))
                for old, new in zip(group.output.results, call.results, strict=True):
                    new.name_hint = old.name_hint
                    old.replace_all_uses_with(new)
                for member in reversed(group.ops):
                    Rewriter.erase_op(member)
            record_statistic(op, self.name, "groups", len(builder.groups), "kernels formed")
        record_statistic(op, self.name, "kernels", len(by_digest), "distinct kernel functions")
