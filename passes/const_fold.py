"""const-fold: evaluate ops whose operands are all consts."""

from __future__ import annotations

import attrs
import numpy as np

from rlxir.dtypes import DType
from rlxir.errors import RlxError
from rlxir.ir.graph import Graph
from rlxir.interpreter import const_array
from rlxir.ops import LEAF_KINDS
from rlxir.ops.reference import to_dtype
from rlxir.pass_machinery.pass_base import Pass, PassContext, PassError, option, register_pass
from rlxir.types import TensorType


@register_pass
@attrs.frozen
class ConstFold(Pass):
    """Replace every op whose operands are all consts by a const holding its result.

    The result is computed with the op's NumPy reference in the dtype's NumPy type (integer
    wrap-around and truncating division, bool comparisons, f16 rounding; bf16 is held as
    f32 rounded to bf16), so a folded graph computes what the interpreter computes. It is
    written as a splat when every element is the same (bit for bit) and as a flat list
    otherwise. Left alone: results or operands with more than `max-elements` elements,
    symbolic shapes, c64 results, ops without a reference, and ops whose reference fails
    (an out-of-range gather keeps failing at run time, where it belongs).
    """

    name = "const-fold"
    max_elements: int = option(4096, "largest result (and operand) element count that is folded")

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        arrays: dict[str, np.ndarray] = {}
        changed = False
        nodes = graph.data_by_name()
        readers = graph.readers_by_name()
        # Only an op reading a const can fold, so the pass visits the consts' readers, in
        # schedule order, then the readers of the consts it made, and so on: the other
        # values of a big graph are never looked at. A value folds where its operands are
        # all consts whichever round finds it, so the graph out is the one walk's.
        pending = {reader for const in graph.values_of_kind("const") for reader in readers[const]}
        while pending:
            made: set[str] = set()
            for node in graph.in_schedule_order(name for name in pending if name in nodes):
                data = nodes[node]
                # only an op whose operands are all consts can fold (`_foldable` asks the rest)
                if data.op in LEAF_KINDS or any(nodes[operand].op != "const" for operand in data.operands):
                    continue
                if not self._foldable(graph, node):
                    continue
                result = _evaluate(graph, node, arrays)
                if result is None:
                    continue
                const = graph.add_const(graph.fresh_name(node), graph.type(node), _literal(result), before=node,
                                        loc=graph.location(node), provenance=graph.provenance(node))
                arrays[const] = result
                made.update(readers[node])
                graph.replace_all_uses(node, const)
                graph.erase(node)
                changed = True
            pending = made
        return changed

    def _foldable(self, graph: Graph, node: str) -> bool:
        operands = graph.operands(node)
        if not operands or any(graph.kind(operand) != "const" for operand in operands):
            return False
        opdef = graph.opdef(node)
        if opdef is None or opdef.reference is None or graph.type(node).dtype is DType.c64:
            return False
        return all(self._small(graph.type(value)) for value in (node, *operands))

    def _small(self, type_: TensorType) -> bool:
        numel = type_.numel
        return isinstance(numel, int) and 0 < numel <= self.max_elements


def _evaluate(graph: Graph, node: str, arrays: dict[str, np.ndarray]) -> np.ndarray | None:
    """The node's result in its dtype's NumPy type, or None when its reference refuses."""
    inputs = []
    for operand in graph.operands(node):
        if operand not in arrays:
            arrays[operand] = const_array(graph, operand)
        inputs.append(arrays[operand])
    type_ = graph.type(node)
    try:
        with np.errstate(all="ignore"):
            result = to_dtype(graph.opdef(node).reference(inputs, graph.full_attrs(node)), type_.dtype)
    except (RlxError, ArithmeticError, ValueError, TypeError, IndexError):
        return None
    if result.shape != type_.static_shape():
        raise PassError(f"const-fold: the reference of {graph.op(node)} gave shape {list(result.shape)} "
                        f"for %{node} : {type_}", graph.location(node), "the shape the op's rule infers")
    return result


def _literal(array: np.ndarray):
    """A splat when every element has the same bits (so 0.0 and -0.0 stay apart), else a list."""
    flat = array.reshape(-1)
    bits = flat.view(f"u{flat.dtype.itemsize}")
    if np.all(bits == bits[0]):
        return _item(flat[0])
    return tuple(_item(element) for element in flat)


def _item(element: np.generic):
    """A Python literal that reads back as exactly `element` in its dtype."""
    if isinstance(element, np.bool_):
        return bool(element)
    if isinstance(element, np.integer):
        return int(element)
    # str() of a NumPy float is the shortest text that reads back as the same value in its
    # own precision (0.1, not 0.10000000149011612, for an f32).
    return float(str(element))
