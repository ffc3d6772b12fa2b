"""Ops: the registry and the core op set of the rlx IR."""

from rlxir.ops.registry import (
    LEAF_KINDS,
    REQUIRED,
    AttrSpec,
    OpDef,
    ShapeError,
    annotation_specs,
    attach,
    check_attributes,
    format_attr_value,
    get_op,
    register_annotation,
    register_op,
    registered_ops,
)
from rlxir.ops import core as _core  # noqa: F401  (registers the core ops)
from rlxir.ops import chain as _chain  # noqa: F401  (registers fused_elementwise)
from rlxir.ops import annotations as _annotations  # noqa: F401  (the built-in backends' stage attributes)
from rlxir.ops import reference as _reference  # noqa: F401  (attaches the NumPy references)
from rlxir.ops import indexing as _indexing  # noqa: F401  (gather/scatter/topk/mod, with references)
from rlxir.ops import decompositions as _decompositions  # noqa: F401  (attaches the decompositions)
from rlxir.ops import special_poly as _special_poly  # noqa: F401  (polynomial_recurrence)
from rlxir.ops import eigen as _eigen  # noqa: F401  (eigvals)
from rlxir.ops import bits as _bits  # noqa: F401  (bitcast, reduce_xor)
from rlxir.ops.core import broadcast_shapes, normalize_axis

__all__ = [
    "LEAF_KINDS", "REQUIRED", "AttrSpec", "OpDef", "ShapeError", "annotation_specs", "attach", "broadcast_shapes",
    "check_attributes", "format_attr_value", "get_op", "normalize_axis", "register_annotation", "register_op",
    "registered_ops",
]
