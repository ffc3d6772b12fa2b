"""Import a PyTorch module as an rlx graph, through ``torch.export`` (needs the ``torch`` extra).

`import_torch(module, args, dims=None, batch_dim="B")` exports the module with
``torch.export.export`` (non-strict), lowers the program to Core ATen with PyTorch's
decomposition table (`core_aten_decompositions`: the composites of `KEEP_WHOLE` stay whole),
and maps every op through the converter table (`rlxir.importers.torch_registry`, filled by
the ``torch_*`` converter modules this module imports). `import_program` does the same for
a program exported already. Contracts:

- **Dynamic dims.** `dims` gives, per positional argument, ``{axis: symbol}`` (a name, or a
  ``torch.export.Dim`` whose range lets export prove its guards: ``Dim("S", min=4)`` for
  ``x[:, -4:]``); by default
  axis 0 of every tensor argument is the batch symbol `batch_dim`. Those dims are exported
  as ``torch.export.Dim``s and become the graph's symbols, so reshape targets computed
  from ``x.size(0)`` read ``B``. (``torch.export`` specialises a dim whose example size is
  0 or 1: give examples of size at least 2 on every dynamic axis.)
- **Weights.** Parameters and buffers become params named by their module path
  (``layers.0.self_attn.q_proj.weight``), their values in `ImportedGraph.params`. A
  module built and exported under ``FakeTensorMode`` (a full-size model without
  allocating its weights) imports the same way; its params then have no values. A
  weight read only as the weight of ``linear`` is stored ``[in, out]`` (the IR's
  ``linear`` layout; the value is the transpose of PyTorch's ``[out, in]``); one read
  elsewhere too (a tied embedding) keeps PyTorch's layout and the matmul transposes.
- **Static values.** An op whose inputs are all known while importing (``arange`` of a
  static length, the rotary tables of a Llama) is evaluated with PyTorch and becomes a
  literal (or a param when large). Ops whose results nobody reads are dropped.
- **All or nothing, checked.** Every op is checked before anything is built; the
  unsupported ones are one `UnsupportedModel` error listing each with its count and the
  line of the model's code that first calls it (located there). An op a handler cannot
  express is an error naming the node, located at its line too. Every value's type is
  compared with the shape and dtype ``torch.export`` recorded.
"""

from __future__ import annotations

import linecache
import operator
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
import torch
import torch.fx

from rlxir.dtypes import DType
from rlxir.errors import Location, RlxError, SourceText
# each converter module registers its converters in torch_registry.CONVERTERS when imported
from rlxir.importers import (torch_bessel, torch_bessel_jy, torch_chebyshev, torch_complex,  # noqa: F401
                             torch_elementwise, torch_fft, torch_index, torch_layout, torch_linalg, torch_linalg_eig,
                             torch_linalg_ldl, torch_linalg_orth, torch_linalg_solve, torch_math,
                             torch_misc_fractional_pool, torch_misc_histogram,
                             torch_misc_loss, torch_misc_memory, torch_misc_mode, torch_misc_pool_backward,
                             torch_misc_random, torch_misc_resample, torch_misc_scalars, torch_nextafter,
                             torch_nn, torch_norm, torch_ops, torch_polynomials, torch_pool3d, torch_scatter,
                             torch_spatial, torch_special, torch_zeta)
from rlxir.importers.builder import GraphBuilder, ImportedGraph, UnsupportedModel
from rlxir.importers.torch_registry import CONVERTERS, NEVER_FOLD, Static, op_key, torch_dtype
from rlxir.symbolic import Expr, floordiv, format_dim
from rlxir.types import TensorType

FOLD_LIMIT = 1 << 20
"""Ops on static tensors are evaluated while importing when no input is larger than this."""


def import_torch(module: torch.nn.Module, args: Sequence, kwargs: Mapping | None = None, *,
                 dims: Sequence[Mapping[int, "str | torch.export.Dim"] | None] | None = None, batch_dim: str = "B",
                 name: str | None = None) -> ImportedGraph:
    """The rlx graph of `module` called on `args` (see the module docstring)."""
    args = tuple(args)
    if dims is None:
        dims = [{0: batch_dim} if isinstance(arg, torch.Tensor) else None for arg in args]
    export_dims = {}
    shapes = []
    for spec in dims:
        if not spec:
            shapes.append(None)
            continue
        shapes.append({axis: _export_dim(export_dims, symbol) for axis, symbol in spec.items()})
    try:
        with torch.no_grad():
            program = torch.export.export(module, args, dict(kwargs or {}), dynamic_shapes=tuple(shapes), strict=False)
    except Exception as error:  # torch's export errors are many classes; they are the user's to fix
        raise RlxError(f"torch.export could not export {type(module).__name__}: {type(error).__name__}: "
                       f"{str(error).splitlines()[0] if str(error) else ''}",
                       expected="a module torch.export can trace with these example inputs and dims") from None
    symbols = {}
    user_inputs = list(program.graph_signature.user_inputs)
    for input_name, spec in zip(user_inputs, dims):
        placeholder = _placeholder(program, input_name)
        for axis, symbol in (spec or {}).items():
            size = placeholder.meta["val"].shape[axis]
            if isinstance(size, torch.SymInt):
                symbols[str(size.node.expr)] = _symbol_name(symbol)
    return import_program(program, name or type(module).__name__, symbols)


def import_program(program: torch.export.ExportedProgram, name: str,
                   symbols: Mapping[str, str] | None = None) -> ImportedGraph:
    """The rlx graph of a program ``torch.export`` exported (`import_torch` after its export):
    lowered to Core ATen (`core_aten_decompositions`), then imported by `import_exported`."""
    try:
        with torch.no_grad():
            program = program.run_decompositions(core_aten_decompositions())
    except Exception as error:  # a program torch's own decompositions cannot lower
        raise UnsupportedModel(f"torch.export could not lower {name} to Core ATen: {type(error).__name__}: "
                               f"{str(error).splitlines()[0] if str(error) else ''}",
                               expected="a program torch.export's Core ATen decompositions can lower") from None
    return import_exported(program, name, symbols or {})


KEEP_WHOLE = frozenset({
    "aten.linear", "aten.matmul", "aten.scaled_dot_product_attention", "aten._scaled_dot_product_flash_attention_for_cpu",
    "aten.layer_norm", "aten.rms_norm",
    "aten.silu", "aten.hardswish", "aten.hardsigmoid", "aten.softplus", "aten.max_pool2d",
    "aten.adaptive_avg_pool2d", "aten.pad", "aten.roll",
})
"""Composite ops the importer maps whole to core ops of the IR (``linear`` keeps its weight a
param stored ``[in, out]``, ``scaled_dot_product_attention`` is the IR's ``attention``,
``layer_norm`` its ``layernorm``): PyTorch's Core ATen decomposition leaves them as they are."""


def core_aten_decompositions() -> dict:
    """PyTorch's Core ATen decomposition table without the ops of `KEEP_WHOLE`: every other
    composite op is lowered to Core ATen ops (and in-place ops to their pure forms)."""
    table = torch.export.default_decompositions()
    for overload in list(table.keys()):
        if op_key(overload) in KEEP_WHOLE:
            del table[overload]
    return table


def _symbol_name(symbol) -> str:
    return symbol if isinstance(symbol, str) else symbol.__name__


def _export_dim(export_dims: dict, symbol):
    """The ``torch.export.Dim`` of a symbol: one per name; a given Dim keeps its range."""
    name = _symbol_name(symbol)
    if name not in export_dims:
        export_dims[name] = torch.export.Dim(symbol) if isinstance(symbol, str) else symbol
    return export_dims[name]


def _placeholder(program, input_name: str) -> torch.fx.Node:
    return next(node for node in program.graph.nodes if node.op == "placeholder" and node.name == input_name)


def import_exported(program: torch.export.ExportedProgram, name: str, symbols: Mapping[str, str]) -> ImportedGraph:
    """The rlx graph of an exported program; `symbols` names its dynamic dims
    (torch's symbol, e.g. ``s77`` -> ``B``)."""
    graph = program.graph
    live = _live_nodes(graph)
    unsupported = [node for node in graph.nodes if node.op == "call_function" and node in live
                   and op_key(node.target) not in CONVERTERS and not makes_constant(node)]
    if unsupported:
        raise _unsupported_ops(name, unsupported, sorted(CONVERTERS))
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    context = TorchContext(program, name, symbols)
    with unset_fake_temporarily():  # folding computes with real tensors, even inside a FakeTensorMode
        for node in graph.nodes:
            if node.op == "placeholder":
                context.placeholder(node)
            elif node.op == "call_function" and node in live:
                context.call(node, CONVERTERS.get(op_key(node.target), _no_converter))
        output = next(node for node in graph.nodes if node.op == "output")
        results = torch.fx.node.map_arg(output.args[0], lambda node: node)
        names = [str(spec.arg.name) for spec in program.graph_signature.output_specs]
        outputs = {}
        for label, result in zip(names, results):
            outputs[label] = context.value(context.resolve(result), label)
    return context.builder.finish(list(outputs.values()), context.input_names, outputs)


def makes_constant(node: torch.fx.Node) -> bool:
    """An ATen op that reads no tensor (only numbers and shapes), draws no random numbers and
    makes a tensor (``linspace``, ``eye``, ``arange``): evaluated with PyTorch while
    importing, a constant of the graph, whether or not a converter knows it."""
    target = node.target
    return (isinstance(target, torch._ops.OpOverload) and torch.Tag.nondeterministic_seeded not in target.tags
            and isinstance(node.meta.get("val"), torch.Tensor)
            and not any(isinstance(arg.meta.get("val"), torch.Tensor) for arg in node.all_input_nodes))


def _no_converter(ctx, node, args, kwargs):
    raise UnsupportedModel(f"{op_key(node.target)} over symbolic dims (it is evaluated while importing only "
                           "when every argument is a number)", expected="static arguments")


def _unsupported_ops(name: str, nodes: list, supported: list) -> UnsupportedModel:
    """One error for every op type without a handler: each with its count and where the
    model's code first calls it; located at the first of them."""
    counts = Counter(op_key(node.target) for node in nodes)
    first_sites = {}
    for node in nodes:  # locating a node reads its source file: once per op
        if op_key(node.target) not in first_sites:
            first_sites[op_key(node.target)] = node_location(node)
    listed = ", ".join(f"{op} x{count}" + (f" (first at {_short(first_sites[op])})" if first_sites[op] else "")
                       for op, count in sorted(counts.items()))
    ops = f"{len(counts)} PyTorch op{'s have' if len(counts) > 1 else ' has'}"
    return UnsupportedModel(f"cannot import {name}: {ops} no rlx mapping: {listed}",
                            first_sites[op_key(nodes[0].target)],
                            expected="ops rlxir imports: " + ", ".join(supported))


def node_location(node: torch.fx.Node) -> Location | None:
    """Where the model's code made `node`: the innermost frame of the stack torch.export
    recorded (``node.meta["stack_trace"]``) outside torch itself (a user's ``self.pool(x)``,
    not the ``F.max_pool2d`` inside ``nn.MaxPool2d``); None when none was recorded."""
    frames = [(file, int(line)) for file, line in _FRAME.findall(node.meta.get("stack_trace") or "")]
    if not frames:
        return None
    torch_root = os.path.dirname(torch.__file__) + os.sep
    outside = [frame for frame in frames if not frame[0].startswith(torch_root)]
    file, line = (outside or frames)[-1]
    lines = linecache.getlines(file)
    if not 1 <= line <= len(lines):
        return Location(file, line, 1)
    code = lines[line - 1]
    return Location(file, line, len(code) - len(code.lstrip()) + 1, SourceText(file, "".join(lines)))


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _short(location: Location) -> str:
    return f"{os.path.basename(location.file)}:{location.line}"


def _live_nodes(graph: torch.fx.Graph) -> set:
    """Nodes the outputs depend on (export leaves dead shape arithmetic behind)."""
    live: set = set()
    stack = [node for node in graph.nodes if node.op == "output"]
    while stack:
        node = stack.pop()
        if node in live:
            continue
        live.add(node)
        stack.extend(node.all_input_nodes)
    return live


class TorchContext:
    """fx node name -> rlx value name, `Static` tensor, or a Python value (ints, dims, lists)."""

    def __init__(self, program, name: str, symbols: Mapping[str, str]):
        declared = {symbol: None for symbol in dict.fromkeys(symbols.values())}
        self.builder = GraphBuilder(name, declared)
        self.symbols = dict(symbols)
        self.env: dict[str, object] = {}
        self.made: dict[str, str] = {}
        self.input_names: dict[str, str] = {}
        signature = program.graph_signature
        self.weight_names = {**signature.inputs_to_parameters, **signature.inputs_to_buffers,
                             **signature.inputs_to_lifted_tensor_constants}
        self.tensors = {**program.state_dict, **program.constants}
        self.linear_only = {node.name for node in program.graph.nodes
                            if node.op == "placeholder" and node.name in self.weight_names and node.users
                            and all(_reads_as_linear_weight(user, node) for user in node.users)}

    # --- nodes --------------------------------------------------------------------------
    def placeholder(self, node: torch.fx.Node) -> None:
        if node.name in self.weight_names:
            target = self.weight_names[node.name]
            self.env[node.name] = Static(target, self.tensors[target].detach(), weight=True)
            return
        value = node.meta["val"]
        if not isinstance(value, torch.Tensor):
            raise UnsupportedModel(f"input {node.name} is a {type(value).__name__}", expected="tensor inputs")
        type_ = TensorType(torch_dtype(value.dtype), tuple(self.dim(size) for size in value.shape))
        self.env[node.name] = self.input_names[node.name] = self.builder.input(node.name, type_)

    def call(self, node: torch.fx.Node, handler) -> None:
        args = [self.resolve(arg) for arg in node.args]
        kwargs = {key: self.resolve(arg) for key, arg in node.kwargs.items()}
        try:
            result = self._fold(node, args, kwargs)
            if result is None:
                result = handler(self, node, args, kwargs)
        except RlxError as error:
            error.message = f"PyTorch node {node.name} ({op_text(node.target)}): {error.message}"
            raise error.with_location(node_location(node)) from None
        except (TypeError, ValueError, IndexError, KeyError, RuntimeError) as error:
            # arguments a handler did not foresee: still one located error naming the node, never a traceback
            raise UnsupportedModel(f"PyTorch node {node.name} ({op_text(node.target)}): cannot import its arguments "
                                   f"({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})",
                                   node_location(node),
                                   expected="arguments the importer handles (an importer gap: please report it "
                                            "with the model)") from error
        self.env[node.name] = result
        if isinstance(result, str):
            self.check_type(node, result)

    def _fold(self, node: torch.fx.Node, args, kwargs):
        """Evaluate the op with PyTorch when every tensor it reads is static (and small)."""
        leaves = [leaf for leaf in _leaves((args, kwargs))]
        if op_key(node.target) in NEVER_FOLD or any(isinstance(leaf, (str, Expr)) for leaf in leaves):
            return None
        statics = [leaf for leaf in leaves if isinstance(leaf, Static)]
        if not statics and not makes_constant(node):
            return None
        if any(leaf.fake or leaf.tensor.numel() > FOLD_LIMIT for leaf in statics):
            return None

        def unwrap(item):
            return item.tensor if isinstance(item, Static) else item

        result = node.target(*_map(args, unwrap), **_map(kwargs, unwrap))
        weight = any(leaf.weight for leaf in statics)
        return _map(result, lambda item: Static(node.name, item, weight and item.is_floating_point())
                    if isinstance(item, torch.Tensor) else item)

    def resolve(self, arg):
        """An fx argument with nodes replaced by what they are here."""
        return torch.fx.node.map_aggregate(arg, lambda item: self.env[item.name] if isinstance(item, torch.fx.Node)
                                           else item)

    # --- values -------------------------------------------------------------------------
    def value(self, item, hint: str = "t", dtype: DType | None = None) -> str:
        """`item` as an rlx value: a value name as is, a `Static` tensor made a param or a
        literal (once), a Python number a scalar const of `dtype`."""
        if isinstance(item, str):
            return item
        if isinstance(item, Static):
            key = f"{item.node}:{id(item.tensor)}"
            if key not in self.made:
                self.made[key] = self._weight(item, transposed=False)
            return self.made[key]
        if isinstance(item, (bool, int, float)) and not isinstance(item, Expr):
            return self.builder.scalar(item, dtype or _scalar_dtype(item))
        if isinstance(item, Expr):
            raise UnsupportedModel(f"the symbolic dim {format_dim(item)} is used as data",
                                   expected="dims that are only shapes (bind the symbol before exporting)")
        raise UnsupportedModel(f"cannot use {item!r} as a tensor")

    def linear_weight(self, item: Static) -> str:
        """A weight read only by ``linear``: a param stored [in, out]."""
        key = f"{item.node}:T"
        if key not in self.made:
            self.made[key] = self._weight(item, transposed=True)
        return self.made[key]

    def _weight(self, item: Static, transposed: bool) -> str:
        dtype = torch_dtype(item.tensor.dtype)
        if item.fake:  # a shape without values: a param the caller feeds (or the interpreter fills)
            shape = tuple(item.tensor.shape)
            return self.builder.param_of_type(item.node, TensorType(dtype, shape[::-1] if transposed else shape))
        array = _numpy(item.tensor)
        return self.builder.tensor(item.node, array.T if transposed else array, weight=item.weight, dtype=dtype)

    def type(self, item) -> TensorType:
        if isinstance(item, Static):
            return TensorType(torch_dtype(item.tensor.dtype), tuple(item.tensor.shape))
        if isinstance(item, str):
            return self.builder.type(item)
        return TensorType(_scalar_dtype(item), ())

    def dim(self, size) -> object:
        """A torch size (int or SymInt) as an rlx dim."""
        if isinstance(size, int):
            return size
        return sympy_dim(size.node.expr, self.symbols)

    def check_type(self, node: torch.fx.Node, value: str) -> None:
        meta = node.meta.get("val")
        if not isinstance(meta, torch.Tensor):
            return
        got = self.builder.type(value)
        try:
            shape = tuple(self.dim(size) for size in meta.shape)
        except UnsupportedModel:
            return
        want = TensorType(torch_dtype(meta.dtype), shape)
        if got != want:
            raise RlxError(f"the import of PyTorch node {node.name} ({op_text(node.target)}) is {got}, but "
                           f"torch.export recorded {want}", node_location(node),
                           expected="the recorded type (an importer bug: please report it with the model)")


def _numpy(tensor: torch.Tensor) -> np.ndarray:
    """A tensor's values as row-major NumPy (bf16 as float32, as the interpreter holds it;
    a strided tensor, ``empty_strided``'s, copied contiguous)."""
    tensor = tensor.detach().cpu()
    array = (tensor.float() if tensor.dtype == torch.bfloat16 else tensor).numpy()
    return array if array.flags.c_contiguous else array.copy(order="C")


def _reads_as_linear_weight(user: torch.fx.Node, weight: torch.fx.Node) -> bool:
    target = str(user.target)
    return target.startswith("aten.linear.") and len(user.args) > 1 and user.args[1] is weight


def _scalar_dtype(item) -> DType:
    if isinstance(item, bool):
        return DType.bool
    return DType.i64 if isinstance(item, int) else DType.f32


def _leaves(tree):
    if isinstance(tree, (list, tuple)):
        for item in tree:
            yield from _leaves(item)
    elif isinstance(tree, dict):
        for item in tree.values():
            yield from _leaves(item)
    else:
        yield tree


def _map(tree, function):
    if isinstance(tree, (list, tuple)):
        return type(tree)(_map(item, function) for item in tree) if not hasattr(tree, "_fields") else tree
    if isinstance(tree, dict):
        return {key: _map(item, function) for key, item in tree.items()}
    return function(tree)


def op_text(target) -> str:
    return str(target) if not callable(target) or hasattr(target, "_schema") else f"operator.{target.__name__}"


def sympy_dim(expr, symbols: Mapping[str, str]):
    """A torch size expression (sympy) as an rlx dim, over the named symbols."""
    import sympy

    if isinstance(expr, sympy.Integer):
        return int(expr)
    if isinstance(expr, sympy.Symbol):
        if str(expr) not in symbols:
            raise UnsupportedModel(f"the dim {expr} is dynamic but has no name",
                                   expected="dims= naming every dynamic dim")
        return Expr.symbol(symbols[str(expr)])
    parts = [sympy_dim(arg, symbols) for arg in expr.args]
    if isinstance(expr, sympy.Add):
        return _reduce(operator.add, parts)
    if isinstance(expr, sympy.Mul):
        return _reduce(operator.mul, parts)
    if type(expr).__name__ == "FloorDiv":
        return floordiv(parts[0], parts[1])
    if isinstance(expr, sympy.Pow) and isinstance(parts[1], int) and parts[1] >= 0:
        return _reduce(operator.mul, [parts[0]] * parts[1]) if parts[1] else 1
    raise UnsupportedModel(f"the size expression {expr}", expected="sums, products and floor divisions of dims")


def _reduce(function, items):
    result = items[0]
    for item in items[1:]:
        result = function(result, item)
    return result


__all__ = ["import_torch", "import_program", "import_exported", "torch_dtype", "Static", "TorchContext"]
