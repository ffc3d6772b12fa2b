"""`graph.nx`: a `Graph`'s values as a `networkx.DiGraph` over the Graph's own dicts.

This module is imported the first time a graph's `nx` is asked for, not before: reading,
checking and compiling a graph never need networkx's algorithms, and importing networkx
costs about 0.1 s of every command's start-up.
"""

from __future__ import annotations

from typing import Any

import networkx as nx

from rlxir.ir.graph_reading import NO_EDGE_DATA, NoEdgeData


class ValueDiGraph(nx.DiGraph):
    """A plain `DiGraph` whose storage is given dicts: a `Graph`'s node dict (value name ->
    `ValueNode`) and its successor and predecessor dicts (value name -> {neighbour: edge
    data}, the data always `NO_EDGE_DATA`), so that the two are one graph and `Graph` writes
    the dicts directly.

    networkx builds a graph's storage through factory hooks that a subclass may replace
    (the "Subclasses" part of `networkx.DiGraph`'s documentation); this class's hooks hand
    out the given dicts and name them `node_dict`, `succ_dict` and `pred_dict`. Which of
    its two outer dicts networkx uses for successors is learnt with one public `add_edge`,
    not assumed from the order it asks for them in. Views, algorithms and `copy()` (a
    graph over fresh dicts) are networkx's own, so the graph can be handed to any of them.
    """

    def __init__(self, incoming_graph_data: Any = None, **attr: Any) -> None:
        given = self.__dict__.pop("_given", None)
        self._nodes_given = given[0] if given else {}
        self._outer_given = list(given[1:]) if given else [{}, {}]
        self._made_adjacency: list[dict] = []
        super().__init__(incoming_graph_data, **attr)
        made = self._made_adjacency
        del self._made_adjacency, self._nodes_given, self._outer_given
        if len(made) != 2 or not hasattr(self, "node_dict"):
            raise RuntimeError("this networkx version does not build a DiGraph's storage through "
                               "node_dict_factory and adjlist_outer_dict_factory")
        source, target = object(), object()
        self.add_edge(source, target)
        self.succ_dict, self.pred_dict = made if target in made[0].get(source, ()) else made[::-1]
        if source not in self.node_dict or source not in self.pred_dict[target]:
            raise RuntimeError("this networkx version keeps a DiGraph's edges outside its factory-made dicts")
        self.remove_nodes_from((source, target))

    @classmethod
    def over(cls, nodes: dict, successors: dict, predecessors: dict) -> ValueDiGraph:
        """The DiGraph whose storage is these dicts (which may hold values already)."""
        for outer in ((successors, predecessors), (predecessors, successors)):
            graph = cls.__new__(cls)
            graph.__dict__["_given"] = (nodes, *outer)
            graph.__init__()
            if graph.succ_dict is successors:
                return graph
        raise RuntimeError("this networkx version does not keep successors in one of its outer dicts")

    def node_dict_factory(self) -> dict:
        self.node_dict: dict = self._nodes_given
        return self.node_dict

    def adjlist_outer_dict_factory(self) -> dict:
        adjacency = self._outer_given.pop(0)
        self._made_adjacency.append(adjacency)
        return adjacency

    def edge_attr_dict_factory(self) -> NoEdgeData:
        return NO_EDGE_DATA
