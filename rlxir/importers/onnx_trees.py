"""ONNX op -> core ops: ``ai.onnx.ml`` TreeEnsemble (opset 5), a forest of decision trees.

The trees are attributes, known while importing, so the importer walks them once and
writes the forest as a fixed handful of tensor ops whatever its size:

1. the features the branch nodes read, one ``gather`` of X's columns;
2. every branch node's test at once: a comparison per mode present (``le``, ``lt``,
   ``ge``, ``gt``, ``eq``, ``ne``) chosen per node by ``where`` on constant masks; set
   membership as an ``eq`` against the node's members (the sets of `membership_values`
   in the order of the MEMBER nodes, each ended by a NaN), padded with NaN (equal to
   nothing); a NaN feature sent to the true branch where `nodes_missing_value_tracks_true`
   says so. A split is compared in its own dtype as given, a member exactly (the
   precisions ONNX's reference compares in);
3. which leaf each row reaches: a leaf's path needs some nodes true and some false, so
   ``tests @ (needs_true - needs_false)`` plus the count of nodes it needs false equals the
   length of its path exactly when every test on it went its way (small integers, exact
   in f32);
4. the aggregate over the trees of the leaves reached, per target: a ``matmul`` by the
   leaves' weights placed at their targets for SUM (divided by the tree count for AVERAGE),
   a ``reduce_min`` / ``reduce_max`` over the leaves for MIN / MAX, where a target no
   reached leaf names keeps the dtype's largest (smallest) finite value, as ONNX's
   reference has it.

A tree whose root is a leaf (both branches the same leaf) gives that leaf's weight to
every row. `post_transform` other than NONE is refused; `nodes_hitrates` is advisory and
not read.
"""

from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel, dtype_of_array
from rlxir.importers.onnx_ops import hint
from rlxir.importers.onnx_registry import register

COMPARISONS = {0: "le", 1: "lt", 2: "ge", 3: "gt", 4: "eq", 5: "ne"}
MEMBER = 6
AGGREGATES = {0: "AVERAGE", 1: "SUM", 2: "MIN", 3: "MAX"}


def _array(value) -> np.ndarray:
    """An attribute given as a tensor or as a list, as an array."""
    if hasattr(value, "data_type"):  # a TensorProto
        return numpy_helper.to_array(value)
    return np.asarray(value)


def _required(attrs, name: str) -> np.ndarray:
    if name not in attrs:
        raise UnsupportedModel(f"TreeEnsemble without its {name} attribute", expected=f"{name} set")
    return _array(attrs[name]).reshape(-1)


class _Forest:
    """The trees read from the attributes: one path per leaf reached from a root, as the
    (node, wanted outcome) pairs along it."""

    def __init__(self, attrs) -> None:
        self.features = _required(attrs, "nodes_featureids").astype(np.int64)
        self.modes = _required(attrs, "nodes_modes").astype(np.int64)
        given = _required(attrs, "nodes_splits")
        self.split_dtype = given.dtype if given.dtype.kind == "f" else np.dtype(np.float64)
        self.splits = given.astype(np.float64)
        self.true_ids = _required(attrs, "nodes_truenodeids").astype(np.int64)
        self.false_ids = _required(attrs, "nodes_falsenodeids").astype(np.int64)
        self.true_leafs = _required(attrs, "nodes_trueleafs").astype(bool)
        self.false_leafs = _required(attrs, "nodes_falseleafs").astype(bool)
        self.leaf_targets = _required(attrs, "leaf_targetids").astype(np.int64)
        self.leaf_weights = _required(attrs, "leaf_weights").astype(np.float64)
        self.roots = _required(attrs, "tree_roots").astype(np.int64)
        count = len(self.features)
        node_arrays = (self.modes, self.splits, self.true_ids, self.false_ids, self.true_leafs, self.false_leafs)
        if any(len(array) != count for array in node_arrays):
            raise UnsupportedModel("TreeEnsemble whose nodes_* attributes differ in length",
                                   expected="one entry per node in every nodes_* attribute")
        if len(self.leaf_targets) != len(self.leaf_weights):
            raise UnsupportedModel("TreeEnsemble whose leaf_targetids and leaf_weights differ in length",
                                   expected="one target and one weight per leaf")
        unknown = sorted(set(self.modes.tolist()) - set(COMPARISONS) - {MEMBER})
        if unknown:
            raise UnsupportedModel(f"TreeEnsemble node mode {unknown[0]}", expected="a mode from 0 (LEQ) to 6 (MEMBER)")
        tracks = attrs.get("nodes_missing_value_tracks_true")
        self.tracks = np.zeros(count, bool) if tracks is None else _array(tracks).reshape(-1).astype(bool)
        self.members = self._member_sets(attrs.get("membership_values"))
        self.paths: list[tuple[int, list[tuple[int, bool]]]] = []  # (leaf, [(node, outcome), ...])
        for root in self.roots.tolist():
            self._walk(int(root))

    def _member_sets(self, values) -> dict[int, list[float]]:
        """Each MEMBER node's set: the membership values in node order, NaN after each set."""
        member_nodes = np.flatnonzero(self.modes == MEMBER).tolist()
        given = np.zeros(0, np.float32) if values is None else _array(values).reshape(-1)
        self.member_dtype = given.dtype if given.dtype.kind == "f" else np.dtype(np.float64)
        flat = given.astype(np.float64).tolist()
        if sum(np.isnan(flat)) != len(member_nodes):
            raise UnsupportedModel(f"TreeEnsemble with {len(member_nodes)} set-membership nodes and "
                                   f"{int(sum(np.isnan(flat)))} sets in membership_values",
                                   expected="one NaN-terminated set per set-membership node")
        sets, current = {}, []
        nodes = iter(member_nodes)
        for value in flat:
            if np.isnan(value):
                sets[next(nodes)] = current
                current = []
            else:
                current.append(value)
        return sets

    def _leaf(self, index: int) -> int:
        if not 0 <= index < len(self.leaf_weights):
            raise UnsupportedModel(f"TreeEnsemble leaf {index} out of range",
                                   expected=f"leaf ids below {len(self.leaf_weights)}")
        return index

    def _walk(self, root: int) -> None:
        self._node(root)
        if self.true_leafs[root] and self.false_leafs[root] and self.true_ids[root] == self.false_ids[root]:
            self.paths.append((self._leaf(root), []))  # a tree that is one leaf (the root's index names it)
            return
        stack: list[tuple[int, list[tuple[int, bool]]]] = [(root, [])]
        while stack:
            node, path = stack.pop()
            for outcome, target, is_leaf in ((False, self.false_ids[node], self.false_leafs[node]),
                                             (True, self.true_ids[node], self.true_leafs[node])):
                step = [*path, (node, outcome)]
                if is_leaf:
                    self.paths.append((self._leaf(int(target)), step))
                elif any(seen == target for seen, _ in step) or len(step) > len(self.features):
                    raise UnsupportedModel(f"TreeEnsemble whose node {int(target)} is its own ancestor",
                                           expected="trees (no branch leads back up)")
                else:
                    stack.append((self._node(int(target)), step))

    def _node(self, index: int) -> int:
        if not 0 <= index < len(self.features):
            raise UnsupportedModel(f"TreeEnsemble node {index} out of range",
                                   expected=f"node ids below {len(self.features)}")
        return index


def convert_tree_ensemble(ctx, node, attrs):
    post = int(attrs.get("post_transform", 0))
    if post != 0:
        raise UnsupportedModel(f"TreeEnsemble post_transform {post}", expected="0 (NONE)")
    aggregate = int(attrs.get("aggregate_function", 1))
    if aggregate not in AGGREGATES:
        raise UnsupportedModel(f"TreeEnsemble aggregate_function {aggregate}",
                               expected="0 (AVERAGE), 1 (SUM), 2 (MIN) or 3 (MAX)")
    forest = _Forest(attrs)
    targets = int(attrs["n_targets"]) if "n_targets" in attrs else int(forest.leaf_targets.max(initial=-1)) + 1
    if forest.leaf_targets.size and not 0 <= forest.leaf_targets.min() <= forest.leaf_targets.max() < targets:
        raise UnsupportedModel("TreeEnsemble leaf_targetids outside n_targets", expected=f"targets below {targets}")
    x = ctx.value(node.input[0])
    type_ = ctx.builder.type(x)
    if type_.rank != 2 or not type_.dtype.is_float:
        raise UnsupportedModel(f"TreeEnsemble of a {type_}", expected="a 2-D float tensor [N, features]")
    if forest.features.size and not isinstance(type_.shape[1], int):
        raise UnsupportedModel("TreeEnsemble over a symbolic feature count", expected="a static feature count")
    if forest.features.size and forest.features.max() >= type_.shape[1]:
        raise UnsupportedModel(f"TreeEnsemble reading feature {int(forest.features.max())} of {type_.shape[1]}",
                               expected="feature ids below the input's width")
    name = hint(node)
    reached = _reached(ctx.builder, x, type_.shape[0], forest, name)
    total = _aggregate(ctx.builder, reached, type_.dtype, forest, targets, aggregate, name)
    if ctx.builder.type(total).dtype is not type_.dtype:
        total = ctx.builder.op("cast", [total], {"to": type_.dtype}, hint=name)
    return [total]


def _reached(builder, x: str, rows, forest: _Forest, name: str) -> str:
    """Which path (leaf of a tree) each row reaches: bool [rows, paths]."""
    used = sorted({node for _, path in forest.paths for node, _ in path})
    paths = len(forest.paths)
    if not used:  # every tree is a single leaf
        return builder.splat(f"{name}.reached", True, _type(DType.bool, (rows, paths)))
    column = {node: index for index, node in enumerate(used)}
    needs = np.zeros((len(used), paths), np.float32)
    needs_false = np.zeros(paths, np.float32)
    lengths = np.zeros(paths, np.float32)
    for index, (_, path) in enumerate(forest.paths):
        for node, outcome in path:
            needs[column[node], index] += 1.0 if outcome else -1.0
            needs_false[index] += 0.0 if outcome else 1.0
        lengths[index] = len(path)
    tests = _tests(builder, x, rows, forest, np.asarray(used), name)
    as_numbers = builder.op("cast", [tests], {"to": DType.f32}, hint=f"{name}.tests_f32")
    met = builder.op("matmul", [as_numbers, builder.literal(f"{name}.needs", needs)], hint=f"{name}.met")
    met = builder.op("add", [met, builder.literal(f"{name}.needs_false", needs_false)], hint=f"{name}.met_all")
    return builder.op("eq", [met, builder.literal(f"{name}.lengths", lengths)], hint=f"{name}.reached")


def _tests(builder, x: str, rows, forest: _Forest, used: np.ndarray, name: str) -> str:
    """Each used branch node's outcome per row: bool [rows, nodes]."""
    features = builder.op("gather", [x, builder.literal(f"{name}.feature_ids", forest.features[used])], {"axis": 1},
                          hint=f"{name}.features")
    modes = forest.modes[used]
    compared, dtype = _cast_for_test(builder, features, forest.split_dtype, False, f"{name}.features")
    splits = builder.literal(f"{name}.splits", forest.splits[used].astype(dtype.numpy), dtype)
    outcome = None
    for mode in sorted(set(modes.tolist())):
        if mode == MEMBER:
            tested = _membership(builder, features, rows, forest, used, name)
        else:
            tested = builder.op(COMPARISONS[mode], [compared, splits], hint=f"{name}.{COMPARISONS[mode]}")
        if outcome is None:
            outcome = tested
        else:
            mask = builder.literal(f"{name}.mode{mode}", modes == mode, DType.bool)
            outcome = builder.op("where", [mask, tested, outcome], hint=f"{name}.mode{mode}_tests")
    tracks = forest.tracks[used]
    if tracks.any():
        missing = builder.op("ne", [features, features], hint=f"{name}.missing")
        if not tracks.all():
            missing = builder.op("minimum", [missing, builder.literal(f"{name}.tracks", tracks, DType.bool)],
                                 hint=f"{name}.missing_true")
        outcome = builder.op("maximum", [outcome, missing], hint=f"{name}.tests")
    return outcome


def _cast_for_test(builder, features: str, given: np.dtype, exact: bool, name: str) -> tuple[str, DType]:
    """`features` in the dtype a test against an attribute of dtype `given` compares in, and
    that dtype: `given` itself for the splits (ONNX's reference compares a feature with a
    split in the split's precision: a double feature against a float split rounded to
    float), the wider of the two where `exact` (its set lookup compares a feature with a
    member exactly)."""
    dtype = builder.type(features).dtype
    wanted = np.result_type(dtype.numpy, given) if exact else given
    if wanted == dtype.numpy:
        return features, dtype
    target = dtype_of_array(np.zeros(0, wanted))
    return builder.op("cast", [features], {"to": target}, hint=name), target


def _membership(builder, features: str, rows, forest: _Forest, used: np.ndarray, name: str) -> str:
    """Set membership of each used node's feature: bool [rows, nodes] (NaN pads every set to
    the longest and fills the rows of other nodes: it equals nothing)."""
    width = max([len(forest.members.get(int(node), [])) for node in used] + [1])
    members = np.full((len(used), width), np.nan)
    for row, node in enumerate(used.tolist()):
        values = forest.members.get(node, [])
        members[row, : len(values)] = values
    compared, dtype = _cast_for_test(builder, features, forest.member_dtype, True, f"{name}.member_features")
    table = builder.literal(f"{name}.members", members.astype(dtype.numpy), dtype)
    spread = builder.op("reshape", [compared], {"shape": (rows, len(used), 1)}, hint=f"{name}.spread")
    hits = builder.op("eq", [spread, table], hint=f"{name}.hits")
    counted = builder.op("reduce_sum", [builder.op("cast", [hits], {"to": DType.f32}, hint=f"{name}.hits_f32")],
                         {"axes": (2,), "keepdims": False}, hint=f"{name}.hit_count")
    return builder.op("gt", [counted, builder.scalar(0.0, DType.f32)], hint=f"{name}.member")


def _aggregate(builder, reached: str, dtype: DType, forest: _Forest, targets: int, aggregate: int, name: str) -> str:
    """The leaves reached, aggregated per target: [rows, targets]."""
    paths = len(forest.paths)
    leaves = np.array([leaf for leaf, _ in forest.paths], np.int64)
    weights = forest.leaf_weights[leaves]
    at = forest.leaf_targets[leaves]
    work = dtype if dtype in (DType.f32, DType.f64) else DType.f32
    if aggregate in (0, 1):
        placed = np.zeros((paths, targets), np.float64)
        for index in range(paths):
            placed[index, at[index]] += weights[index] / (len(forest.roots) if aggregate == 0 else 1)
        taken = builder.op("cast", [reached], {"to": work}, hint=f"{name}.taken")
        return builder.op("matmul", [taken, builder.literal(f"{name}.weights", placed.astype(work.numpy), work)],
                          hint=f"{name}.total")
    bound = np.finfo(dtype.numpy)
    empty = bound.max if aggregate == 2 else bound.min
    named = np.zeros((paths, targets), bool)
    named[np.arange(paths), at] = True
    rows = builder.type(reached).shape[0]
    spread = builder.op("reshape", [reached], {"shape": (rows, paths, 1)}, hint=f"{name}.reached3")
    counts = builder.op("minimum", [spread, builder.literal(f"{name}.targets", named, DType.bool)],
                        hint=f"{name}.counts")
    values = builder.literal(f"{name}.weights", weights.reshape(paths, 1).astype(dtype.numpy), dtype)
    chosen = builder.op("where", [counts, values, builder.scalar(float(empty), dtype)], hint=f"{name}.chosen")
    return builder.op("reduce_min" if aggregate == 2 else "reduce_max", [chosen], {"axes": (1,), "keepdims": False},
                      hint=f"{name}.total")


def _type(dtype: DType, shape: tuple):
    from rlxir.types import TensorType

    return TensorType(dtype, shape)


register({"ai.onnx.ml.TreeEnsemble": convert_tree_ensemble})
