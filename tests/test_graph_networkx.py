"""Graph's networkx side: `graph.nx` is a real DiGraph kept in step with the Graph, the
Graph reaches it only through networkx's public API, and no other module reaches it at all."""

from __future__ import annotations

import ast
import pickle
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

import rlxir
import rlxir.backends
import rlxir.grammar
import rlxir.ir.graph
import rlxir.passes
from rlxir.ir.graph import GraphError
from rlxir.ir.graph_reading import NO_EDGE_DATA, ValueNode
from rlxir.ir.nx_graph import ValueDiGraph

TEXT = """graph g {
  input %x : f32[4]
  %a = relu(%x)
  %b = add(%a, %x)
  %c = mul(%a, %a)
  output %b, %c
}
"""

PRIVATE_NETWORKX = {"_node", "_succ", "_pred", "_adj"}
GRAPH_MODULE = Path(rlxir.ir.graph.__file__).resolve()


def storage_reaches(source: str, path: Path) -> list[str]:
    """Where `source` names networkx's private storage, or (outside rlxir/ir/graph.py) a
    graph's `.nx`, as ``path:line: what`` strings."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            name = node.attr
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value  # getattr(graph, "_succ") and the like
        else:
            continue
        if name in PRIVATE_NETWORKX or (name == "nx" and isinstance(node, ast.Attribute) and path != GRAPH_MODULE):
            found.append(f"{path}:{node.lineno}: {name}")
    return found


def package_files() -> list[Path]:
    roots = {Path(folder).resolve() for package in (rlxir, rlxir.passes, rlxir.backends, rlxir.grammar)
             for folder in package.__path__}
    return sorted({path for root in roots for path in root.rglob("*.py")})


def test_the_scan_sees_what_it_forbids():
    elsewhere = Path("passes/example.py")
    assert storage_reaches("n = graph.nx.out_degree(x)\n", elsewhere) == [f"{elsewhere}:1: nx"]
    assert storage_reaches("d = graph.nx._succ[x]\n", GRAPH_MODULE) == [f"{GRAPH_MODULE}:1: _succ"]
    assert storage_reaches("d = getattr(g, '_pred')\n", elsewhere) == [f"{elsewhere}:1: _pred"]
    assert storage_reaches("n = graph.user_count(x)\nimport networkx as nx\nnx.DiGraph()\n", elsewhere) == []


def test_no_module_reaches_graph_storage_or_networkx_private_attributes():
    files = package_files()
    assert GRAPH_MODULE in files and any(path.parent.name == "passes" for path in files)
    found = [hit for path in files for hit in storage_reaches(path.read_text(encoding="utf-8"), path)]
    assert found == [], "use Graph's methods outside rlxir/ir/graph.py:\n" + "\n".join(found)


def test_the_networkx_graph_is_a_dag_that_networkx_algorithms_read():
    graph = rlxir.parse(TEXT).main
    assert isinstance(graph.nx, nx.DiGraph)
    assert nx.is_directed_acyclic_graph(graph.nx)
    assert set(graph.nx.edges) == {("x", "a"), ("x", "b"), ("a", "b"), ("a", "c")}
    assert list(nx.topological_sort(graph.nx))[0] == "x"
    assert graph.nx.nodes["b"]["operands"] == ("a", "x")
    assert dict(graph.nx.out_degree) == {name: graph.user_count(name) for name in graph.schedule()}


def test_graph_mutations_show_in_networkx_views_and_clear_its_cache():
    graph = rlxir.parse(TEXT).main
    graph.nx.__networkx_cache__ = {"backends": {"probe": "stale"}}  # where networkx keeps converted graphs
    graph.replace_all_uses("a", "x")
    graph.erase("a")
    assert "a" not in graph.nx
    assert set(graph.nx.pred["c"]) == {"x"} and set(graph.nx.succ["x"]) == {"b", "c"}
    assert graph.nx.__networkx_cache__ == {}


def test_edges_follow_operand_order_and_reader_order_whichever_way_a_value_is_stored():
    # One edge per distinct operand: a value's predecessors in operand order, a value's
    # successors in the order its readers were stored; the parser, add_op, bind and
    # rename all store this way, and networkx sees the same.
    graph = rlxir.parse("graph g(N=4) {\n  input %x : f32[N]\n  input %y : f32[N]\n  %a = add(%y, %x)\n"
                        "  %b = mul(%a, %a)\n  %c = sub(%x, %a)\n  output %b, %c\n}\n").main
    for built in (graph, graph.bind(N=8)):
        assert list(built.nx.pred["a"]) == ["y", "x"] and list(built.nx.pred["b"]) == ["a"]
        assert list(built.nx.succ["a"]) == ["b", "c"] and list(built.nx.succ["x"]) == ["a", "c"]
    added = graph.add_op("concat", ["c", "y", "c"], {"axis": 0})
    assert list(graph.nx.pred[added]) == ["c", "y"] and list(graph.nx.succ["y"]) == ["a", added]
    graph.nx.__networkx_cache__ = {"backends": {"probe": "stale"}}
    graph.rename("a", "renamed")
    assert list(graph.nx.pred["renamed"]) == ["y", "x"] and set(graph.nx.succ["renamed"]) == {"b", "c"}
    assert graph.nx.__networkx_cache__ == {}  # storing a value clears networkx's cache
    rlxir.verify(graph)


def test_public_networkx_mutations_show_in_the_graph():
    # The verifier relies on this to report edges that disagree with operands.
    graph = rlxir.parse(TEXT).main
    graph.nx.add_edge("c", "b")
    assert set(graph.edge_sources("b")) == {"a", "x", "c"}
    assert list(graph.edge_targets("c")) == ["b"]
    with pytest.raises(rlxir.VerifyError, match="edges disagree"):
        rlxir.verify(graph)


def test_copies_and_pickles_keep_one_storage():
    graph = rlxir.parse(TEXT).main
    for clone in (pickle.loads(pickle.dumps(graph)), graph.copy()):
        clone.erase(clone.add_op("neg", ["x"]))
        clone.replace_all_uses("c", "b")
        clone.erase("c")
        assert set(clone.nx.succ["a"]) == {"b"} and clone.user_count("a") == 1
        assert set(clone.nx.nodes) == set(clone.schedule())
        rlxir.verify(clone)
    networkx_copy = graph.nx.copy()
    assert type(networkx_copy) is ValueDiGraph and set(networkx_copy.edges) == set(graph.nx.edges)
    assert set(networkx_copy.succ_dict["a"]) == {"b", "c"} and set(networkx_copy.pred_dict["a"]) == {"x"}


def test_users_and_degrees():
    graph = rlxir.parse(TEXT).main
    assert graph.user_count("a") == 2 and graph.use_count("a") == 3  # %c reads it twice
    assert graph.user_count("c") == 0 and graph.use_count("c") == 1  # an output
    assert sorted(graph.edge_targets("x")) == ["a", "b"]
    assert graph.users("a") == ["b", "c"]
    with pytest.raises(GraphError, match="no value %nope"):
        graph.user_count("nope")
    with pytest.raises(GraphError, match="no value %nope"):
        graph.edge_targets("nope")


def test_data_by_name_is_every_stored_value_and_read_only():
    graph = rlxir.parse(TEXT).main
    data = graph.data_by_name()
    assert data.keys() == set(graph.schedule()) and data["a"] is graph.data("a")
    with pytest.raises(TypeError):
        data["z"] = {}  # type: ignore[index]


def test_node_data_is_a_slotted_record_that_reads_as_a_mapping():
    graph = rlxir.parse(TEXT).main
    data = graph.nx.nodes["b"]
    assert isinstance(data, ValueNode) and not hasattr(data, "__dict__")
    assert data["op"] == data.op == "add" and data.get("operands") == ("a", "x") and "type" in data
    assert list(data) == ["op", "operands", "attrs", "type", "loc", "provenance"]
    assert dict(data.items()) == data.copy() and type(data.copy()) is dict
    data["provenance"] = ("q",)
    assert graph.provenance("b") == ("q",)
    with pytest.raises(KeyError, match="holds only"):
        data["color"] = "red"
    with pytest.raises(KeyError):
        data["color"]
    with pytest.raises(TypeError):
        del data["op"]
    assert nx.DiGraph(graph.nx).nodes["b"]["op"] == "add"  # networkx copies it as a mapping


def test_edges_share_one_read_only_empty_data():
    graph = rlxir.parse(TEXT).main
    assert all(data is NO_EDGE_DATA for _, _, data in graph.nx.edges(data=True))
    graph.add_op("neg", ["x"])
    graph.nx.add_edge("c", "b")  # no data: accepted
    assert graph.nx.edges["c", "b"] is NO_EDGE_DATA and graph.nx.copy().edges["a", "b"] == {}
    with pytest.raises(GraphError, match="edges carry no data"):
        graph.nx.add_edge("x", "c", weight=2)
    with pytest.raises(GraphError, match="edges carry no data"):
        nx.set_edge_attributes(graph.nx, 1, "weight")
    assert pickle.loads(pickle.dumps(graph)).nx.edges["a", "b"] is NO_EDGE_DATA


def test_op_attributes_are_shared_and_read_only():
    text = """graph g {
  input %x : f32[4, 6]
  %a = slice(%x) {axis = 1, start = 0, len = 3} : f32[4, 3]
  %b = slice(%x) {axis = 1, start = 0, len = 3} : f32[4, 3]
  output %a, %b
}
"""
    graph = rlxir.parse(text).main
    assert graph.attrs("a") is graph.attrs("b")
    with pytest.raises(TypeError, match="shared"):
        graph.attrs("a")["start"] = 1
    graph.set_attrs("a", {"axis": 1, "start": 1, "len": 3})
    assert graph.attrs("a")["start"] == 1 and graph.attrs("b")["start"] == 0
    clone = pickle.loads(pickle.dumps(graph))
    assert clone.equals(graph) and clone.attrs("b") == {"axis": 1, "start": 0, "len": 3}


def test_parsed_operands_share_the_defining_string():
    graph = rlxir.parse(TEXT).main
    defined = {name: name for name in graph.nx.nodes}
    names = {id(name) for name in defined}
    assert all(id(operand) in names for node in graph.schedule() for operand in graph.operands(node))
    assert graph.op("b") is rlxir.get_op("add").name


def test_leaves_follow_renames_erasures_and_moves():
    graph = rlxir.parse(TEXT).main
    graph.add_param("p", graph.type("x"), before="a")
    graph.add_input("y", graph.type("x"))
    assert graph.inputs() == ["x", "y"] and graph.params() == ["p"]
    graph.move_before("y", "x")
    graph.rename("p", "w")
    assert graph.inputs() == ["y", "x"] and graph.params() == ["w"]
    graph.erase("y")
    assert graph.inputs() == ["x"] and graph.copy().params() == ["w"] and graph.ops() == ["a", "b", "c"]


def test_networkx_is_imported_only_when_a_graph_is_handed_to_it():
    probe = ("import sys; import rlxir; graph = rlxir.parse_file('examples/mlp.rlx').main; rlxir.verify(graph); "
             "before = 'networkx' in sys.modules; view = graph.nx; "
             "print(before, 'networkx' in sys.modules, view is graph.nx)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True", "True"]


def test_a_view_made_after_the_graph_was_built_shares_its_storage():
    graph = rlxir.parse(TEXT).main  # built with no DiGraph yet
    view = graph.nx
    assert set(view.nodes) == set(graph.schedule()) and set(view.succ["a"]) == {"b", "c"}
    added = graph.add_op("neg", ["c"])
    assert view.nodes[added]["op"] == "neg" and set(view.pred[added]) == {"c"}
    view.remove_edge("a", "c")  # networkx's own mutation shows in the graph's edges
    assert "c" not in graph.edge_targets("a")
    clone = pickle.loads(pickle.dumps(graph))
    assert set(clone.nx.edges) == set(view.edges)
