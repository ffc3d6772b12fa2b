"""Building an rlx graph from a foreign model: value names, weights and literals.

Both importers (ONNX, PyTorch) write through one `GraphBuilder`, so they agree on:

- **names**: a foreign name becomes a value name of the IR's identifier rules
  (`sanitize_name`), unique in the graph (a repeat gets ``.1``, ``.2``, ... in the order
  values are made, so an import is deterministic);
- **weights**: a static tensor of more than `LITERAL_LIMIT` elements, and every weight the
  model itself names (an ONNX initializer, a module's parameter or buffer), becomes a
  ``param`` whose value is kept in `ImportedGraph.params`; a smaller static tensor is a
  ``const`` literal, so the graph runs on its own (`rlxir run`) wherever only weights are
  missing;
- **scalars**: one const per (dtype, value), made where first used.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import attrs
import numpy as np

from rlxir.dtypes import DType
from rlxir.errors import RlxError
from rlxir.ir.graph import Graph
from rlxir.types import TensorType

LITERAL_LIMIT = 64
"""Static tensors of at most this many elements are written into the graph as literals."""

_NUMPY_DTYPES = {
    np.dtype("float64"): DType.f64, np.dtype("float32"): DType.f32, np.dtype("float16"): DType.f16,
    np.dtype("int64"): DType.i64, np.dtype("int32"): DType.i32, np.dtype("int16"): DType.i16,
    np.dtype("int8"): DType.i8, np.dtype("uint8"): DType.u8, np.dtype("uint32"): DType.u32,
    np.dtype("bool"): DType.bool, np.dtype("complex64"): DType.c64,
}


class UnsupportedModel(RlxError):
    """A model (or part of one) the importer cannot express in the IR."""


@attrs.frozen
class ImportedGraph:
    """What an importer produced.

    - `graph`: the rlx graph (verified).
    - `params`: the value of every param, by value name, in the param's NumPy dtype
      (ready for `rlxir.interpret(graph, params=...)`); large splats are read-only views.
    - `inputs`, `outputs`: the model's own input and output names -> value names.
    - `notes`: what the import decided that the user should know (each one sentence), such
      as a batch kept static.
    """

    graph: Graph
    params: Mapping[str, np.ndarray]
    inputs: Mapping[str, str]
    outputs: Mapping[str, str]
    notes: tuple[str, ...] = ()


def sanitize_name(text: str) -> str:
    """`text` as a value name: ``[A-Za-z0-9_.]``, path separators as dots, no empty parts.

    ``gpu_0/conv1_w_0`` -> ``gpu_0.conv1_w_0``; ``/layer.0/Add_output_0`` ->
    ``layer.0.Add_output_0``; a name that starts with a digit and is not all digits gets a
    ``v`` in front (``0abc`` -> ``v0abc``; ``123`` stays: ``%123`` is a valid value).
    """
    name = re.sub(r"[/:]", ".", text)
    name = re.sub(r"[^A-Za-z0-9_.]", "_", name)
    name = re.sub(r"\.{2,}", ".", name).strip(".")
    if not name:
        return "v"
    if name[0].isdigit() and not name.isdigit():
        return "v" + name
    return name


def dtype_of_array(array: np.ndarray) -> DType:
    dtype = _NUMPY_DTYPES.get(np.asarray(array).dtype)
    if dtype is None:
        raise UnsupportedModel(f"the IR has no element type for {np.asarray(array).dtype} data",
                           expected="one of " + ", ".join(str(d) for d in _NUMPY_DTYPES))
    return dtype


def shortest_float(value: float, dtype: DType = DType.f32) -> float:
    """`value` as the shortest decimal that reads back to the same `dtype` number.

    An f32 ``1e-5`` arrives as the double ``9.999999747378752e-06``; written as ``1e-05``
    it means the same f32 and reads like the model's source.
    """
    if dtype in (DType.f32, DType.bf16):
        return float(str(np.float32(value)))
    if dtype is DType.f16:
        return float(str(np.float16(value)))
    return float(value)


def literal_of(array: np.ndarray, dtype: DType):
    """The `add_const` value of `array`: a splat scalar when all elements are equal, else a
    flat row-major tuple of Python numbers."""
    flat = np.asarray(array).reshape(-1)
    convert = _python_scalar(dtype)
    if flat.size and (flat.size == 1 or _is_splat(flat)):
        return convert(flat[0])
    return tuple(convert(item) for item in flat)


def _is_splat(flat: np.ndarray) -> bool:
    if flat.size and flat.strides == (0,):  # a broadcast view of one element (a splat made lazily)
        return True
    first = flat[:1]
    if flat.dtype.kind == "f":
        return bool(np.all(flat.view(np.uint8).reshape(flat.size, -1) == first.view(np.uint8)))
    return bool(np.all(flat == first))


def _steps_evenly(flat: np.ndarray) -> bool:
    """An arithmetic progression that goes up (position ids, strided slice indices)."""
    steps = np.diff(flat)
    return bool(steps.size and steps[0] > 0 and np.all(steps == steps[0]))


def _python_scalar(dtype: DType):
    if dtype is DType.bool:
        return bool
    if dtype.is_integer:
        return int
    if dtype.is_complex:
        raise UnsupportedModel("complex literals cannot be written in the IR", expected="a real dtype")
    return lambda item: shortest_float(float(item), dtype)


class GraphBuilder:
    """Adds values to one graph under sanitized, unique names and records param values."""

    def __init__(self, name: str, symbols: Mapping[str, int | None] | None = None):
        self.graph = Graph(sanitize_name(name), symbols)
        self.params: dict[str, np.ndarray] = {}
        self._scalars: dict[tuple, str] = {}

    def fresh(self, hint: str) -> str:
        return self.graph.fresh_name(sanitize_name(hint))

    def input(self, hint: str, type_: TensorType) -> str:
        return self.graph.add_input(self.fresh(hint), type_)

    def param(self, hint: str, array: np.ndarray, dtype: DType | None = None) -> str:
        """A param holding `array`, of `dtype` (default: the array's; bf16 values are float32).

        An integer param whose values are all non-negative carries their bound as its
        `fill_limit` (values + 1), so a run on default fills (no ``--params``) draws indices
        that address the same tables the model's own values do (token-type and position ids
        reach their gather through arithmetic that the graph's own index analysis does not
        follow)."""
        array = np.asarray(array)
        type_ = TensorType(dtype or dtype_of_array(array), array.shape)
        name = self.graph.add_param(self.fresh(hint), type_, attrs=value_bound(array, type_.dtype))
        self.params[name] = array
        return name

    def param_of_type(self, hint: str, type_: TensorType) -> str:
        """A param whose value is not known (a weight of a module built without values)."""
        return self.graph.add_param(self.fresh(hint), type_)

    def literal(self, hint: str, array: np.ndarray, dtype: DType | None = None) -> str:
        """A const holding `array` (a splat when every element is equal)."""
        array = np.asarray(array)
        dtype = dtype or dtype_of_array(array)
        return self.graph.add_const(self.fresh(hint), TensorType(dtype, array.shape), literal_of(array, dtype))

    def tensor(self, hint: str, array: np.ndarray, weight: bool = False, dtype: DType | None = None) -> str:
        """A static tensor: a param when it is a named `weight` (of more than one element);
        otherwise a literal when small, a splat when every element is equal, a running sum
        when it counts up in equal steps (position ids, strided indices), and a param only
        when none of these is."""
        array = np.asarray(array)
        if weight and array.size > 1:
            return self.param(hint, array, dtype)
        if array.size <= LITERAL_LIMIT or _is_splat(array.reshape(-1)):
            return self.literal(hint, array, dtype)
        if array.dtype.kind in "iu" and _steps_evenly(array.reshape(-1)):
            return self._count(hint, array, dtype or dtype_of_array(array))
        return self.param(hint, array, dtype)

    def _count(self, hint: str, array: np.ndarray, dtype: DType) -> str:
        """``start, start + step, ...`` in `array`'s shape: an exclusive cumsum of steps."""
        flat = array.reshape(-1)
        step = int(flat[1] - flat[0])
        steps = self.splat(f"{hint}.ones" if step == 1 else f"{hint}.steps", step, TensorType(dtype, (array.size,)))
        count = self.op("cumsum", [steps], {"axis": 0, "exclusive": True}, hint=f"{hint}.count")
        start = int(flat[0])
        if start:
            count = self.op("add", [count, self.scalar(start, dtype)], hint=f"{hint}.shifted")
        if array.ndim == 1:
            return count
        return self.op("reshape", [count], {"shape": array.shape}, hint=hint)

    def splat(self, hint: str, value, type_: TensorType) -> str:
        """A const of `type_` (static or symbolic shape) whose every element is `value`."""
        convert = _python_scalar(type_.dtype)
        return self.graph.add_const(self.fresh(hint), type_, convert(value))

    def scalar(self, value, dtype: DType) -> str:
        """The rank-0 const `value` of `dtype`, shared by every use."""
        convert = _python_scalar(dtype)
        key = (dtype, repr(convert(value)))
        if key not in self._scalars:
            text = re.sub(r"[^A-Za-z0-9]", "_", repr(convert(value)).replace("-", "m").replace(".", "p"))
            self._scalars[key] = self.graph.add_const(self.fresh(f"c.{dtype.value}.{text}"), TensorType(dtype, ()),
                                                      convert(value))
        return self._scalars[key]

    def op(self, op: str, operands: Iterable[str], attrs: Mapping | None = None, hint: str | None = None) -> str:
        return self.graph.add_op(op, tuple(operands), attrs or {}, name=self.fresh(hint or op))

    def type(self, value: str) -> TensorType:
        return self.graph.type(value)

    def finish(self, outputs: Iterable[str], inputs: Mapping[str, str],
               foreign_outputs: Mapping[str, str]) -> ImportedGraph:
        from rlxir.ir.verifier import verify

        self.graph.set_outputs(list(outputs))
        verify(self.graph)
        return ImportedGraph(self.graph, dict(self.params), dict(inputs), dict(foreign_outputs))


def value_bound(array: np.ndarray, dtype: DType) -> dict:
    """``{"fill_limit": max + 1}`` for integer values that are all non-negative, else ``{}``."""
    if not dtype.is_integer or array.size == 0 or array.dtype.kind not in "iu" or int(array.min()) < 0:
        return {}
    return {"fill_limit": int(array.max()) + 1}


def gather_leading_axes(builder: GraphBuilder, data: str, parts: list[str], hint: str,
                        index_shape: tuple | None = None) -> str:
    """`data[parts[0], parts[1], ...]` for integer index values that address the leading axes
    of `data` and broadcast with each other (ONNX GatherND, PyTorch advanced indexing): those
    axes are flattened into one and indexed by the row-major linear index (`linear_index`).
    `index_shape`, when given, is the linear index's shape before the gather (GatherND drops
    its index axis)."""
    linear = linear_index(builder, builder.type(data).shape, parts, hint)
    if index_shape is not None:
        linear = builder.op("reshape", [linear], {"shape": list(index_shape)}, hint=f"{hint}.linear")
    return builder.op("gather", [flatten_leading_axes(builder, data, len(parts), hint), linear], {"axis": 0},
                      hint=hint)


def linear_index(builder: GraphBuilder, shape: tuple, parts: list[str], hint: str) -> str:
    """The row-major position, among the leading ``len(parts)`` axes of `shape` flattened, of
    the index values `parts` (one per axis, broadcasting with each other). Negative indices
    wrap on static dims (a symbolic dim's size is not a value to add)."""
    depth = len(parts)
    strides = [1] * depth
    for axis in range(depth - 2, -1, -1):
        strides[axis] = strides[axis + 1] * shape[axis + 1]
    if any(not isinstance(stride, int) for stride in strides):
        raise UnsupportedModel(f"indexing the leading {depth} axes of {list(shape)} over a symbolic inner dim",
                               expected="static dims after the first indexed one")
    linear = None
    for axis, part in enumerate(parts):
        dtype = builder.type(part).dtype
        if isinstance(shape[axis], int):
            negative = builder.op("lt", [part, builder.scalar(0, dtype)], hint=f"{hint}.neg")
            wrapped = builder.op("add", [part, builder.scalar(shape[axis], dtype)], hint=f"{hint}.wrap")
            part = builder.op("where", [negative, wrapped, part], hint=f"{hint}.i{axis}")
        if strides[axis] != 1:
            part = builder.op("mul", [part, builder.scalar(strides[axis], dtype)], hint=f"{hint}.s{axis}")
        linear = part if linear is None else builder.op("add", [linear, part], hint=f"{hint}.linear")
    return linear


def flatten_leading_axes(builder: GraphBuilder, data: str, depth: int, hint: str) -> str:
    """`data` with its first `depth` axes merged into one (itself when `depth` is 1)."""
    shape = builder.type(data).shape
    if depth == 1:
        return data
    rows = shape[0]
    for dim in shape[1:depth]:
        rows = rows * dim
    return builder.op("reshape", [data], {"shape": [rows, *shape[depth:]]}, hint=f"{hint}.flat")


def pad_axis(builder: GraphBuilder, value: str, axis: int, before: int, after: int, fill, hint: str) -> str:
    """`value` with `before` and `after` cells of `fill` concatenated along `axis` (splats
    named ``{hint}.before{axis}`` and ``{hint}.after{axis}``); a negative amount crops that
    many cells instead (a ``slice``). `value` itself when both are 0."""
    if before < 0 or after < 0:
        size = builder.type(value).shape[axis]
        start = max(-before, 0)
        value = builder.op("slice", [value], {"axis": axis, "start": start, "len": size - start - max(-after, 0)},
                           hint=f"{hint}.crop{axis}")
        before, after = max(before, 0), max(after, 0)
    if not before and not after:
        return value
    type_ = builder.type(value)
    pieces = []
    for side, width in (("before", before), ("after", after)):
        shape = list(type_.shape)
        shape[axis] = width
        pieces.append(builder.splat(f"{hint}.{side}{axis}", fill, TensorType(type_.dtype, shape)) if width else None)
    operands = [piece for piece in (pieces[0], value, pieces[1]) if piece is not None]
    return builder.op("concat", operands, {"axis": axis}, hint=hint)


def round_half_even(builder: GraphBuilder, x: str, hint: str) -> str:
    """The float `x` rounded to the nearest whole number, a tie to the even one (ONNX's and
    NumPy's rounding; no core op rounds): ``floor(x + 0.5)``, less one on an odd tie."""
    dtype = builder.type(x).dtype
    half_up = builder.op("add", [x, builder.scalar(0.5, dtype)], hint=f"{hint}.half_up")
    nearest = builder.op("floor", [half_up], hint=f"{hint}.up")
    gap = builder.op("sub", [nearest, x], hint=f"{hint}.gap")
    tie = builder.op("eq", [gap, builder.scalar(0.5, dtype)], hint=f"{hint}.tie")
    parity = builder.op("fmod", [nearest, builder.scalar(2.0, dtype)], hint=f"{hint}.parity")
    odd = builder.op("ne", [parity, builder.scalar(0.0, dtype)], hint=f"{hint}.odd")
    lower = builder.op("sub", [nearest, builder.scalar(1.0, dtype)], hint=f"{hint}.down")
    even = builder.op("where", [odd, lower, nearest], hint=f"{hint}.even")
    return builder.op("where", [tie, even, nearest], hint=hint)
