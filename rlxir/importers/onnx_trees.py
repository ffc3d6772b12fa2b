"""ONNX op -> core ops: ``ai.onnx.ml`` TreeEnsemble (opset 5), a forest of decision trees,
and its older forms TreeEnsembleRegressor and TreeEnsembleClassifier.

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
3. which leaf each row reaches: the tests along each leaf's path, gathered from the nodes'
   outcomes into [rows, leaves, depth] (a short path padded with an always-true test),
   compared with the outcomes the path needs and counted: every one went its way;
4. the aggregate over the trees of the leaves reached, per target: a ``matmul`` by the
   leaves' weights placed at their targets for SUM (divided by the tree count for AVERAGE),
   a ``reduce_min`` / ``reduce_max`` over the leaves for MIN / MAX, where a target no
   reached leaf names keeps the dtype's largest (smallest) finite value, as ONNX's
   reference has it.

A tree that is a single leaf (a node whose two branches name it) gives that leaf's weight
to every row. `post_transform` other than NONE is refused; `nodes_hitrates` is advisory and
not read. The older forms name nodes by (tree, node) id and mark leaves by mode, send a
NaN feature where the node's missing-value flag says whatever its test, add
`base_values`, and the classifier ends with a `post_transform` and the label of the best
score (`_LegacyForest`, rlxir/importers/onnx_ml_scores.py).
"""

from __future__ import annotations

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel, dtype_of_array
from rlxir.importers.onnx_ml_scores import attribute_array, class_labels, named, post_transform
from rlxir.importers.onnx_ops import hint
from rlxir.importers.onnx_registry import register
from rlxir.types import TensorType

COMPARISONS = {0: "le", 1: "lt", 2: "ge", 3: "gt", 4: "eq", 5: "ne"}
MEMBER = 6
AGGREGATES = {0: "AVERAGE", 1: "SUM", 2: "MIN", 3: "MAX"}


def _required(attrs, name: str) -> np.ndarray:
    if name not in attrs:
        raise UnsupportedModel(f"TreeEnsemble without its {name} attribute", expected=f"{name} set")
    return attribute_array(attrs[name]).reshape(-1)


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
        self.tracks = np.zeros(count, bool) if tracks is None else attribute_array(tracks).reshape(-1).astype(bool)
        self.members = self._member_sets(attrs.get("membership_values"))
        self.exact_splits = False  # a split compares in its own dtype
        self.nan_goes_by_tracks = False  # NaN: the comparison's outcome, or true where tracked
        # One path per leaf reached: what it adds ([(target, weight), ...]) and its (node, outcome) steps.
        self.paths: list[tuple[list[tuple[int, float]], list[tuple[int, bool]]]] = []
        self.tree_count = len(self.roots)
        for root in self.roots.tolist():
            self._walk(int(root))

    def _member_sets(self, values) -> dict[int, list[float]]:
        """Each MEMBER node's set: the membership values in node order, NaN after each set."""
        member_nodes = np.flatnonzero(self.modes == MEMBER).tolist()
        given = np.zeros(0, np.float32) if values is None else attribute_array(values).reshape(-1)
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

    def _leaf(self, index: int) -> list[tuple[int, float]]:
        if not 0 <= index < len(self.leaf_weights):
            raise UnsupportedModel(f"TreeEnsemble leaf {index} out of range",
                                   expected=f"leaf ids below {len(self.leaf_weights)}")
        return [(int(self.leaf_targets[index]), float(self.leaf_weights[index]))]

    def _walk(self, root: int) -> None:
        # A tree that is one leaf is written as a node whose two branches name that leaf: its
        # two paths reach the same leaf, one of them on every row. (ONNX's reference reads
        # the leaf at the root's node index instead, which names some other leaf.)
        self._checked_node(root)
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
                    stack.append((self._checked_node(int(target)), step))

    def _checked_node(self, index: int) -> int:
        if not 0 <= index < len(self.features):
            raise UnsupportedModel(f"TreeEnsemble node {index} out of range",
                                   expected=f"node ids below {len(self.features)}")
        return index


class _LegacyForest(_Forest):
    """The trees of TreeEnsembleRegressor (`prefix` "target") and TreeEnsembleClassifier
    ("class"): nodes named by (tree id, node id), the first node of a tree its root, a node
    of mode LEAF a leaf, and the `{prefix}_*` entries naming what each leaf adds. A NaN
    feature goes where `nodes_missing_value_tracks_true` says, whatever the test; a
    feature compares with a split in the wider of their dtypes (as ONNX's reference's
    scalars do)."""

    def __init__(self, attrs, op_type: str, prefix: str) -> None:
        self.op_type = op_type
        tree_ids = self._ints(attrs, "nodes_treeids")
        node_ids = self._ints(attrs, "nodes_nodeids")
        self.features = self._ints(attrs, "nodes_featureids")
        names = [mode.decode() if isinstance(mode, bytes) else str(mode) for mode in attrs.get("nodes_modes", [])]
        count = len(tree_ids)
        if not (len(node_ids) == len(self.features) == len(names) == count):
            raise UnsupportedModel(f"{op_type} whose nodes_* attributes differ in length",
                                   expected="one entry per node in every nodes_* attribute")
        codes = {"BRANCH_LEQ": 0, "BRANCH_LT": 1, "BRANCH_GTE": 2, "BRANCH_GT": 3, "BRANCH_EQ": 4, "BRANCH_NEQ": 5,
                 "LEAF": -1}
        unknown = sorted(set(names) - set(codes))
        if unknown:
            raise UnsupportedModel(f"{op_type} node mode {unknown[0]!r}", expected=" or ".join(codes))
        self.modes = np.array([codes[name] for name in names], np.int64)
        given = attribute_array(attrs["nodes_values_as_tensor"]) if "nodes_values_as_tensor" in attrs else \
            np.asarray(attrs.get("nodes_values", np.zeros(count)), np.float32)
        self.split_dtype = given.dtype if given.dtype.kind == "f" else np.dtype(np.float64)
        self.splits = given.reshape(-1).astype(np.float64)
        true_ids, false_ids = self._ints(attrs, "nodes_truenodeids"), self._ints(attrs, "nodes_falsenodeids")
        tracks = attrs.get("nodes_missing_value_tracks_true")
        self.tracks = np.zeros(count, bool) if tracks is None else np.asarray(tracks).reshape(-1).astype(bool)
        if not (len(self.splits) == len(true_ids) == len(false_ids) == len(self.tracks) == count):
            raise UnsupportedModel(f"{op_type} whose nodes_* attributes differ in length",
                                   expected="one entry per node in every nodes_* attribute")
        self.members, self.member_dtype = {}, np.dtype(np.float64)
        self.exact_splits = True
        self.nan_goes_by_tracks = True
        index = {(int(tree), int(node)): position for position, (tree, node) in enumerate(zip(tree_ids, node_ids))}
        self.index = index
        self.true_ids = np.array([self._position(tree_ids[i], true_ids[i]) if self.modes[i] >= 0 else -1
                                  for i in range(count)], np.int64)
        self.false_ids = np.array([self._position(tree_ids[i], false_ids[i]) if self.modes[i] >= 0 else -1
                                   for i in range(count)], np.int64)
        weights = attribute_array(attrs[f"{prefix}_weights_as_tensor"]) if f"{prefix}_weights_as_tensor" in attrs else \
            np.asarray(attrs.get(f"{prefix}_weights", []), np.float32)
        entry_trees, entry_nodes = self._ints(attrs, f"{prefix}_treeids"), self._ints(attrs, f"{prefix}_nodeids")
        entry_targets = self._ints(attrs, f"{prefix}_ids")
        weights = weights.reshape(-1).astype(np.float64)
        if not (len(entry_trees) == len(entry_nodes) == len(entry_targets) == len(weights)):
            raise UnsupportedModel(f"{op_type} whose {prefix}_* attributes differ in length",
                                   expected=f"one entry per weight in every {prefix}_* attribute")
        self.adds: dict[int, list[tuple[int, float]]] = {}
        for tree, node, target, weight in zip(entry_trees, entry_nodes, entry_targets, weights):
            self.adds.setdefault(self._position(tree, node), []).append((int(target), float(weight)))
        self.targets_named = entry_targets
        roots: dict[int, int] = {}
        for position, tree in enumerate(tree_ids.tolist()):
            roots.setdefault(tree, position)
        self.roots = np.array(sorted(roots.values()), np.int64)
        self.tree_count = len(roots)
        self.paths = []
        for root in self.roots.tolist():
            self._walk_legacy(root)

    def _ints(self, attrs, name: str) -> np.ndarray:
        return np.asarray(attrs.get(name, []), np.int64).reshape(-1)

    def _position(self, tree, node) -> int:
        position = self.index.get((int(tree), int(node)))
        if position is None:
            raise UnsupportedModel(f"{self.op_type} names node {int(node)} of tree {int(tree)}, which is not defined",
                                   expected="true, false and leaf ids of the tree's own nodes")
        return position

    def _walk_legacy(self, root: int) -> None:
        stack: list[tuple[int, list[tuple[int, bool]]]] = [(root, [])]
        while stack:
            node, path = stack.pop()
            if self.modes[node] < 0:
                self.paths.append((self.adds.get(node, []), path))
                continue
            for outcome, target in ((False, self.false_ids[node]), (True, self.true_ids[node])):
                step = [*path, (node, outcome)]
                if any(seen == target for seen, _ in step) or len(step) > len(self.modes):
                    raise UnsupportedModel(f"{self.op_type} whose node {int(target)} is its own ancestor",
                                           expected="trees (no branch leads back up)")
                stack.append((int(target), step))


def _checked_input(ctx, node, forest: _Forest, op_type: str, cast_integers: bool) -> str:
    x = ctx.value(node.input[0])
    type_ = ctx.builder.type(x)
    if type_.rank != 2:
        raise UnsupportedModel(f"{op_type} of a rank-{type_.rank} tensor", expected="a 2-D tensor [N, features]")
    if not type_.dtype.is_float:
        if not (cast_integers and type_.dtype.is_integer):
            raise UnsupportedModel(f"{op_type} of a {type_.dtype} tensor", expected="a float tensor")
        x = ctx.builder.op("cast", [x], {"to": DType.f32}, hint=f"{hint(node)}.x")
    used = [node for _, path in forest.paths for node, _ in path]
    if used and not isinstance(type_.shape[1], int):
        raise UnsupportedModel(f"{op_type} over a symbolic feature count", expected="a static feature count")
    if used and max(forest.features[used]) >= type_.shape[1]:
        raise UnsupportedModel(f"{op_type} reading feature {int(max(forest.features[used]))} of {type_.shape[1]}",
                               expected="feature ids below the input's width")
    return x


def _check_targets(forest: _Forest, targets: int, op_type: str, what: str) -> None:
    named = [target for adds, _ in forest.paths for target, _ in adds]
    if named and not 0 <= min(named) <= max(named) < targets:
        raise UnsupportedModel(f"{op_type} {what} outside {targets} outputs", expected=f"{what} below {targets}")


def convert_tree_ensemble(ctx, node, attrs):
    post = int(attrs.get("post_transform", 0))
    if post != 0:
        raise UnsupportedModel(f"TreeEnsemble post_transform {post}", expected="0 (NONE)")
    aggregate = AGGREGATES.get(int(attrs.get("aggregate_function", 1)))
    if aggregate is None:
        raise UnsupportedModel(f"TreeEnsemble aggregate_function {int(attrs['aggregate_function'])}",
                               expected="0 (AVERAGE), 1 (SUM), 2 (MIN) or 3 (MAX)")
    forest = _Forest(attrs)
    targets = int(attrs["n_targets"]) if "n_targets" in attrs else int(forest.leaf_targets.max(initial=-1)) + 1
    _check_targets(forest, targets, "TreeEnsemble", "leaf_targetids")
    x = _checked_input(ctx, node, forest, "TreeEnsemble", cast_integers=False)
    dtype = ctx.builder.type(x).dtype
    name = hint(node)
    reached = _reached(ctx.builder, x, ctx.builder.type(x).shape[0], forest, name)
    total = _aggregate(ctx.builder, reached, dtype, forest, targets, aggregate, name)
    if ctx.builder.type(total).dtype is not dtype:
        total = ctx.builder.op("cast", [total], {"to": dtype}, hint=name)
    return [named(ctx.builder, total, name)]


def convert_tree_ensemble_regressor(ctx, node, attrs):
    """TreeEnsembleRegressor: the targets' weights of the leaves reached, aggregated by
    `aggregate_function` (AVERAGE divides the sum by the tree count), plus `base_values`;
    f32, as ONNX declares it (an f64 input is computed in f64 first)."""
    post = attrs.get("post_transform", "NONE")
    if post != "NONE":
        raise UnsupportedModel(f"TreeEnsembleRegressor post_transform {post!r}", expected="NONE")
    aggregate = attrs.get("aggregate_function", "SUM")
    if aggregate not in AGGREGATES.values():
        raise UnsupportedModel(f"TreeEnsembleRegressor aggregate_function {aggregate!r}",
                               expected=" or ".join(AGGREGATES.values()))
    forest = _LegacyForest(attrs, "TreeEnsembleRegressor", "target")
    targets = int(attrs.get("n_targets", int(forest.targets_named.max(initial=-1)) + 1))
    _check_targets(forest, targets, "TreeEnsembleRegressor", "target_ids")
    x = _checked_input(ctx, node, forest, "TreeEnsembleRegressor", cast_integers=False)
    dtype = ctx.builder.type(x).dtype
    name = hint(node)
    reached = _reached(ctx.builder, x, ctx.builder.type(x).shape[0], forest, name)
    total = _aggregate(ctx.builder, reached, dtype, forest, targets, aggregate, f"{name}.trees", DType.f32)
    base = _base_values(attrs, targets, "TreeEnsembleRegressor")
    if base is not None:
        total = ctx.builder.op("add", [total, ctx.builder.literal(f"{name}.base", base.astype(
            ctx.builder.type(total).dtype.numpy), ctx.builder.type(total).dtype)], hint=f"{name}.based")
    if ctx.builder.type(total).dtype is not DType.f32:  # ONNX declares the output float
        total = ctx.builder.op("cast", [total], {"to": DType.f32}, hint=name)
    return [named(ctx.builder, total, name)]


def convert_tree_ensemble_classifier(ctx, node, attrs):
    """TreeEnsembleClassifier: per class, `base_values` plus the class weights of the leaves
    reached (f32); one class named by every weight makes a binary score pair, as ONNX's
    reference builds it; then `post_transform`, and the label of the best score."""
    labels_given = attrs.get("classlabels_int64s")
    strings = attrs.get("classlabels_strings")
    classes = len(labels_given) if labels_given is not None else len(strings or [])
    if classes < 2:
        # ONNX's shape inference gives one label one column of scores, its reference two.
        raise UnsupportedModel(f"TreeEnsembleClassifier with {classes} class label{'s' if classes != 1 else ''}",
                               expected="two class labels or more")
    forest = _LegacyForest(attrs, "TreeEnsembleClassifier", "class")
    _check_targets(forest, classes, "TreeEnsembleClassifier", "class_ids")
    x = _checked_input(ctx, node, forest, "TreeEnsembleClassifier", cast_integers=True)
    name = hint(node, 1) if len(node.output) > 1 and node.output[1] else f"{hint(node)}.scores"
    builder = ctx.builder
    reached = _reached(builder, x, builder.type(x).shape[0], forest, name)
    scores = _aggregate(builder, reached, DType.f32, forest, classes, "SUM", f"{name}.trees")
    base = _base_values(attrs, classes, "TreeEnsembleClassifier")
    if base is not None:
        scores = builder.op("add", [scores, builder.literal(f"{name}.base", base.astype(np.float32))],
                            hint=f"{name}.based")
    post = attrs.get("post_transform", "NONE")
    if len(set(forest.targets_named.tolist())) == 1:
        scores = _binary_pair(builder, scores, classes, post, name)
    scores = named(builder, post_transform(ctx, scores, post, "TreeEnsembleClassifier", name), name)
    return [class_labels(ctx, node, scores, labels_given, strings, "TreeEnsembleClassifier"), scores]


def _binary_pair(builder, scores: str, classes: int, post: str, name: str) -> str:
    """ONNX's reference's binary case: the score of the one class named goes to column 1,
    column 0 becomes 1 - it (NONE, PROBIT) or its negation."""
    first = builder.op("slice", [scores], {"axis": 1, "start": 0, "len": 1}, hint=f"{name}.one")
    other = builder.op("sub", [builder.scalar(1.0, DType.f32), first], hint=f"{name}.other") \
        if post in ("NONE", "PROBIT") else builder.op("neg", [first], hint=f"{name}.other")
    pieces = [other, first]
    if classes > 2:
        rest = builder.op("slice", [scores], {"axis": 1, "start": 2, "len": classes - 2}, hint=f"{name}.rest")
        pieces.append(rest)
    return builder.op("concat", pieces, {"axis": 1}, hint=f"{name}.pair")


def _base_values(attrs, width: int, op_type: str) -> np.ndarray | None:
    if "base_values_as_tensor" in attrs:
        base = attribute_array(attrs["base_values_as_tensor"]).reshape(-1).astype(np.float64)
    elif attrs.get("base_values"):
        base = np.asarray(attrs["base_values"], np.float32).astype(np.float64)
    else:
        return None
    if len(base) not in (1, width):
        raise UnsupportedModel(f"{op_type} with {len(base)} base values for {width} outputs",
                               expected=f"{width} base values, or one for all")
    return np.broadcast_to(base, (width,)).copy()  # one value serves every output, as in ONNX's reference


def _reached(builder, x: str, rows, forest: _Forest, name: str) -> str:
    """Which path (leaf of a tree) each row reaches: bool [rows, paths]. Each path's tests
    are gathered from the nodes' outcomes (padded to the deepest path with a column that is
    always true) and compared with the outcomes the path needs: the static tables are
    paths x depth, whatever the forest's width."""
    used = sorted({node for _, path in forest.paths for node, _ in path})
    paths = len(forest.paths)
    if not used:  # every tree is a single leaf
        return builder.splat(f"{name}.reached", True, TensorType(DType.bool, (rows, paths)))
    column = {node: index for index, node in enumerate(used)}
    depth = max(len(path) for _, path in forest.paths)
    steps = np.full((paths, depth), len(used), np.int64)  # the always-true column
    wanted = np.ones((paths, depth), bool)
    for index, (_, path) in enumerate(forest.paths):
        for level, (node, outcome) in enumerate(path):
            steps[index, level] = column[node]
            wanted[index, level] = outcome
    tests = _tests(builder, x, rows, forest, np.asarray(used), name)
    always = builder.splat(f"{name}.always", True, TensorType(DType.bool, (rows, 1)))
    tests = builder.op("concat", [tests, always], {"axis": 1}, hint=f"{name}.tests_padded")
    taken = builder.op("gather", [tests, builder.literal(f"{name}.steps", steps)], {"axis": 1}, hint=f"{name}.taken")
    went = builder.op("eq", [taken, builder.literal(f"{name}.wanted", wanted, DType.bool)], hint=f"{name}.went")
    along = builder.op("reduce_sum", [builder.op("cast", [went], {"to": DType.i32}, hint=f"{name}.went_i32")],
                       {"axes": (2,), "keepdims": False}, hint=f"{name}.along")
    return builder.op("eq", [along, builder.scalar(depth, DType.i32)], hint=f"{name}.reached")


def _tests(builder, x: str, rows, forest: _Forest, used: np.ndarray, name: str) -> str:
    """Each used branch node's outcome per row: bool [rows, nodes]."""
    features = builder.op("gather", [x, builder.literal(f"{name}.feature_ids", forest.features[used])], {"axis": 1},
                          hint=f"{name}.features")
    modes = forest.modes[used]
    compared, dtype = _cast_for_test(builder, features, forest.split_dtype, forest.exact_splits, f"{name}.features")
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
    if forest.nan_goes_by_tracks:
        missing = builder.op("ne", [features, features], hint=f"{name}.missing")
        sent = builder.literal(f"{name}.tracks", tracks, DType.bool)
        return builder.op("where", [missing, sent, outcome], hint=f"{name}.tests")
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


def _aggregate(builder, reached: str, dtype: DType, forest: _Forest, targets: int, aggregate: str, name: str,
               output: DType | None = None) -> str:
    """What the leaves reached add, aggregated per target: [rows, targets], in `dtype`. A
    target no reached leaf names is 0 for SUM and AVERAGE, the largest (smallest) finite
    value of the `output` dtype (default `dtype`) for MIN (MAX)."""
    entries = [(path, target, weight) for path, (adds, _) in enumerate(forest.paths) for target, weight in adds]
    work = dtype if dtype in (DType.f32, DType.f64) else DType.f32
    if aggregate in ("SUM", "AVERAGE"):
        placed = np.zeros((len(forest.paths), targets), np.float64)
        for path, target, weight in entries:
            placed[path, target] += weight
        if aggregate == "AVERAGE":
            placed /= forest.tree_count
        taken = builder.op("cast", [reached], {"to": work}, hint=f"{name}.taken")
        return builder.op("matmul", [taken, builder.literal(f"{name}.weights", placed.astype(work.numpy), work)],
                          hint=f"{name}.total")
    bound = np.finfo((output or dtype).numpy)
    empty = bound.max if aggregate == "MIN" else bound.min
    rows = builder.type(reached).shape[0]
    if not entries:
        return builder.splat(f"{name}.total", float(empty), TensorType(dtype, (rows, targets)))
    paths = np.array([path for path, _, _ in entries], np.int64)
    named = np.zeros((len(entries), targets), bool)
    named[np.arange(len(entries)), [target for _, target, _ in entries]] = True
    weights = np.array([weight for _, _, weight in entries]).reshape(-1, 1)
    taken = builder.op("gather", [reached, builder.literal(f"{name}.entry_paths", paths)], {"axis": 1},
                       hint=f"{name}.entries")
    spread = builder.op("reshape", [taken], {"shape": (rows, len(entries), 1)}, hint=f"{name}.reached3")
    counts = builder.op("minimum", [spread, builder.literal(f"{name}.targets", named, DType.bool)],
                        hint=f"{name}.counts")
    values = builder.literal(f"{name}.weights", weights.astype(dtype.numpy), dtype)
    chosen = builder.op("where", [counts, values, builder.scalar(float(empty), dtype)], hint=f"{name}.chosen")
    return builder.op("reduce_min" if aggregate == "MIN" else "reduce_max", [chosen],
                      {"axes": (1,), "keepdims": False}, hint=f"{name}.total")


register({"ai.onnx.ml.TreeEnsemble": convert_tree_ensemble,
          "ai.onnx.ml.TreeEnsembleRegressor": convert_tree_ensemble_regressor,
          "ai.onnx.ml.TreeEnsembleClassifier": convert_tree_ensemble_classifier})
