"""Tensor layouts as strings, TVM style: upper-case letters are primal axes, a number followed by
a lower-case letter is a block of that axis. "NCHW8c" is NCHW with C split into C/8 outer and 8
inner (innermost); "OIHW8i8o" blocks both channel axes of a kernel.

A blocked axis may hold padding: 24 channels stored NCHW16c take two blocks, the last half
padding (`physical_shape(..., pad=True)`), as onnxruntime's NCHWc convs pad channels to a whole
vector rather than run half-width ones. Padding holds finite values of no meaning; only
layout_transform knows the logical extent (its `logical` property) and drops it."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from nnvm.dialects.nnvm.base import ShapeError

_TOKEN = re.compile(r"(\d*)([A-Za-z])")


@dataclass(frozen=True)
class Layout:
    """A parsed layout: `axes` in physical order, each (letter, block factor or 0 for primal)."""

    text: str
    axes: tuple[tuple[str, int], ...]
    canonical: str

    @staticmethod
    @functools.lru_cache(maxsize=4096)
    def parse(text: str, canonical: str) -> Layout:
        """The layout `text` blocks `canonical` (a Layout is immutable: parsed once per pair;
        DenseNet-121's build parses 7,120 layouts of a few kinds)."""
        axes: list[tuple[str, int]] = []
        pos = 0
        for m in _TOKEN.finditer(text):
            if m.start() != pos:
                break
            pos = m.end()
            digits, letter = m.groups()
            if letter.isupper():
                if digits:
                    raise ValueError(f"layout {text!r}: a primal axis {letter} takes no factor")
                axes.append((letter, 0))
            else:
                if not digits or int(digits) < 1:
                    raise ValueError(f"layout {text!r}: block axis {letter} needs a factor")
                axes.append((letter.upper(), int(digits)))
        if pos != len(text) or not text:
            raise ValueError(f"invalid layout {text!r}")
        primal = [a for a, f in axes if f == 0]
        blocked = [a for a, f in axes if f > 0]
        if sorted(primal) != sorted(canonical) or len(set(blocked)) != len(blocked):
            raise ValueError(f"layout {text!r} is not a blocking of {canonical}")
        for a in blocked:
            if a not in primal:
                raise ValueError(f"layout {text!r}: block of unknown axis {a}")
        return Layout(text, tuple(axes), canonical)

    @property
    def is_canonical(self) -> bool:
        return self.text == self.canonical

    def block(self, axis: str) -> int | None:
        """The block factor of a primal axis, or None when it has no block sub-axis."""
        for a, f in self.axes:
            if a == axis and f:
                return f
        return None

    def factor(self, axis: str) -> int:
        """The block factor of a primal axis (1 when it is not blocked)."""
        return self.block(axis) or 1

    def logical_shape(self, physical: Sequence[int], what: str) -> tuple[int, ...]:
        """The canonical (e.g. NCHW) shape of a tensor stored in this layout."""
        if len(physical) != len(self.axes):
            raise ShapeError(
                f"{what} has rank {len(physical)}, layout {self.text} needs {len(self.axes)}"
            )
        dims = dict.fromkeys(self.canonical, 1)
        for (a, f), d in zip(self.axes, physical, strict=True):
            if f:
                if d != f:
                    raise ShapeError(f"{what}: block axis {f}{a.lower()} has extent {d}")
            dims[a] *= d
        return tuple(dims[a] for a in self.canonical)

    def physical_shape(
        self, logical: Sequence[int], what: str, pad: bool = False
    ) -> tuple[int, ...]:
        """The stored shape of a canonical-shaped tensor in this layout; with `pad`, an axis
        its block does not divide takes one more, partly padding, block."""
        dims = dict(zip(self.canonical, logical, strict=True))
        out = []
        for a, f in self.axes:
            if f:
                out.append(f)
            else:
                factor = self.factor(a)
                if dims[a] % factor and not pad:
                    raise ShapeError(
                        f"{what}: axis {a} of extent {dims[a]} is not divisible by block {factor}"
                    )
                out.append(-(-dims[a] // factor))
        return tuple(out)

    def padded(self, logical: Sequence[int]) -> tuple[int, ...]:
        """The canonical shape with each blocked axis rounded up to whole blocks."""
        return tuple(
            -(-d // self.factor(a)) * self.factor(a)
            for a, d in zip(self.canonical, logical, strict=True)
        )

    def to_canonical(self, array: np.ndarray, logical: Sequence[int] | None = None) -> np.ndarray:
        """Numpy data in this layout -> canonical layout (cropped to `logical`, when given,
        dropping the padding of partial blocks)."""
        if self.is_canonical:
            return array if logical is None else array[tuple(slice(0, d) for d in logical)]
        order: list[int] = []
        for a in self.canonical:
            order.append(self.axes.index((a, 0)))
            block = self.block(a)
            if block is not None:
                order.append(self.axes.index((a, block)))
        full = self.logical_shape(array.shape, "array")
        out = np.ascontiguousarray(array.transpose(order)).reshape(full)
        if logical is not None and tuple(logical) != full:
            out = np.ascontiguousarray(out[tuple(slice(0, d) for d in logical)])
        return out

    def from_canonical(self, array: np.ndarray, pad: bool = False) -> np.ndarray:
        """Numpy data in canonical layout -> this layout; with `pad`, partial blocks are
        filled with zeros."""
        if self.is_canonical:
            return array
        if pad:
            padded = self.padded(array.shape)
            if padded != array.shape:
                array = np.pad(
                    array, [(0, p - d) for p, d in zip(padded, array.shape, strict=True)]
                )
        split_shape: list[int] = []
        split_axes: list[tuple[str, int]] = []
        for a, d in zip(self.canonical, array.shape, strict=True):
            f = self.block(a)
            if f is not None:
                split_shape += [d // f, f]
                split_axes += [(a, 0), (a, f)]
            else:
                split_shape.append(d)
                split_axes.append((a, 0))
        self.physical_shape(array.shape, "array")  # checks divisibility
        order = [split_axes.index(ax) for ax in self.axes]
        return np.ascontiguousarray(array.reshape(split_shape).transpose(order))
