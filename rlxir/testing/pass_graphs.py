"""For each built-in pass, a strategy for graphs in which its pattern is likely.

    from hypothesis import given
    from rlxir.testing.pass_graphs import pass_graphs

    @given(pass_graphs("cse"))
    def test_cse_keeps_what_the_graph_computes(graph): ...

Every built-in pass has an entry in `PASS_GRAPHS`, and the suite checks that the pass
changes at least a third of the graphs its strategy draws (tests/properties/
test_pass_budgets.py): a new pass without a strategy, or a strategy that stops making
its pass's pattern, fails there. Graphs for the passes that need numbers (`lower`, and
`fuse` and `legalize-or-rewrite`, which run inside backend pipelines before it) come
with every symbol bound; the others keep their symbols (draw values with `bindings_for`).
"""

from __future__ import annotations

from hypothesis import strategies as st

from rlxir.dtypes import DType
from rlxir.ir.graph import Graph
from rlxir.testing.motifs import FUSE_MOTIFS
from rlxir.testing.strategies import FUSED, NORM, bindings_for, graphs


@st.composite
def _bound(draw, strategy: st.SearchStrategy[Graph]) -> Graph:
    graph = draw(strategy)
    return graph.bind(draw(bindings_for(graph)))


_SYMBOLIC = {"max_ops": 8, "symbols": ("B", "S"), "dtypes": (DType.f32, DType.i32)}
_BROADCASTS = graphs(**_SYMBOLIC, motifs=("broadcast",))

PASS_GRAPHS: dict[str, st.SearchStrategy[Graph]] = {
    "backend-unfuse": _BROADCASTS,
    "const-fold": graphs(max_ops=8, dtypes=(DType.f32, DType.i32, DType.f16), motifs=("const_expression",)),
    "cse": graphs(max_ops=10, symbols=("B",), dtypes=(DType.f32, DType.i32), motifs=("duplicate",)),
    "dce": graphs(max_ops=10, symbols=("B",), dtypes=(DType.f32, DType.i32), motifs=("dead",)),
    "f32-exec": graphs(max_ops=8, symbols=("B",), dtypes=(DType.f16, DType.bf16, DType.f32, DType.i32)),
    "fuse": _bound(graphs(max_ops=8, symbols=("B", "S"), motifs=FUSE_MOTIFS)),
    "legalize-broadcast": _BROADCASTS,
    "legalize-or-rewrite": _bound(graphs(max_ops=8, symbols=("B", "S"), motifs=("unclaimed",))),
    "lower": _bound(graphs(max_ops=10, symbols=("B", "S"))),
    "scan-unroll": graphs(max_ops=5, ops=("add", "mul", "slice", "reshape"), motifs=("scan",)),
    "simplify": graphs(**_SYMBOLIC, motifs=("identity",)),
    "unfuse": graphs(max_ops=6, ops=FUSED + NORM + ("gelu", "softmax", "linear", "attention", "selective_scan", "add",
                                                     "mul", "relu", "reshape", "transpose")),
    "unfuse-regions": graphs(max_ops=8, symbols=("B",), ops=("fused_elementwise", "add", "mul", "gelu", "reshape")),
}
"""Built-in pass name -> graphs that make its pattern likely."""


def pass_graphs(name: str) -> st.SearchStrategy[Graph]:
    """The strategy of built-in pass `name` (a `KeyError` naming the known ones otherwise)."""
    if name not in PASS_GRAPHS:
        raise KeyError(f"no graph strategy for pass {name!r}; PASS_GRAPHS has: {', '.join(PASS_GRAPHS)}")
    return PASS_GRAPHS[name]
