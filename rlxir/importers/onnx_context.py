"""The state of one ONNX import and the facts every converter reads: element types, the
model's opset, node attributes, static (import-time) values and symbolic dims.

`OnnxContext` maps each ONNX value name to an rlx value or a static array; converters
(registered in `rlxir.importers.onnx_registry`) read and define values through it. This
module imports nothing from the route (`rlxir.importers.onnx`) or the converters.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from rlxir.dtypes import DTYPE_NAMES, DType
from rlxir.errors import RlxError
from rlxir.importers.builder import GraphBuilder, UnsupportedModel, dtype_of_array, sanitize_name
from rlxir.symbolic import Expr, format_dim, substitute
from rlxir.types import TensorType

ONNX_DTYPES = {
    onnx.TensorProto.FLOAT: DType.f32, onnx.TensorProto.DOUBLE: DType.f64, onnx.TensorProto.FLOAT16: DType.f16,
    onnx.TensorProto.BFLOAT16: DType.bf16, onnx.TensorProto.INT64: DType.i64, onnx.TensorProto.INT32: DType.i32,
    onnx.TensorProto.INT16: DType.i16, onnx.TensorProto.INT8: DType.i8, onnx.TensorProto.UINT8: DType.u8,
    onnx.TensorProto.UINT32: DType.u32, onnx.TensorProto.BOOL: DType.bool, onnx.TensorProto.COMPLEX64: DType.c64,
}


def onnx_dtype(code: int, what: str = "a tensor") -> DType:
    dtype = ONNX_DTYPES.get(code)
    if dtype is None:
        name = onnx.TensorProto.DataType.Name(code) if code in onnx.TensorProto.DataType.values() else str(code)
        raise UnsupportedModel(f"{what} has ONNX element type {name}, which the IR has no dtype for",
                               expected="one of " + ", ".join(onnx.TensorProto.DataType.Name(c) for c in ONNX_DTYPES))
    return dtype


def load_model(model: str | Path | onnx.ModelProto) -> onnx.ModelProto:
    if isinstance(model, onnx.ModelProto):
        return model
    try:
        return onnx.load(str(model))
    except FileNotFoundError:
        raise RlxError(f"cannot read {model}: no such file") from None
    except Exception as error:  # protobuf's DecodeError and friends
        raise RlxError(f"cannot read {model} as an ONNX model: {error}", expected="an .onnx file") from None


def initializer_array(tensor: onnx.TensorProto) -> np.ndarray:
    """The values of initializer `tensor` as an array of its declared dims; a tensor whose data
    does not fill its dims (dims [8, 8] holding 16 values, or dims with no data) is an error
    that names it, not a failed reshape."""
    try:
        return numpy_helper.to_array(tensor)
    except ValueError as error:
        dims = list(tensor.dims)
        raise RlxError(f"ONNX initializer {tensor.name!r} declares dims {dims} that its data does not fill ({error})",
                       expected=f"{int(np.prod(dims, dtype=object))} values for dims {dims}") from None


NUMPY_SIZE_ERRORS = ("array is too big", "dimensions too large", "maximum allowed dimension",
                     "maximum supported dimension", "too large to convert")


def _is_numpy_size_error(error: ValueError) -> bool:
    """Whether `error` is NumPy refusing a size (an array or broadcast past 64-bit sizes)."""
    text = str(error).lower()
    return any(phrase in text for phrase in NUMPY_SIZE_ERRORS)


def op_key(node: onnx.NodeProto) -> str:
    return node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"


def node_reads(graph: onnx.GraphProto):
    """(node, the value names it reads) for every node, those inside an If's branches too
    (nested ones as well): a branch's nodes read their inputs, and the If reads the branch's
    outputs."""
    for node in graph.node:
        yield node, list(node.input)
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield from node_reads(attribute.g)
                yield node, [output.name for output in attribute.g.output]


def opset_version(model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
    return 1


def node_attributes(node: onnx.NodeProto) -> dict:
    """The node's attributes as Python values (strings decoded)."""
    values = {}
    for attribute in node.attribute:
        value = onnx.helper.get_attribute_value(attribute)
        if isinstance(value, bytes):
            value = value.decode("utf-8")
        values[attribute.name] = value
    return values


class OnnxContext:
    """The state of one import: the builder, ONNX value name -> rlx value or static array.

    A value is either *built* (an rlx value name in `values`) or *static* (a NumPy array in
    `statics`, of dtype object when it holds symbolic dims); a static value becomes a graph
    value only when an op reads it as a tensor (`value`).
    """

    def __init__(self, model: onnx.ModelProto, batch_dim: str, batch_size: int | None, name: str,
                 symbolic_batch: bool = True):
        self.symbolic_batch = symbolic_batch
        self.opset = opset_version(model)
        self._opsets = {entry.domain: entry.version for entry in model.opset_import}
        graph = model.graph
        self.batch_dim = batch_dim
        self.static_batch: int | None = None
        self.values: dict[str, str] = {}
        self.statics: dict[str, np.ndarray] = {}
        self.weights: set[str] = set()
        self.pending_pads: dict[str, tuple] = {}
        self.consumers: dict[str, list] = defaultdict(list)
        for node, operands in node_reads(graph):
            for operand in operands:
                self.consumers[operand].append(node)
        self.graph_outputs = {output.name for output in graph.output}
        self.onnx_shapes = {info.name: _onnx_shape(info) for info in (*graph.value_info, *graph.output, *graph.input)}
        self._symbols: dict[str, str] = {}
        self._batch_seen, self._first_batch = False, None
        initializers = {tensor.name: tensor for tensor in graph.initializer}
        symbols, input_types = self._input_types(graph, initializers, batch_size)
        self.builder = GraphBuilder(name, symbols)
        self.input_names: dict[str, str] = {}
        for onnx_name, type_ in input_types.items():
            self.input_names[onnx_name] = self.values[onnx_name] = self.builder.input(onnx_name, type_)
        for onnx_name, tensor in initializers.items():
            self.statics[onnx_name] = initializer_array(tensor)
            self.weights.add(onnx_name)

    # --- inputs -------------------------------------------------------------------------
    def _input_types(self, graph, initializers, batch_size) -> tuple[dict, dict]:
        symbols: dict[str, int | None] = {}
        types = {}
        for info in graph.input:
            if info.name in initializers:
                continue
            tensor_type = _input_tensor_type(info)
            dtype = onnx_dtype(tensor_type.elem_type, f"input {info.name}")
            dims = [self._input_dim(info.name, index, dim, batch_size, symbols)
                    for index, dim in enumerate(tensor_type.shape.dim)]
            types[info.name] = TensorType(dtype, dims)
        return symbols, types

    def _input_dim(self, input_name: str, index: int, dim, batch_size: int | None, symbols: dict):
        known = dim.dim_value if dim.HasField("dim_value") else None
        if known is not None and (known < 0 or (known == 0 and index == 0)):
            raise RlxError(f"ONNX input {input_name!r} has a static dim {index} of {known}",
                           expected="positive static dims (a dim_param names a dynamic one)")
        if index == 0:
            if not self._batch_seen:  # the first input's leading dim says what the batch is
                self._batch_seen, self._first_batch = True, known
            if known is not None and (known != self._first_batch or not self.symbolic_batch):
                return known
            if batch_size is not None and (known is None or known == batch_size):
                if dim.dim_param:
                    self._symbols[dim.dim_param] = str(batch_size)
                return batch_size
            if known is None:
                if dim.dim_param:
                    self._symbols[dim.dim_param] = self.batch_dim
                symbols.setdefault(self.batch_dim, None)
                return Expr.symbol(self.batch_dim)
            self.static_batch = known
            symbols[self.batch_dim] = known
            return Expr.symbol(self.batch_dim)
        if known is not None:
            return known
        label = dim.dim_param or f"{input_name}_{index}"
        if self._symbols.get(label, "").isdigit():
            return int(self._symbols[label])
        symbol = self._symbols.setdefault(label, _symbol_name(label, symbols))
        symbols.setdefault(symbol, None)
        return Expr.symbol(symbol)

    # --- values -------------------------------------------------------------------------
    def is_static(self, name: str) -> bool:
        return name in self.statics

    def static(self, name: str) -> np.ndarray | None:
        return self.statics.get(name)

    def value(self, name: str) -> str:
        """The rlx value of ONNX value `name`, making a static one a param or a const."""
        if name in self.values:
            return self.values[name]
        self.require_defined(name)
        array = concrete(self.statics[name], f"ONNX value {name!r}")
        made = self.builder.tensor(name, array, weight=name in self.weights)
        self.values[name] = made
        return made

    def require_defined(self, name: str) -> None:
        if name not in self.values and name not in self.statics:
            raise RlxError(f"ONNX value {name!r} is read before it is defined",
                           expected="a topologically sorted model whose every read value is an input, an "
                                    "initializer or an earlier node's output")

    def type(self, name: str) -> TensorType:
        if name in self.values:
            return self.builder.type(self.values[name])
        self.require_defined(name)
        array = self.statics[name]
        if array.dtype == object:
            return TensorType(DType.i64, array.shape)
        return TensorType(dtype_of_array(array), array.shape)

    def shape(self, name: str) -> tuple:
        return self.type(name).shape

    def define(self, name: str, value: str) -> None:
        self.values[name] = value

    def define_static(self, name: str, array: np.ndarray, weight: bool = False) -> None:
        self.statics[name] = normalize_static(array)
        if weight:
            self.weights.add(name)

    # --- nodes --------------------------------------------------------------------------
    def convert(self, node: onnx.NodeProto, converters: Mapping) -> None:
        converter = converters[op_key(node)]
        try:
            for name in node.input:
                # checked first, as a converter may read a shape before the value; a Pad
                # folded into this node's padding is defined by its pending entry
                if name and name not in self.pending_pads:
                    self.require_defined(name)
            self._check_schema(node)
            results = converter(self, node, node_attributes(node))
        except RlxError as error:
            label = node.name or (node.output[0] if node.output else "?")
            error.message = f"ONNX node {label!r} ({node.op_type}): {error.message}"
            raise error from None
        except (OverflowError, MemoryError, ValueError) as error:
            # a static value computed from a dim past what NumPy holds (a --batch-size near
            # 2^63 times any other dim); any other ValueError is a defect and stays one
            if not isinstance(error, (OverflowError, MemoryError)) and not _is_numpy_size_error(error):
                raise
            label = node.name or (node.output[0] if node.output else "?")
            raise RlxError(f"ONNX node {label!r} ({node.op_type}): a static shape, index or array computed "
                           f"from the dims is too large to compute ({error})",
                           expected="a smaller --batch-size") from None
        for onnx_name, result in zip(node.output, results or ()):
            if not onnx_name or result is None:
                continue
            if not isinstance(result, str):  # a static value: an array, a NumPy scalar or a dim
                result = np.array(result, dtype=object) if isinstance(result, Expr) else np.asarray(result)
                self.define_static(onnx_name, result, weight=self._derives_weight(node, result))
                continue
            self.define(onnx_name, result)
            self.check_type(onnx_name, result)

    def _check_schema(self, node: onnx.NodeProto) -> None:
        """The node against its op's ONNX schema at the model's opset: its required
        attributes present, each attribute the schema declares of the declared type (as
        ONNX's checker has it), and its input count in range. A malformed node is an error
        here, before a converter reads it (attribute values are the converters' to check)."""
        try:
            schema = onnx.defs.get_schema(node.op_type, self._opsets.get(node.domain or "", self.opset),
                                          node.domain or "")
        except onnx.defs.SchemaError:
            return
        given = {attribute.name for attribute in node.attribute}
        missing = sorted(name for name, attribute in schema.attributes.items() if attribute.required and name not in given)
        if missing:
            raise UnsupportedModel(f"the node lacks its required attribute{'s' if len(missing) > 1 else ''} "
                                   f"{', '.join(missing)}", expected=f"a {node.op_type} node as ONNX defines it")
        for attribute in node.attribute:
            declared = schema.attributes.get(attribute.name)
            if declared is not None and attribute.type != declared.type:
                given_type = onnx.AttributeProto.AttributeType.Name(attribute.type)
                raise UnsupportedModel(f"its attribute {attribute.name} is of type {given_type}",
                                       expected=f"{declared.type.name}, as ONNX defines {node.op_type}")
        if not schema.min_input <= len(node.input) <= schema.max_input:
            bound = (f"{schema.min_input}" if schema.min_input == schema.max_input
                     else f"{schema.min_input} to {schema.max_input}")
            raise UnsupportedModel(f"the node has {len(node.input)} inputs", expected=f"{bound} inputs, as ONNX defines "
                                                                                       f"{node.op_type}")
        optional = onnx.defs.OpSchema.FormalParameterOption.Optional
        for index, name in enumerate(node.input):
            formal = schema.inputs[min(index, len(schema.inputs) - 1)] if schema.inputs else None
            if not name and formal is not None and formal.option != optional:
                raise UnsupportedModel(f"its input {index} ({formal.name}) is empty, which ONNX allows only for an "
                                       "optional input", expected=f"a {node.op_type} node as ONNX defines it")

    def _derives_weight(self, node, result: np.ndarray) -> bool:
        """A float tensor evaluated from a weight (an unsqueezed BN scale) is a weight too."""
        return result.dtype.kind == "f" and any(name in self.weights for name in node.input if name)

    def check_type(self, onnx_name: str, value: str) -> None:
        """The value's type must agree with the shape ONNX inferred (where ONNX knows it)."""
        expected = self.onnx_shapes.get(onnx_name)
        if expected is None:
            return
        got = self.builder.type(value).shape
        binding = {self.batch_dim: self.static_batch} if self.static_batch is not None else {}
        got_bound = tuple(substitute(dim, binding) if isinstance(dim, Expr) else dim for dim in got)
        same_rank = len(expected) == len(got_bound)
        if same_rank and all(not isinstance(want, int) or not isinstance(have, int) or want == have
                             for want, have in zip(expected, got_bound)):
            return
        text = "[" + ", ".join(format_dim(dim) for dim in got) + "]"
        want_text = "[" + ", ".join(str(dim) if dim is not None else "?" for dim in expected) + "]"
        raise RlxError(f"the import of ONNX value {onnx_name!r} has shape {text}, but ONNX infers {want_text}",
                       expected="the shape ONNX infers (an importer bug: please report it with the model)")

    def symbol_for(self, label: str) -> str | None:
        return self._symbols.get(label)


def _input_tensor_type(info):
    """The tensor type of graph input `info`: an optional tensor is imported as the tensor
    (a run feeds it, so it holds an element); a sequence or a map has no IR type."""
    kind = info.type.WhichOneof("value")
    if kind == "tensor_type":
        return info.type.tensor_type
    if kind == "optional_type" and info.type.optional_type.elem_type.WhichOneof("value") == "tensor_type":
        return info.type.optional_type.elem_type.tensor_type
    what = {"sequence_type": "a sequence", "map_type": "a map", "optional_type": "an optional of a non-tensor",
            "sparse_tensor_type": "a sparse tensor"}.get(kind or "", "a value of no type")
    raise UnsupportedModel(f"ONNX input {info.name!r} is {what}, which the IR has no type for",
                           expected="graph inputs that are tensors (or optional tensors)")


def _onnx_shape(info) -> tuple | None:
    tensor_type = info.type.tensor_type
    if not tensor_type.HasField("shape"):
        return None
    return tuple(dim.dim_value if dim.HasField("dim_value") else None for dim in tensor_type.shape.dim)


def _symbol_name(label: str, taken: Mapping) -> str:
    base = sanitize_name(label).replace(".", "_")
    base = base if base[0].isalpha() or base[0] == "_" else "d" + base
    base = base + "_" if base in DTYPE_NAMES else base  # `f32` would read as a dtype
    name, counter = base, 0
    while name in taken:
        counter += 1
        name = f"{base}_{counter}"
    return name


def normalize_static(array) -> np.ndarray:
    """`array` as a NumPy array; an object array of plain ints becomes int64."""
    array = np.asarray(array)
    if array.dtype == object and all(isinstance(item, (int, np.integer)) for item in array.reshape(-1)):
        return array.astype(np.int64)
    return array


def concrete(array: np.ndarray, what: str) -> np.ndarray:
    """`array` without symbolic elements, or an error naming the symbols it needs."""
    array = normalize_static(array)
    if array.dtype != object:
        return array
    symbolic = sorted({format_dim(item) for item in array.reshape(-1) if isinstance(item, Expr)})
    raise UnsupportedModel(f"{what} is a tensor whose elements depend on symbolic dims ({', '.join(symbolic)}), "
                           "which the IR cannot hold as data",
                           expected="static dims: import with --batch-size N (and fixed sizes for other dims)")
