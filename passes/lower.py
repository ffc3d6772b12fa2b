"""lower: annotate every op with what the planner needs (the LIR; contract in docs/lir.md)."""

from __future__ import annotations

import attrs

from rlxir.errors import UnboundSymbolError
from rlxir.ir.graph import Graph
from rlxir.ir.graph_reading import SharedAttrs
from rlxir.ops import LEAF_KINDS, annotations
from rlxir.ops.core import normalize_axis
from rlxir.pass_machinery.pass_base import Pass, PassContext, PassError, option, register_pass
from rlxir.symbolic import evaluate, mul
from rlxir.targets.target import Target


KERNELS = annotations.KERNELS
LIR_ANNOTATIONS = annotations.LIR_ANNOTATIONS

OP_KERNELS = {
    "matmul": "gemm", "linear": "gemm", "fused_matmul_bias_act": "gemm",
    "fused_elementwise": "region",
    "reduce_sum": "reduce", "reduce_mean": "reduce", "reduce_max": "reduce", "reduce_min": "reduce",
    "softmax": "softmax",
    "layernorm": "norm", "rmsnorm": "norm", "batchnorm": "norm",
    "fused_residual_layernorm": "norm", "fused_residual_rmsnorm": "norm",
    "transpose": "copy", "expand": "copy", "concat": "copy", "slice": "copy",
    "gather": "gather", "gather_elements": "gather", "scatter_elements": "gather", "topk": "reduce",
    "conv2d": "conv", "max_pool2d": "pool", "avg_pool2d": "pool",
    "attention": "attention", "cumsum": "scan", "selective_scan": "scan",
}
SIDE_BUFFERS = {"gemm": "blas_workspace", "conv": "dnn_workspace"}
"""Kernel family -> the side buffer its library call uses, on targets that declare it."""

ATTENTION_STAT_BYTES = 2 * 4  # a running max and sum per softmax row, in f32


def element_bytes(target: Target, graph: Graph, value: str) -> int:
    """Bytes per element of `value` under the target's sizing rule."""
    return 4 if target.sizing == "f32" else graph.type(value).dtype.itemsize


NODE_DEPENDENT = frozenset({"reshape", "cast", "slice", "attention", "conv2d", "selective_scan"})
"""The ops whose LIR depends on the node (`is_view` may hold, `workspace_bytes` may be
non-zero); every other op's LIR depends on its op alone."""


def is_view(graph: Graph, node: str) -> bool:
    """reshape, a cast to the same dtype, and a slice on axis 0 alias their operand."""
    op = graph.op(node)
    if op == "reshape":
        return True
    if op == "cast":
        return graph.attr(node, "to") is graph.type(graph.operands(node)[0]).dtype
    if op == "slice":
        return normalize_axis(graph.attr(node, "axis"), graph.type(node).rank) == 0
    return False


def kernel_of(graph: Graph, node: str) -> str:
    if is_view(graph, node):
        return "view"
    op = graph.op(node)
    if op in OP_KERNELS:
        return OP_KERNELS[op]
    opdef = graph.opdef(node)
    return "elementwise" if opdef is not None and opdef.has("elementwise") else "custom"


class _Sizer:
    """Numbers from dims, with the symbols bound; an unbound one is an error at the node."""

    def __init__(self, graph: Graph, bindings: dict):
        self.graph = graph
        self.values = graph.bound_symbols(bindings)

    def product(self, node: str, what: str, *dims) -> int:
        total = 1
        for dim in dims:
            total = mul(total, dim)
        try:
            return evaluate(total, self.values, context=f"in the {what} of %{node} = {self.graph.op(node)}")
        except UnboundSymbolError as error:
            raise error.with_location(self.graph.location(node)) from None


def view_offset(graph: Graph, node: str, target: Target, sizer: _Sizer) -> int:
    """Bytes from the operand's start to the view's: `start` rows for an axis-0 slice."""
    if graph.op(node) != "slice" or graph.attr(node, "start") == 0:
        return 0
    source = graph.operands(node)[0]
    row = graph.type(source).shape[1:]
    return sizer.product(node, "view offset", graph.attr(node, "start"), element_bytes(target, graph, node), *row)


def workspace_bytes(graph: Graph, node: str, target: Target, sizer: _Sizer) -> int:
    """The kernel's scratch during its step (docs/lir.md says why each one)."""
    op = graph.op(node)
    if op == "attention":
        batch, heads, queries = graph.type(graph.operands(node)[0]).shape[:3]
        return sizer.product(node, "softmax row statistics", batch, heads, queries, ATTENTION_STAT_BYTES)
    if op == "conv2d" and target.conv_im2col:
        x, weight = (graph.type(value) for value in graph.operands(node)[:2])
        batch, _, out_height, out_width = graph.type(node).shape
        columns = (x.shape[1], weight.shape[2], weight.shape[3])
        return sizer.product(node, "im2col workspace", batch, *columns, out_height, out_width,
                             element_bytes(target, graph, node))
    if op == "selective_scan" and graph.attrs(node).get("scan_kernel"):
        batch, steps, hidden = graph.type(node).shape
        state = graph.type(graph.operands(node)[2]).shape[1]
        return sizer.product(node, "saved state trajectory", batch, steps, hidden, state,
                             element_bytes(target, graph, node))
    return 0


def _check_no_clash(graph: Graph, node: str) -> None:
    """An op whose own schema uses an LIR key cannot carry the annotation (the schema wins)."""
    opdef = graph.opdef(node)
    clash = sorted(key for key in LIR_ANNOTATIONS if opdef is not None and key in opdef.attributes)
    if clash:
        raise PassError(f"cannot lower %{node} = {graph.op(node)}: its attribute {clash[0]!r} is also an LIR key",
                        graph.location(node), "a custom op whose attributes avoid: " + ", ".join(LIR_ANNOTATIONS))


def annotations(graph: Graph, node: str, target: Target, sizer: _Sizer, roots: dict) -> dict:
    """The LIR attributes of op `node`; records in `roots` which buffer it lives in
    (value -> (root buffer, byte offset)), where its operands are already recorded."""
    kernel = kernel_of(graph, node)
    if kernel == "view":
        root, offset = roots[graph.operands(node)[0]]
        offset += view_offset(graph, node, target, sizer)
        roots[node] = (root, offset)
        return {"kernel_family": kernel, "view_of": "%" + root, "view_offset": offset}
    roots[node] = (node, 0)
    lir = {"kernel_family": kernel}
    workspace = workspace_bytes(graph, node, target, sizer)
    if workspace:
        lir["workspace"] = workspace
    side_buffer = SIDE_BUFFERS.get(kernel)
    if side_buffer in dict(target.side_buffers):
        lir["side_buffer"] = side_buffer
    return lir


def lower(graph: Graph, target: Target, bindings: dict) -> bool:
    """Annotate every op; returns whether any attribute changed."""
    sizer = _Sizer(graph, bindings)
    roots: dict[str, tuple[str, int]] = {}
    checked_ops: set[str] = set()
    # (op, shared attributes object, LIR) -> (that object, the attributes `set_attrs` stored,
    # None when they stay as they are):
    # the ops of a model repeat a few attribute sets, each one `SharedAttrs` object, and their
    # annotations repeat too, so each distinct combination is validated once. The object is
    # kept in the value so that its id stays its own.
    stored: dict[tuple, tuple[dict, dict | None]] = {}
    per_op: dict[str, tuple[dict, tuple]] = {}  # op -> its LIR and items, outside NODE_DEPENDENT
    nodes = graph.data_by_name()
    changed = False
    for node in graph.schedule():
        data = nodes[node]
        op = data.op
        if op in LEAF_KINDS:
            roots[node] = (node, 0)
            continue
        if op not in checked_ops:
            _check_no_clash(graph, node)
            checked_ops.add(op)
        if op in NODE_DEPENDENT:
            lir = annotations(graph, node, target, sizer, roots)
            items = tuple(lir.items())
        elif op in per_op:
            roots[node] = (node, 0)
            lir, items = per_op[op]
        else:
            lir = annotations(graph, node, target, sizer, roots)
            lir, items = per_op[op] = (lir, tuple(lir.items()))
        current = data.attrs
        key = (op, id(current), items) if type(current) is SharedAttrs else None
        known = stored.get(key) if key is not None else None
        if known is None:
            kept = {name: value for name, value in current.items() if name not in LIR_ANNOTATIONS}
            annotated = {**kept, **lir}
            result = None
            if annotated != current:
                graph.set_attrs(node, annotated)
                result = dict(data.attrs)
                changed = True
            if key is not None:
                stored[key] = (current, result)
        elif known[1] is not None:
            data.attrs = dict(known[1])
            changed = True
    return changed


@register_pass
@attrs.frozen
class Lower(Pass):
    """Produce the LIR: a kernel family per op, views resolved to root and offset, workspaces, side buffers.

    reshape, same-dtype cast and axis-0 slice are views (`kernel_family = "view"`, `view_of`,
    `view_offset`, resolved through chains of views to the root); the others get `workspace`
    bytes where their kernel needs scratch (attention row statistics, im2col on targets with
    `conv_im2col`, the rocm scan kernel's state trajectory) and `side_buffer` where their
    library call uses one the target declares (BLAS, DNN). Sizes need every symbol bound
    (header defaults or the pipeline's bindings); an unbound one is an `UnboundSymbolError`.
    The contract with the planner is docs/lir.md.
    """

    name = "lower"
    target: str = option("", "target whose sizing and kernels to lower for (empty: the compiling target)")

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        return lower(graph, ctx.target_for(self), ctx.bindings)
