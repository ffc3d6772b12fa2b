"""legalize-or-rewrite: rewrite ops a target does not run into ones it does, then check."""

from __future__ import annotations

import attrs

from rlxir.errors import RlxError
from rlxir.ir.graph import Graph
from rlxir.ops import LEAF_KINDS, registered_ops
from rlxir.ops.core import normalize_axis
from rlxir.ops.decompositions import shared_values, sharing_constants, unfuse_node
from rlxir.pass_machinery.pass_base import Pass, PassContext, PassError, option, register_pass
from rlxir.pass_machinery.rewriter import Rule, rewrite_greedy
from rlxir.symbolic import mul
from rlxir.targets.target import REDUCE, Target

AXIS_OPS = ("softmax", "cumsum")
"""Ops with one `axis` that a last-axis target runs only on the last axis."""
AXIS_LIMITED = REDUCE | frozenset(AXIS_OPS)


# --- what a target cannot run ------------------------------------------------------------
def reduced_axes(graph: Graph, node: str) -> tuple[int, ...]:
    rank = graph.type(graph.operands(node)[0]).rank
    return tuple(sorted(normalize_axis(axis, rank) for axis in graph.attr(node, "axes")))


def off_last_axis(graph: Graph, node: str) -> bool:
    """A reduction, softmax or cumsum that works on anything but exactly the last axis."""
    op = graph.op(node)
    rank = graph.type(graph.operands(node)[0]).rank
    if op in REDUCE:
        return reduced_axes(graph, node) != (rank - 1,)
    if op in AXIS_OPS:
        return normalize_axis(graph.attr(node, "axis"), rank) != rank - 1
    return False


def offence(target: Target, graph: Graph, node: str) -> str | None:
    """Why `target` cannot run `node` as it stands, or None when it can."""
    data = graph.data(node)
    op, dtype = data.op, data.type.dtype
    reasons = []
    if op not in LEAF_KINDS and not target.claims(op):
        reasons.append(f"not in the {target.name} op set")
    elif target.last_axis_reductions and op in AXIS_LIMITED and off_last_axis(graph, node):
        reasons.append("not on the last axis")
    if dtype not in target.dtypes:
        reasons.append(f"{dtype.value} not supported")
    return "; ".join(reasons) or None


# --- rewrites ----------------------------------------------------------------------------
def reduce_on_last_axis(graph: Graph, node: str) -> list[str]:
    """reduce(x, axes) -> transpose the reduced axes last, merge them (reshape), reduce the
    last axis, and reshape back to the kept dims when `keepdims`."""
    op, (source,) = graph.op(node), graph.operands(node)
    shape = graph.type(source).shape
    axes = reduced_axes(graph, node)
    kept = tuple(axis for axis in range(len(shape)) if axis not in axes)
    value = source
    if kept + axes != tuple(range(len(shape))):
        value = graph.add_op("transpose", [value], {"perm": kept + axes}, before=node, origin=node)
    if len(axes) > 1:
        merged = 1
        for axis in axes:
            merged = mul(merged, shape[axis])
        value = graph.add_op("reshape", [value], {"shape": tuple(shape[axis] for axis in kept) + (merged,)},
                             before=node, origin=node)
    value = graph.add_op(op, [value], {"axes": (-1,)}, before=node, origin=node)
    if graph.attr(node, "keepdims"):
        value = graph.add_op("reshape", [value], {"shape": graph.type(node).shape}, before=node, origin=node)
    graph.replace_all_uses(node, value)
    graph.erase(node)
    return [value]


def axis_op_on_last_axis(graph: Graph, node: str) -> list[str]:
    """softmax/cumsum on axis a -> swap a with the last axis, run on the last, swap back."""
    (source,) = graph.operands(node)
    rank = graph.type(source).rank
    axis = normalize_axis(graph.attr(node, "axis"), rank)
    swap = list(range(rank))
    swap[axis], swap[-1] = swap[-1], swap[axis]
    perm = tuple(swap)  # a swap is its own inverse (a tuple: attribute values key the type cache)
    moved = graph.add_op("transpose", [source], {"perm": perm}, before=node, origin=node)
    attributes = {**graph.attrs(node), "axis": -1}
    computed = graph.add_op(graph.op(node), [moved], attributes, before=node, origin=node)
    back = graph.add_op("transpose", [computed], {"perm": perm}, before=node, origin=node)
    graph.replace_all_uses(node, back)
    graph.erase(node)
    return [back]


def decomposed_nodes(graph: Graph, replacement: str, stop: set[str]) -> list[str]:
    """The nodes a decomposition added: everything `replacement` reads back to `stop` (the
    fused node's operands and the values decompositions shared before it: a decomposition
    reads nothing else that existed before)."""
    found, frontier = [], [replacement]
    seen = set(stop)
    while frontier:
        value = frontier.pop()
        if value in seen:
            continue
        seen.add(value)
        found.append(value)
        frontier.extend(graph.operands(value))
    return found


@attrs.define
class _Legalizer:
    """The rules for one target, and the unfuse refusals met on the way (for the report)."""

    target: Target
    refusals: dict = attrs.field(factory=dict)

    def rules(self) -> list[Rule]:
        unclaimed = tuple(sorted(name for name, opdef in registered_ops().items()
                                 if opdef.decompose is not None and not self.target.claims(name)))
        return [
            Rule("reduce-on-last-axis", tuple(sorted(REDUCE)), self._reduce),
            Rule("axis-op-on-last-axis", AXIS_OPS, self._axis_op),
            Rule("unfuse-unclaimed", unclaimed, self._unfuse),
        ]

    def _needs_last_axis(self, graph: Graph, node: str) -> bool:
        return (self.target.last_axis_reductions and self.target.claims(graph.op(node))
                and off_last_axis(graph, node))

    def _reduce(self, graph: Graph, node: str):
        return reduce_on_last_axis(graph, node) if self._needs_last_axis(graph, node) else None

    def _axis_op(self, graph: Graph, node: str):
        return axis_op_on_last_axis(graph, node) if self._needs_last_axis(graph, node) else None

    def _unfuse(self, graph: Graph, node: str):
        if node in self.refusals:
            return None
        existing = set(graph.operands(node)) | shared_values(graph)
        try:
            replacement = unfuse_node(graph, node)
        except RlxError as error:  # e.g. a scan whose length is unbound: reported below
            self.refusals[node] = error.message
            return None
        return decomposed_nodes(graph, replacement, existing)


def legalize(graph: Graph, target: Target, share_constants: bool = False) -> bool:
    """Rewrite `graph` for `target`, then raise one `PassError` listing every node it still
    cannot run. Returns whether anything was rewritten. With `share_constants`, the
    decompositions share their constant-only values (`sharing_constants`)."""
    legalizer = _Legalizer(target)
    if share_constants:
        with sharing_constants(graph):
            rewrites = rewrite_greedy(graph, legalizer.rules())
    else:
        rewrites = rewrite_greedy(graph, legalizer.rules())
    offenders: dict[str, str] = {}
    runs: dict[str, bool] = {}  # op -> the target runs it whatever its axes (leaves too)
    # Every value is checked; the records are read in storage order (no schedule needed),
    # and the offenders are put in schedule order for the message.
    for node, data in graph.data_by_name().items():
        op = data.op
        plain = runs.get(op)
        if plain is None:
            plain = runs[op] = ((op in LEAF_KINDS or target.claims(op))
                                and not (target.last_axis_reductions and op in AXIS_LIMITED))
        if plain and data.type.dtype in target.dtypes:
            continue  # what `offence` says of it: None
        reason = offence(target, graph, node)
        if reason is None:
            continue
        if node in legalizer.refusals:
            reason += f"; {legalizer.refusals[node]}"
        offenders[node] = reason
    if offenders:
        raise _refusal(graph, target, [(node, offenders[node]) for node in graph.in_schedule_order(offenders)])
    return rewrites > 0


def _refusal(graph: Graph, target: Target, offenders: list) -> PassError:
    items = []
    for node, reason in offenders:
        loc = graph.location(node)
        where = f" at {loc}" if loc is not None else ""
        items.append(f"%{node} = {graph.op(node)} ({reason}){where}")
    noun = "ops" if all(graph.kind(node) == "op" for node, _ in offenders) else "values"
    count = len(offenders)
    message = f"{count} {noun if count > 1 else noun[:-1]} cannot run on {target.name}: " + ", ".join(items)
    dtypes = ", ".join(sorted(dtype.value for dtype in target.dtypes))
    expected = f"ops in the {target.name} op set (`rlxir targets`), reductions on the last axis, dtypes {dtypes}"
    return PassError(message, graph.location(offenders[0][0]), expected)


@register_pass
@attrs.frozen
class LegalizeOrRewrite(Pass):
    """Rewrite every op the target does not run into ones it does, then check that none is left.

    Rewrites, to a fixed point (the rewriter's greedy driver, with its cap): on targets with
    `last_axis_reductions`, a reduction over other or several axes becomes transpose (reduced
    axes last) + reshape (merge them) + a last-axis reduce (+ reshape back for keepdims), and
    softmax/cumsum on another axis becomes transpose + last-axis op + transpose back; an op
    outside the target's claimed set that has a decomposition (attention, selective_scan,
    batchnorm, linear, ...) is unfused. Then every value is checked: an op still unclaimed,
    an axis op still off the last axis, or a dtype outside the target's dtypes is an offender,
    and one `PassError` lists them all with their source lines.

    With `share-constants` (rocm, whose cleanup runs `cse` next), the decompositions make
    each constant-only value once — scalar constants, the causal mask and its iotas — and
    later ones reuse it, which is what `cse` would leave: the passes in between do not build
    a copy per layer to merge. Without it every decomposition makes its own, as the
    pipelines without a `cse` keep them.
    """

    name = "legalize-or-rewrite"
    target: str = option("", "target whose op set to legalize for (empty: the compiling target)")
    share_constants: bool = option(False, "decompositions share their constant-only values (what cse would merge)")

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        return legalize(graph, ctx.target_for(self), self.share_constants)
