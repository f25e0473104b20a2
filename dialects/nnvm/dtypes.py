"""One table between numpy dtypes and the xDSL element types the graph dialect uses."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    f16,
    f32,
    f64,
)
from xdsl.ir import Attribute

_TABLE: list[tuple[np.dtype, Attribute]] = [
    (np.dtype(np.float32), f32),
    (np.dtype(np.float16), f16),
    (np.dtype(np.float64), f64),
    (np.dtype(np.int64), IntegerType(64)),
    (np.dtype(np.int32), IntegerType(32)),
    (np.dtype(np.int16), IntegerType(16)),
    (np.dtype(np.int8), IntegerType(8)),
    (np.dtype(np.uint8), IntegerType(8, Signedness.UNSIGNED)),
    (np.dtype(np.uint16), IntegerType(16, Signedness.UNSIGNED)),
    (np.dtype(np.uint32), IntegerType(32, Signedness.UNSIGNED)),
    (np.dtype(np.uint64), IntegerType(64, Signedness.UNSIGNED)),
    (np.dtype(np.bool_), IntegerType(1)),
]


def element_type_of(dtype: np.dtype | str | type) -> Attribute:
    """The xDSL element type for a numpy dtype (or its name, e.g. "float32")."""
    want = np.dtype(dtype)
    for npdt, elt in _TABLE:
        if npdt == want:
            return elt
    raise TypeError(f"dtype {want} is not supported by the graph dialect")


def numpy_dtype_of(element_type: Attribute) -> np.dtype:
    """The numpy dtype of an xDSL element type."""
    for npdt, elt in _TABLE:
        if elt == element_type:
            return npdt
    raise TypeError(f"element type {element_type} has no numpy counterpart")


def is_float(element_type: Attribute) -> bool:
    return isinstance(element_type, Float16Type | Float32Type | Float64Type)


def is_bool(element_type: Attribute) -> bool:
    return element_type == IntegerType(1)


def is_integer(element_type: Attribute) -> bool:
    return isinstance(element_type, IntegerType) and not is_bool(element_type)


def is_byte(element_type: Attribute) -> bool:
    """int8 or uint8: the operands of byte dot products."""
    return is_integer(element_type) and element_type.width.data == 8  # type: ignore[attr-defined]
