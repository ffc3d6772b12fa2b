"""The op registry: what each op takes, what it infers, and what it is.

An `OpDef` is data: arity, an attribute schema with defaults and type checks, a shape rule,
traits, and the optional hooks other stages use (a decomposition for `unfuse`, a NumPy
reference for the interpreter). Core ops and custom ops register through `register_op`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from rlxir.dtypes import DType
from rlxir.errors import IRTypeError, RlxError
from rlxir.symbolic import Dim, Expr
from rlxir.types import TensorType

REQUIRED = object()
"""Marker default: the attribute must be given."""

# Attribute kinds and the Python values that carry them.
ATTR_KINDS = ("int", "float", "bool", "str", "dtype", "ints", "floats", "dims", "strs")


def _attribute_error(message: str, key: str, expected: str | None = None) -> IRTypeError:
    error = IRTypeError(message, expected=expected)
    error.attribute = key
    return error


class ShapeError(RlxError):
    """A shape rule rejected its operands. `operand` is the index of the culprit, if known."""

    kind = "type error"

    def __init__(self, message: str, operand: int | None = None, expected: str | None = None):
        super().__init__(message, None, expected)
        self.operand = operand


@attrs.frozen(slots=True)
class AttrSpec:
    """One attribute: its kind, its default (or `REQUIRED`), allowed values, a doc line."""

    kind: str = attrs.field(validator=attrs.validators.in_(ATTR_KINDS))
    default: Any = REQUIRED
    choices: tuple | None = None
    doc: str = ""

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


ShapeRule = Callable[[tuple, Mapping[str, Any]], TensorType]


@attrs.frozen(slots=True, eq=False)
class OpDef:
    """Everything the framework knows about one op.

    `shape_rule(operand_types, attrs)` returns the result type or raises `ShapeError`;
    `attrs` holds every schema attribute, defaults filled in.
    `decompose(graph, name) -> str` (optional) inserts primitives computing node `name`
    before it and returns the value that replaces it (the caller rewires uses and erases).
    `reference(inputs, attrs) -> ndarray` (optional) computes the op with NumPy for the
    interpreter from its operand arrays and its full attributes (stage annotations included).
    """

    name: str
    min_operands: int
    max_operands: int | None
    shape_rule: ShapeRule
    attributes: Mapping[str, AttrSpec] = attrs.field(factory=dict)
    traits: frozenset = attrs.field(factory=frozenset, converter=frozenset)
    operand_names: tuple = ()
    doc: str = ""
    decompose: Callable | None = None
    reference: Callable | None = None

    def has(self, trait: str) -> bool:
        return trait in self.traits

    def arity_text(self) -> str:
        if self.max_operands is None:
            return f"at least {self.min_operands} operand{'s' if self.min_operands != 1 else ''}"
        if self.min_operands == self.max_operands:
            return f"{self.min_operands} operand{'s' if self.min_operands != 1 else ''}"
        return f"{self.min_operands} to {self.max_operands} operands"

    def accepts_arity(self, count: int) -> bool:
        return count >= self.min_operands and (self.max_operands is None or count <= self.max_operands)


_OPS: dict[str, OpDef] = {}

# Attributes any op may carry after a backend's `lower` stage (the LIR). Keys are the
# backends' to define; registering one here makes it valid on every op.
_ANNOTATIONS: dict[str, AttrSpec] = {}


def register_op(opdef: OpDef, replace: bool = False) -> OpDef:
    """Add an op to the registry. A second op of the same name is refused unless `replace`."""
    if opdef.name in _OPS and not replace:
        raise ValueError(f"op {opdef.name!r} is already registered")
    if opdef.name in LEAF_KINDS:
        raise ValueError(f"{opdef.name!r} is a statement keyword, not an op name")
    _OPS[opdef.name] = opdef
    return opdef


def attach(op_name: str, *, reference: Callable | None = None, decompose: Callable | None = None) -> OpDef:
    """Give a registered op its NumPy reference and/or decomposition; returns the new `OpDef`.

    `OpDef` is frozen, so the op is re-registered as a copy with only the given hooks
    changed (a hook left as None keeps its current value). Raises `ValueError` for an
    unknown op. Re-registering the op later with `register_op(..., replace=True)` drops them.
    """
    opdef = _OPS.get(op_name)
    if opdef is None:
        raise ValueError(f"cannot attach to {op_name!r}: no such op is registered")
    hooks: dict[str, Any] = {key: hook for key, hook in (("reference", reference), ("decompose", decompose))
                             if hook is not None}
    _OPS[op_name] = attrs.evolve(opdef, **hooks)
    return _OPS[op_name]


def attach_each(hook: str, table: Mapping[str, Callable]) -> None:
    """`attach` one hook (``"reference"`` or ``"decompose"``) to every op named in TABLE."""
    for op_name, function in table.items():
        attach(op_name, **{hook: function})


def register_annotation(key: str, spec: AttrSpec) -> None:
    """Allow attribute `key` on every op (used for stage facts such as a kernel's workspace)."""
    _ANNOTATIONS[key] = spec
    _ANNOTATION_VERSION[0] += 1


_ANNOTATION_VERSION = [0]


def annotation_version() -> int:
    """Changes whenever the set of annotations does (results cached on attributes key on it)."""
    return _ANNOTATION_VERSION[0]


def attribute_key(value: object) -> object:
    """An attribute value as a cache key that keeps apart what Python calls equal: ``True ==
    1 == 1.0`` (a bool given for an int attribute must not hit the int's entry) and ``-0.0
    == 0.0``. Results memoised on attributes (inference, a chain's step types) key on it."""
    if isinstance(value, tuple):
        return tuple(attribute_key(item) for item in value)
    if isinstance(value, float):
        return float, value.hex()
    return type(value), value


def get_op(name: str) -> OpDef | None:
    return _OPS.get(name)


def registered_ops() -> dict[str, OpDef]:
    return dict(_OPS)


def annotation_specs() -> dict[str, AttrSpec]:
    return dict(_ANNOTATIONS)


LEAF_KINDS = ("input", "param", "const")
"""Statements that define a value without an op: data, weights, literals."""


# --- attribute checking ----------------------------------------------------------------
def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_dim(value: object) -> bool:
    return _is_int(value) or isinstance(value, Expr)


def _coerce(kind: str, value: Any) -> Any:
    """The canonical Python value for `value` as `kind`, or raise TypeError."""
    if kind == "int" and _is_int(value):
        return value
    if kind == "float" and (_is_int(value) or isinstance(value, float)):
        return float(value)
    if kind == "bool" and isinstance(value, bool):
        return value
    if kind == "str" and isinstance(value, str):
        return value
    if kind == "dtype" and isinstance(value, DType):
        return value
    if kind in ("ints", "floats", "dims", "strs") and isinstance(value, (list, tuple)):
        item_kind = {"ints": "int", "floats": "float", "strs": "str"}.get(kind)
        if item_kind is None:
            if all(_is_dim(item) for item in value):
                return tuple(value)
            raise TypeError
        return tuple(_coerce(item_kind, item) for item in value)
    raise TypeError


KIND_TEXT = {
    "int": "an integer", "float": "a number", "bool": "true or false", "str": "a string",
    "dtype": "a dtype name", "ints": "a list of integers", "floats": "a list of numbers",
    "dims": "a list of dims", "strs": "a list of strings",
}


def check_attributes(opdef: OpDef, given: Mapping[str, Any]) -> tuple[dict, dict]:
    """Validate `given` against the op's schema and the annotations.

    Returns (canonical, full): `canonical` keeps only values that differ from their defaults
    (what a node stores and the printer writes); `full` has every schema attribute filled.
    Raises `IRTypeError` naming the attribute (the caller adds the location).
    """
    canonical: dict = {}
    for key, value in given.items():
        spec = opdef.attributes.get(key) or _ANNOTATIONS.get(key)
        if spec is None:
            known = ", ".join(opdef.attributes) or "none"
            raise _attribute_error(f"unknown attribute {key!r} for op {opdef.name!r}", key, f"one of: {known}")
        try:
            value = _coerce(spec.kind, value)
        except TypeError:
            raise _attribute_error(
                f"attribute {key!r} of {opdef.name!r} must be {KIND_TEXT[spec.kind]}, got {format_attr_value(value)}",
                key,
                KIND_TEXT[spec.kind],
            ) from None
        if spec.choices is not None and value not in spec.choices:
            raise _attribute_error(
                f"attribute {key!r} of {opdef.name!r} cannot be {format_attr_value(value)}",
                key,
                "one of " + ", ".join(format_attr_value(choice) for choice in spec.choices),
            )
        if spec.required or not _same_value(value, spec.default):
            canonical[key] = value
    full = {}
    for key, spec in opdef.attributes.items():
        if key in canonical:
            full[key] = canonical[key]
        elif spec.required:
            raise IRTypeError(f"op {opdef.name!r} needs attribute {key!r}", expected=f"{{{key} = {KIND_TEXT[spec.kind]}}}")
        else:
            full[key] = spec.default
    for key, value in canonical.items():
        full.setdefault(key, value)
    return canonical, full


def _same_value(left: object, right: object) -> bool:
    if isinstance(left, float) and isinstance(right, float) and math.isnan(left) and math.isnan(right):
        return True
    return type(left) is type(right) and left == right


def format_attr_value(value: object) -> str:
    """Canonical text of an attribute value (also used by the printer)."""
    from rlxir.symbolic import format_dim

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, DType):
        return value.value
    if isinstance(value, Expr):
        return format_dim(value)
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(format_attr_value(item) for item in value) + "]"
    return repr(value)


def format_float(value: float) -> str:
    """Shortest text that reads back as the same float, always with a '.', 'e', inf or nan."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = repr(value)
    return text if any(ch in text for ch in ".e") else text + ".0"


def dims_text(dims: Iterable[Dim]) -> str:
    from rlxir.symbolic import format_dim

    return "[" + ", ".join(format_dim(dim) for dim in dims) + "]"


