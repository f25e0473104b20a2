"""Reordering ops: every element moves to a new position (transpose, layout_transform, and
depth_to_space / space_to_depth, which move channel blocks to spatial tiles and back)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, TensorType, i64
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, opt_prop_def

from nnvm.dialects.nnvm.autodiff import VJPBuilder, shape
from nnvm.dialects.nnvm.base import (
    EvalContext,
    NNVMOp,
    ShapeError,
    UnaryTransformOp,
    int_prop,
    ints_prop,
    str_prop,
    tensor,
)
from nnvm.dialects.nnvm.layout import Layout
from nnvm.dialects.te import builder as te
from nnvm.dialects.te import topi
from nnvm.dialects.te.builder import Expr, KernelBuilder, TensorRef


@irdl_op_definition
class TransposeOp(UnaryTransformOp):
    """Permute axes: result axis k is input axis perm[k]."""

    name = "nnvm.transpose"
    perm = ints_prop()

    def _perm(self, rank: int) -> tuple[int, ...]:
        perm = self.attr("perm")
        if sorted(perm) != list(range(rank)):
            raise ShapeError(f"transpose: perm {list(perm)} is not a permutation of 0..{rank - 1}")
        return perm

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        shape = t.get_shape()
        return [tensor([shape[p] for p in self._perm(len(shape))], t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x = inputs[0]
        return [np.transpose(x, self._perm(x.ndim))]  # a view: a consumer that packs copies once

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        perm = self._perm(x.ndim)
        shape = [x.shape[p] for p in perm]

        def body(*i: Expr) -> Expr:
            src: list[Expr] = [i[0]] * x.ndim
            for k, p in enumerate(perm):
                src[p] = i[k]
            return x[src]

        return [b.compute(shape, body)]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:

        perm = self._perm(len(shape(self.input)))
        inverse = [perm.index(k) for k in range(len(perm))]
        return [g.op("transpose", grads[0], perm=inverse)]


@irdl_op_definition
class LayoutTransformOp(UnaryTransformOp):
    """Re-store a tensor from one layout to another over the same primal axes ("NCHW" ->
    "NCHW8c"); alter-layout inserts these around ops that prefer blocked data. A blocked
    result whose block does not divide its axis is padded with zeros to whole blocks (24
    channels in NCHW16c: two blocks); `logical`, when set, is the canonical shape of the
    tensor both sides hold, so a padded input's padding is dropped (NCHW16c -> NCHW back to 24
    channels) or a padded result's size known."""

    name = "nnvm.layout_transform"
    src_layout = str_prop()
    dst_layout = str_prop()
    logical = opt_prop_def(DenseArrayBase.constr(i64))

    def _layouts(self) -> tuple[Layout, Layout]:
        src_text, dst_text = self.attr("src_layout"), self.attr("dst_layout")
        canonical = "".join(c for c in src_text if c.isupper())
        try:
            src = Layout.parse(src_text, canonical)
        except ValueError as err:
            raise ShapeError(f"layout_transform: {err}") from None
        try:
            dst = Layout.parse(dst_text, canonical)
        except ValueError:
            raise ShapeError(
                f"layout_transform: {dst_text!r} is not a layout over the axes of {src_text!r}"
            ) from None
        return src, dst

    def logical_shape(self, physical: Sequence[int]) -> tuple[int, ...]:
        """The canonical shape of the tensor the input (of `physical` shape) holds."""
        src, _ = self._layouts()
        logical = tuple(self.attr("logical") or ())
        if not logical:
            return src.logical_shape(physical, "layout_transform input")
        if len(logical) != len(src.canonical) or any(d < 1 for d in logical):
            raise ShapeError(
                f"layout_transform: logical shape {list(logical)} is not a shape over the "
                f"axes {src.canonical}"
            )
        if src.physical_shape(logical, "layout_transform", pad=True) != tuple(physical):
            raise ShapeError(
                f"layout_transform: an input of shape {list(physical)} in {src.text} does not "
                f"hold the logical shape {list(logical)}"
            )
        return logical

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        _, dst = self._layouts()
        logical = self.logical_shape(t.get_shape())
        return [tensor(dst.physical_shape(logical, "layout_transform", pad=True), t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        src, dst = self._layouts()
        logical = self.logical_shape(inputs[0].shape)
        canonical = src.to_canonical(inputs[0], logical)
        return [np.asarray(dst.from_canonical(canonical, pad=True), order="C")]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        src, dst = self._layouts()
        logical = self.logical_shape(x.shape)
        shape = dst.physical_shape(logical, "layout_transform", pad=True)
        padded = [
            k for k, (d, p) in enumerate(zip(logical, dst.padded(logical), strict=True)) if p > d
        ]

        def body(*i: Expr) -> Expr:
            index = topi.from_blocked(dst.axes, dst.canonical, i)
            value = x[topi.to_blocked(src.axes, dict(zip(dst.canonical, index, strict=True)))]
            if not padded:
                return value
            inside = index[padded[0]] < logical[padded[0]]
            for k in padded[1:]:
                inside = inside & (index[k] < logical[k])
            return te.select(inside, value, 0)  # the padding of partial blocks: zeros

        # between blocked layouts the default schedule keeps vectors within one source block
        reblock = self.attr("src_layout")[-1].islower() and self.attr("dst_layout")[-1].islower()
        return [b.compute(shape, body, template="reblock" if reblock else None)]


_BLOCK_MODES = ("DCR", "CRD")


class BlockRearrangeOp(UnaryTransformOp):
    """Shared checks of depth_to_space and space_to_depth (4-D NCHW, a block size, a mode)."""

    blocksize = int_prop()
    mode = str_prop("DCR")

    def _block(self, t: TensorType) -> tuple[int, str]:
        b, mode = self.attr("blocksize"), self.attr("mode")
        if len(t.get_shape()) != 4:
            raise ShapeError(f"{self.name} needs a 4-D NCHW input, got rank {len(t.get_shape())}")
        if b < 1:
            raise ShapeError(f"{self.name}: blocksize must be >= 1, got {b}")
        if mode not in _BLOCK_MODES:
            raise ShapeError(f"{self.name}: mode must be DCR or CRD, got {mode!r}")
        return b, mode


@irdl_op_definition
class DepthToSpaceOp(BlockRearrangeOp):
    """ONNX DepthToSpace: move blocks of channels into b x b spatial tiles."""

    name = "nnvm.depth_to_space"

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        b, _ = self._block(t)
        n, c, h, w = t.get_shape()
        if c % (b * b):
            raise ShapeError(
                f"depth_to_space: channels {c} are not divisible by blocksize^2 {b * b}"
            )
        return [tensor((n, c // (b * b), h * b, w * b), t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x = inputs[0]
        b = self.attr("blocksize")
        n, c, h, w = x.shape
        if self.attr("mode") == "DCR":
            y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
        else:
            y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
        return [np.asarray(y, order="C").reshape(n, c // (b * b), h * b, w * b)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        bs = self.attr("blocksize")
        shape = self.infer_result_types([x.type])[0].get_shape()
        c_out = shape[1]
        dcr = self.attr("mode") == "DCR"

        def body(n: Expr, c: Expr, h: Expr, w: Expr) -> Expr:
            b1, b2 = h % bs, w % bs
            cin = (b1 * bs + b2) * c_out + c if dcr else c * (bs * bs) + b1 * bs + b2
            return x[n, cin, h // bs, w // bs]

        return [b.compute(shape, body)]


@irdl_op_definition
class SpaceToDepthOp(BlockRearrangeOp):
    """ONNX SpaceToDepth: fold b x b spatial tiles into channels (the inverse of depth_to_space
    in the same mode; ONNX's op is mode DCR)."""

    name = "nnvm.space_to_depth"

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        b, _ = self._block(t)
        n, c, h, w = t.get_shape()
        if h % b or w % b:
            raise ShapeError(f"space_to_depth: spatial extents {h}x{w} are not divisible by {b}")
        return [tensor((n, c * b * b, h // b, w // b), t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x = inputs[0]
        b = self.attr("blocksize")
        n, c, h, w = x.shape
        y = x.reshape(n, c, h // b, b, w // b, b)
        order = (0, 3, 5, 1, 2, 4) if self.attr("mode") == "DCR" else (0, 1, 3, 5, 2, 4)
        out = np.asarray(y.transpose(order), order="C")
        return [out.reshape(n, c * b * b, h // b, w // b)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        bs = self.attr("blocksize")
        shape = self.infer_result_types([x.type])[0].get_shape()
        c_in = x.shape[1]
        dcr = self.attr("mode") == "DCR"

        def body(n: Expr, oc: Expr, h: Expr, w: Expr) -> Expr:
            if dcr:
                b1, b2, c = oc // (bs * c_in), (oc // c_in) % bs, oc % c_in
            else:
                c, b1, b2 = oc // (bs * bs), (oc // bs) % bs, oc % bs
            return x[n, c, h * bs + b1, w * bs + b2]

        return [b.compute(shape, body)]


PERMUTE_OPS: list[type[NNVMOp]] = [TransposeOp, LayoutTransformOp, DepthToSpaceOp, SpaceToDepthOp]
