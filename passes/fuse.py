"""fuse: the target's fusion patterns, each a rule or a function, run in the target's order."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import attrs

from rlxir.ir.graph import Graph
from rlxir.ops.core import normalize_axis
from rlxir.pass_machinery.pass_base import Pass, PassContext, option, register_pass
from rlxir.pass_machinery.rewriter import Rule, rewrite_once
from rlxir.targets.target import Target

from rlxir.passes.fuse_regions import fuse_regions

DEFAULT_PATTERNS = ("bias_act", "residual_norm", "shared_input_matmul", "regions")
"""What `fuse` runs when neither an option nor a pipeline target names the patterns."""


def read_once(graph: Graph, value: str) -> bool:
    """`value` is read exactly once, by one op, and is no graph output."""
    return graph.user_count(value) == 1 and graph.use_count(value) == 1


def sole_reader(graph: Graph, value: str) -> str:
    (reader,) = graph.edge_targets(value)
    return reader


def merged_provenance(graph: Graph, nodes) -> tuple:
    return tuple(dict.fromkeys(item for node in nodes for item in graph.provenance(node)))


def replace(graph: Graph, replaced: list[str], op: str, operands, attributes: dict) -> str:
    """Rewrite the last of `replaced` (listed producers first, each read only by the next)
    in place to `op`, keeping its name, and erase the others; returns its name."""
    last = replaced[-1]
    graph.rewrite_in_place(last, op, operands, attributes, provenance=merged_provenance(graph, replaced))
    for node in reversed(replaced[:-1]):
        graph.erase(node)
    return last


# --- bias_act: matmul -> add(bias) [-> gelu | silu] ----------------------------------------
def _plain_matmul_with_bias(graph: Graph, product: str, bias: str, total: str) -> bool:
    """`product` is a matmul read only here, with no transposes and a [K, N] weight, and
    `bias` is exactly [N] (a clean trailing match: the add does not broadcast the product)."""
    if graph.op(product) != "matmul" or not read_once(graph, product):
        return False
    if graph.attr(product, "transpose_a") or graph.attr(product, "transpose_b"):
        return False
    weight_type = graph.type(graph.operands(product)[1])
    product_type = graph.type(product)
    return (weight_type.rank == 2 and graph.type(bias).shape == (product_type.shape[-1],)
            and graph.type(total) == product_type)


def _activation_of(graph: Graph, total: str) -> str | None:
    """The sole reader of `total` when it is an activation the fused kernel has (exact gelu)."""
    if not read_once(graph, total):
        return None
    reader = sole_reader(graph, total)
    op = graph.op(reader)
    if op == "silu" or (op == "gelu" and not graph.attr(reader, "approximate")):
        return reader
    return None


def fuse_bias_act(graph: Graph, total: str):
    left, right = graph.operands(total)
    for product, bias in ((left, right), (right, left)):
        if not _plain_matmul_with_bias(graph, product, bias, total):
            continue
        replaced = [product, total]
        activation = _activation_of(graph, total)
        if activation is not None:
            replaced.append(activation)
        x, weight = graph.operands(product)
        attributes = {"activation": graph.op(activation) if activation is not None else "none"}
        return replace(graph, replaced, "fused_matmul_bias_act", [x, weight, bias], attributes)
    return None


# --- residual_norm: add(x, res) -> layernorm / rmsnorm -------------------------------------
RESIDUAL_NORMS = {"layernorm": "fused_residual_layernorm", "rmsnorm": "fused_residual_rmsnorm"}


def fuse_residual_norm(graph: Graph, norm: str):
    """Only when the norm reads the add's result and nothing else does (a residual stream
    that is read again later must exist in memory anyway, so fusing would save nothing),
    the add does not broadcast, and the norm covers the last axis only (the fused kernels'
    form)."""
    total, *params = graph.operands(norm)
    if graph.op(total) != "add" or not read_once(graph, total):
        return None
    x, residual = graph.operands(total)
    total_type = graph.type(total)
    if graph.type(x) != total_type or graph.type(residual) != total_type or total_type.rank == 0:
        return None
    if normalize_axis(graph.attr(norm, "axis"), total_type.rank) != total_type.rank - 1:
        return None
    attributes = {"eps": graph.attr(norm, "eps")}
    return replace(graph, [total, norm], RESIDUAL_NORMS[graph.op(norm)], [x, residual, *params], attributes)


# --- swiglu: mul(silu(gate), up) -> a two-step region ----------------------------------------
def fuse_swiglu(graph: Graph, product: str):
    """The gate is always $0 and the chain keeps the mul's operand order, so unfusing the
    region gives back silu(gate) * up exactly (RLX's fused op ignored its gate_first flag
    when unfused; a chain has no such flag to ignore)."""
    operands = graph.operands(product)
    for gate_position, activated in enumerate(operands):
        if graph.op(activated) != "silu" or not read_once(graph, activated):
            continue
        up = operands[1 - gate_position]
        (gate,) = graph.operands(activated)
        chain = "silu($0); mul(%0, $1)" if gate_position == 0 else "silu($0); mul($1, %0)"
        return replace(graph, [activated, product], "fused_elementwise", [gate, up], {"chain": chain})
    return None


# --- shared_input_matmul: x @ W1, x @ W2, ... -> x @ concat(W1, W2, ...) + slices ----------
def _concatenable_weight(graph: Graph, x: str, product: str) -> bool:
    """`product` = matmul(x, W): no transposes, W a [K, N] param with N a number."""
    if graph.op(product) != "matmul" or graph.operands(product)[0] != x:
        return False
    weight = graph.operands(product)[1]
    if weight == x or graph.kind(weight) != "param":
        return False
    if graph.attr(product, "transpose_a") or graph.attr(product, "transpose_b"):
        return False
    weight_type = graph.type(weight)
    return weight_type.rank == 2 and isinstance(weight_type.shape[1], int)


def fuse_shared_input_matmuls(graph: Graph) -> int:
    """For each value read as the left operand of two or more such matmuls, one matmul on the
    weights concatenated along N, and a slice of its result per original matmul. This adds
    buffers (the concatenated weights, the wide result, the slices are copies), which is what
    the backends do. A weight param defined after the group's first matmul moves up to it,
    with the params defined in between, in order (a param has no operands, so this changes
    nothing else, and the params keep their order). Returns how many groups merged."""
    merged = 0
    # Only the left operand of two matmuls or more can head a group: those values, in the
    # order a walk over the whole schedule would meet them, are all it visits.
    nodes = graph.data_by_name()
    lefts = Counter(nodes[product].operands[0] for product in graph.values_with_op(("matmul",)))
    for x in graph.in_schedule_order(x for x, count in lefts.items() if count >= 2):
        if x not in graph or graph.user_count(x) < 2:
            continue
        products = [user for user in graph.edge_targets(x) if _concatenable_weight(graph, x, user)]
        if len(products) < 2:
            continue
        _merge_group(graph, x, graph.in_schedule_order(products))
        merged += 1
    return merged


def _merge_group(graph: Graph, x: str, products: list[str]) -> None:
    first = products[0]
    weights = [graph.operands(product)[1] for product in products]
    # Where the values are now (earlier merges moved some), from the schedule's labels and
    # links: a merge costs what its group spans, not a pass over the graph (a whole-graph
    # read per merge made a transformer's fuse quadratic in its layers).
    last_weight = graph.in_schedule_order(weights)[-1]
    if graph.comes_before(first, last_weight):
        # the concat needs every weight before the first matmul: the params defined between it
        # and the last weight move up together, in their order, so the params keep their order
        # (the graph's interface); a param has no operands, so nothing else changes
        between = [name for name in graph.schedule_span(first, last_weight) if graph.kind(name) == "param"]
        for param in between:
            graph.move_before(param, first)
    provenance = merged_provenance(graph, products)
    joined = graph.add_op("concat", weights, {"axis": 1}, before=first, origin=first, provenance=provenance)
    wide = graph.add_op("matmul", [x, joined], before=first, origin=first, provenance=provenance)
    axis = graph.type(wide).rank - 1
    start = 0
    for product, weight in zip(products, weights):
        # each matmul becomes its slice of the wide one, under its own name
        width = graph.type(weight).shape[1]
        graph.rewrite_in_place(product, "slice", [wide], {"axis": axis, "start": start, "len": width})
        start += width


# --- the pass ----------------------------------------------------------------------------------
def _rule_pattern(rule: Rule) -> Callable[[Graph, int, int], int]:
    return lambda graph, max_steps, max_inputs: rewrite_once(graph, [rule])


PATTERNS: dict[str, tuple[Callable[[Graph, int, int], int], tuple[str, ...]]] = {
    "bias_act": (_rule_pattern(Rule("bias-act", "add", fuse_bias_act)), ("fused_matmul_bias_act",)),
    "residual_norm": (_rule_pattern(Rule("residual-norm", tuple(RESIDUAL_NORMS), fuse_residual_norm)),
                      tuple(RESIDUAL_NORMS.values())),
    "shared_input_matmul": (lambda graph, max_steps, max_inputs: fuse_shared_input_matmuls(graph),
                            ("matmul", "concat", "slice")),
    "swiglu": (_rule_pattern(Rule("swiglu", "mul", fuse_swiglu)), ("fused_elementwise",)),
    "regions": (fuse_regions, ("fused_elementwise",)),
}
"""Pattern name -> (run(graph, max_steps, max_inputs) -> rewrites, ops it creates)."""


@register_pass
@attrs.frozen
class Fuse(Pass):
    """Fuse the target's patterns: bias-activation GEMMs, residual norms, shared-input matmuls, SwiGLU, regions.

    Patterns run one after another in the list's order (the target's `fuse_patterns`, or
    `patterns`), each one walk over the graph; a pattern is skipped on a target that does not
    claim the ops it makes. `bias_act`: matmul -> add of an [N] bias -> exact gelu or silu
    becomes fused_matmul_bias_act (activation "none" without one); `residual_norm`: add ->
    last-axis layernorm/rmsnorm becomes the fused residual norm when the norm is the add's
    only reader; `shared_input_matmul`: matmuls of one input by [K, N] params become one
    matmul on the concatenated weights plus slices (this adds buffers); `swiglu`: mul(silu(g),
    u) becomes a two-step region with the gate as $0; `regions`: maximal single-consumer
    elementwise chains become one fused_elementwise within the step and input caps.
    """

    name = "fuse"
    target: str = option("", "target whose fusion list and region caps to use (empty: the compiling target)")
    max_region: int = option(0, "most steps in one fused_elementwise region (0: the target's region_max_steps)")
    max_inputs: int = option(0, "most distinct inputs of one region (0: the target's region_max_inputs)")
    patterns: tuple = option((), "patterns to run, in order, e.g. bias_act:regions (empty: the target's list)")

    def __attrs_post_init__(self):
        unknown = [pattern for pattern in self.patterns if pattern not in PATTERNS]
        if unknown:
            raise ValueError(f"unknown fuse pattern {', '.join(unknown)}; known: {', '.join(PATTERNS)}")
        if self.max_region < 0 or self.max_inputs < 0:
            raise ValueError("max-region and max-inputs must be positive (or 0 for the target's)")

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        target = ctx.target_for(self) if self.target or ctx.target else None
        patterns = self.patterns or (target.fuse_patterns if target else DEFAULT_PATTERNS)
        max_steps = self.max_region or _target_field(target, "region_max_steps")
        max_inputs = self.max_inputs or _target_field(target, "region_max_inputs")
        rewrites = 0
        for pattern in patterns:
            run_pattern, creates = PATTERNS[pattern]
            if target is not None and not all(target.claims(op) for op in creates):
                continue
            rewrites += run_pattern(graph, max_steps, max_inputs)
        return rewrites > 0


def _target_field(target: Target | None, field: str):
    """The target's value, or the `Target` declaration's default without a target."""
    if target is not None:
        return getattr(target, field)
    return getattr(attrs.fields(Target), field).default
