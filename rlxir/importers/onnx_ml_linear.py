"""ONNX op -> core ops: the ``ai.onnx.ml`` preprocessing and linear-model ops that
scikit-learn pipelines export, each checked against ONNX's reference evaluator.

- **Scaler**: ``(x - offset) * scale``, per feature or one value for all.
- **Normalizer**: each row divided by its MAX, L1 or L2 norm (at least 1e-30).
- **Imputer**: the entries equal to `replaced_value_*` (NaN: the NaNs) replaced by the
  imputed value of their feature.
- **LinearRegressor**: ``x @ coefficients.T + intercepts`` per target, then
  `post_transform`.
- **SVMRegressor**: the kernel (LINEAR, POLY, RBF, SIGMOID) of each row with the support
  vectors, by the coefficients, plus rho; a one-class model's sign.
- **SVMClassifier**: one score per pair of classes and their votes (or one linear score
  per class); with `prob_a` / `prob_b`, the class probabilities by libsvm's coupling,
  unrolled (at most 100 rounds, each row stopping on its own).
- **LinearClassifier**: the class scores ``x @ coefficients.T + intercepts``; one score
  column for two classes becomes the pair (-s, s); then `post_transform`, and the label of
  the best score (one column: the first label where the score reaches 0, or 0.5 after a
  transform, else 0).
- **OneHotEncoder**: a trailing axis of `cats_int64s` indicators; a value outside the
  categories gives a row of zeros (with ``zeros=0`` ONNX makes that an error, which the
  graph does not check).
- **FeatureVectorizer**: the inputs as rows of `inputdimensions` values each (cut, or
  padded with zeros), side by side.
- **LabelEncoder** of numbers (int64 or float keys and values, as lists or tensors): each
  key's value, `default_*` for any other; string keys or values are refused, the IR having
  no string tensors.

Outputs are f32 where ONNX declares them float (an f64 input is computed in f64 first; ONNX's
reference keeps f64 there for Scaler and Normalizer, which the specification does not).
"""

from __future__ import annotations

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel, dtype_of_array
from rlxir.importers.onnx_ml_scores import attribute_array, best_class, class_labels, named, post_transform
from rlxir.importers.onnx_ops import Arith, hint, unused
from rlxir.importers.onnx_registry import register
from rlxir.types import TensorType


def _float_input(ctx, node, op_type: str, index: int = 0) -> str:
    """Input `index` as a float tensor: f32 and f64 as given, integers cast to f32."""
    x = ctx.value(node.input[index])
    dtype = ctx.builder.type(x).dtype
    if dtype in (DType.f32, DType.f64):
        return x
    if dtype.is_integer or dtype.is_float:
        return ctx.builder.op("cast", [x], {"to": DType.f32}, hint=f"{hint(node)}.x{index}")
    raise UnsupportedModel(f"{op_type} of a {dtype} tensor", expected="a numeric tensor")


def _matrix(ctx, node, op_type: str) -> str:
    x = _float_input(ctx, node, op_type)
    type_ = ctx.builder.type(x)
    if type_.rank != 2 or not isinstance(type_.shape[1], int):
        raise UnsupportedModel(f"{op_type} of a {type_}", expected="a 2-D tensor [N, features], features static")
    return x


def _per_feature(values, features: int, op_type: str, what: str) -> np.ndarray:
    values = np.asarray(values, np.float64).reshape(-1)
    if len(values) not in (1, features):
        raise UnsupportedModel(f"{op_type} with {len(values)} {what} for {features} features",
                               expected=f"one {what[:-1]} or {features}")
    return values


def _choice(attrs, key: str, default: str, choices: tuple[str, ...], op_type: str) -> str:
    """String attribute `key` (or `default`), refused unless one of `choices`."""
    value = attrs.get(key, default)
    if value not in choices:
        raise UnsupportedModel(f"{op_type} {key} {value!r}", expected=" or ".join(choices))
    return value


def _as_f32(builder, value: str, name: str) -> str:
    if builder.type(value).dtype is DType.f32:
        return value
    return builder.op("cast", [value], {"to": DType.f32}, hint=name)


def convert_scaler(ctx, node, attrs):
    x = _float_input(ctx, node, "Scaler")
    dtype = ctx.builder.type(x).dtype
    features = ctx.builder.type(x).shape[-1] if ctx.builder.type(x).rank else 1
    if not isinstance(features, int):
        raise UnsupportedModel("Scaler over a symbolic feature count", expected="a static last axis")
    name = hint(node)
    offset = _per_feature(attrs.get("offset", [0.0]), features, "Scaler", "offsets")
    scale = _per_feature(attrs.get("scale", [1.0]), features, "Scaler", "scales")
    shifted = ctx.builder.op("sub", [x, ctx.builder.literal(f"{name}.offset", offset.astype(dtype.numpy), dtype)],
                             hint=f"{name}.shifted")
    scaled = ctx.builder.op("mul", [shifted, ctx.builder.literal(f"{name}.scale", scale.astype(dtype.numpy), dtype)],
                            hint=f"{name}.scaled")
    return [named(ctx.builder, _as_f32(ctx.builder, scaled, name), name)]


NORMS = ("MAX", "L1", "L2")


def convert_normalizer(ctx, node, attrs):
    norm = _choice(attrs, "norm", "MAX", NORMS, "Normalizer")
    x = _matrix(ctx, node, "Normalizer")
    builder, name = ctx.builder, hint(node)
    dtype = builder.type(x).dtype
    row = {"axes": (1,), "keepdims": True}
    if norm == "L2":
        size = builder.op("sqrt", [builder.op("reduce_sum", [builder.op("mul", [x, x], hint=f"{name}.squares")], row,
                                              hint=f"{name}.sum")], hint=f"{name}.norm")
    else:
        magnitude = builder.op("abs", [x], hint=f"{name}.abs")
        size = builder.op("reduce_max" if norm == "MAX" else "reduce_sum", [magnitude], row, hint=f"{name}.norm")
    size = builder.op("maximum", [size, builder.scalar(1e-30, dtype)], hint=f"{name}.divisor")
    return [named(builder, _as_f32(builder, builder.op("div", [x, size], hint=f"{name}.normalized"), name), name)]


def convert_imputer(ctx, node, attrs):
    floats = attrs.get("imputed_value_floats")
    if floats:
        values, replaced = floats, float(attrs.get("replaced_value_float", 0.0))
    elif attrs.get("imputed_value_int64s"):
        values, replaced = attrs["imputed_value_int64s"], int(attrs.get("replaced_value_int64", 0))
    else:
        raise UnsupportedModel("Imputer without imputed values", expected="imputed_value_floats or _int64s")
    x = ctx.value(node.input[0])
    type_ = ctx.builder.type(x)
    if type_.rank != 2 or not isinstance(type_.shape[1], int):
        raise UnsupportedModel(f"Imputer of a {type_}", expected="a 2-D tensor [N, features], features static")
    builder, name, dtype = ctx.builder, hint(node), type_.dtype
    imputed = _per_feature(values, type_.shape[1], "Imputer", "imputed values")
    if isinstance(replaced, float) and np.isnan(replaced):
        if not dtype.is_float:
            return [x]  # an integer holds no NaN
        found = builder.op("ne", [x, x], hint=f"{name}.missing")
    else:
        found = builder.op("eq", [x, builder.scalar(replaced, dtype)], hint=f"{name}.missing")
    table = builder.literal(f"{name}.imputed", imputed.astype(dtype.numpy), dtype)
    return [builder.op("where", [found, table, x], hint=name)]


def _linear_scores(ctx, node, attrs, op_type: str, width_of) -> tuple[str, int]:
    """``x @ coefficients.T + intercepts`` (in x's float dtype) and the output count."""
    x = _matrix(ctx, node, op_type)
    builder, name = ctx.builder, hint(node, len(node.output) - 1)
    dtype = builder.type(x).dtype
    features = builder.type(x).shape[1]
    coefficients = np.asarray(attrs.get("coefficients", []), np.float64).reshape(-1)
    outputs = width_of(len(coefficients) // features if features else 0)
    if features == 0 or len(coefficients) != outputs * features:
        raise UnsupportedModel(f"{op_type} with {len(coefficients)} coefficients for {features} features",
                               expected="a multiple of the feature count")
    weights = coefficients.reshape(outputs, features).T.astype(dtype.numpy)
    scores = builder.op("matmul", [x, builder.literal(f"{name}.coefficients", weights, dtype)], hint=f"{name}.dot")
    intercepts = attrs.get("intercepts")
    if intercepts:
        scores = builder.op("add", [scores, builder.literal(f"{name}.intercepts", np.asarray(
            intercepts, np.float64).reshape(-1).astype(dtype.numpy), dtype)], hint=f"{name}.scores")
    return scores, outputs


def convert_linear_regressor(ctx, node, attrs):
    targets = int(attrs.get("targets", 1))
    scores, _ = _linear_scores(ctx, node, attrs, "LinearRegressor", lambda width: targets)
    scores = post_transform(ctx, scores, attrs.get("post_transform", "NONE"), "LinearRegressor", hint(node))
    return [named(ctx.builder, _as_f32(ctx.builder, scores, hint(node)), hint(node))]


def convert_linear_classifier(ctx, node, attrs):
    labels, strings = attrs.get("classlabels_ints"), attrs.get("classlabels_strings")
    classes = max(len(labels or []), len(strings or []))
    scores, columns = _linear_scores(ctx, node, attrs, "LinearClassifier", lambda width: width)
    builder, name = ctx.builder, hint(node, 1)
    post = attrs.get("post_transform", "NONE")
    if columns == 1 and classes == 2:
        scores = builder.op("concat", [builder.op("neg", [scores], hint=f"{name}.negative"), scores], {"axis": 1},
                            hint=f"{name}.pair")
        columns = 2
    scores = named(builder, _as_f32(builder, post_transform(ctx, scores, post, "LinearClassifier", name),
                                    f"{name}.f32"), name)
    if columns > 1:
        return [class_labels(ctx, node, scores, labels, strings, "LinearClassifier"), scores]
    if unused(ctx, node, 0):
        return [None, scores]
    if strings is not None:
        raise UnsupportedModel("LinearClassifier whose string labels (output 0) are read",
                               expected="classlabels_ints, or a model that reads only the scores")
    rows = builder.type(scores).shape[0]
    column = builder.op("reshape", [scores], {"shape": (rows,)}, hint=f"{name}.column")
    reached = builder.op("ge", [column, builder.scalar(0.0 if post == "NONE" else 0.5, DType.f32)],
                         hint=f"{name}.reached")
    label = int(labels[0]) if labels else 1
    return [builder.op("where", [reached, builder.scalar(label, DType.i64), builder.scalar(0, DType.i64)],
                       hint=hint(node)), scores]


KERNELS = ("LINEAR", "POLY", "RBF", "SIGMOID")


def convert_svm_regressor(ctx, node, attrs):
    """SVMRegressor: ``kernel(x, support_vectors) @ coefficients + rho`` (without support
    vectors, ``x @ coefficients + rho``); a one-class model answers 1 where that is above 0,
    else -1. The kernels: LINEAR ``x . v``, POLY ``(gamma x . v + coef0) ^ degree``, SIGMOID
    ``tanh(gamma x . v + coef0)``, RBF ``exp(-gamma |x - v|^2)``."""
    _choice(attrs, "post_transform", "NONE", ("NONE",), "SVMRegressor")
    kernel = _choice(attrs, "kernel_type", "LINEAR", KERNELS, "SVMRegressor")
    x = _matrix(ctx, node, "SVMRegressor")
    builder, name = ctx.builder, hint(node)
    dtype = builder.type(x).dtype
    features = builder.type(x).shape[1]
    supports = int(attrs.get("n_supports", 0))
    coefficients = np.asarray(attrs.get("coefficients", []), np.float64).reshape(-1)
    rho = np.asarray(attrs.get("rho", [0.0]), np.float64).reshape(-1)
    gamma, coef0, degree = (list(attrs.get("kernel_params", [])) + [0.0, 0.0, 0.0])[:3]
    if supports > 0:
        vectors = np.asarray(attrs.get("support_vectors", []), np.float64).reshape(-1)
        if len(vectors) != supports * features or len(coefficients) != supports:
            raise UnsupportedModel(f"SVMRegressor with {len(vectors)} support vector values and {len(coefficients)} "
                                   f"coefficients for {supports} vectors of {features} features",
                                   expected=f"{supports * features} values and {supports} coefficients")
        table = vectors.reshape(supports, features)
        dots = builder.op("matmul", [x, builder.literal(f"{name}.vectors_t", table.T.astype(dtype.numpy), dtype)],
                          hint=f"{name}.dots")
        kernels = _kernel(builder, x, dots, table, kernel, float(gamma), float(coef0), int(degree), name)
    else:
        if len(coefficients) != features:
            raise UnsupportedModel(f"SVMRegressor with {len(coefficients)} coefficients for {features} features",
                                   expected=f"{features} coefficients (no support vectors)")
        kernels, coefficients = x, coefficients
    column = coefficients.reshape(-1, 1).astype(dtype.numpy)
    score = builder.op("matmul", [kernels, builder.literal(f"{name}.coefficients", column, dtype)], hint=f"{name}.sum")
    score = builder.op("add", [score, builder.scalar(float(rho[0]), dtype)], hint=f"{name}.score")
    if int(attrs.get("one_class", 0)):
        above = builder.op("gt", [score, builder.scalar(0.0, dtype)], hint=f"{name}.above")
        score = builder.op("where", [above, builder.scalar(1.0, dtype), builder.scalar(-1.0, dtype)],
                           hint=f"{name}.side")
    return [named(builder, _as_f32(builder, score, name), name)]


def convert_svm_classifier(ctx, node, attrs):
    """SVMClassifier. With support vectors, one score per pair of classes (i < j, in order): ``rho[p]`` plus class i's
    vectors' kernels by the coefficients row j - 1, plus class j's by row i; a pair's vote
    goes to i where its score is above 0, else to j; the label is the class with the most
    votes (the first on ties). Without support vectors, one linear score per class, ``x .
    coefficients[c] + rho[0]``, and the best one's label. Two classes (one rho) label as
    ONNX's reference does: the second label where every coefficient is >= 0 and the best
    class's vote (or score) reaches 0.5, else the best class's; one score then becomes the
    pair (-s, s) before `post_transform` (PROBIT transforms it alone). With one rho and not
    two labels, the label is 1 where the best vote (or score) is above 0, else 0. With
    `prob_a` and `prob_b` the scores are the class probabilities of the pairwise scores
    (`_coupled_probabilities`); the label still comes from the votes."""
    prob_a = np.asarray(attrs.get("prob_a", []), np.float64).reshape(-1)
    prob_b = np.asarray(attrs.get("prob_b", []), np.float64).reshape(-1)
    labels, strings = attrs.get("classlabels_ints"), attrs.get("classlabels_strings")
    classes = max(len(labels or strings or []), 1)
    kernel = _choice(attrs, "kernel_type", "LINEAR", KERNELS, "SVMClassifier")
    post = attrs.get("post_transform", "NONE")
    x = _matrix(ctx, node, "SVMClassifier")
    builder, name = ctx.builder, hint(node, 1) if len(node.output) > 1 and node.output[1] else f"{hint(node)}.scores"
    dtype = builder.type(x).dtype
    features = builder.type(x).shape[1]
    coefficients = np.asarray(attrs.get("coefficients", []), np.float64).reshape(-1)
    rho = np.asarray(attrs.get("rho", [0.0]), np.float64).reshape(-1)
    per_class = [int(count) for count in attrs.get("vectors_per_class", [])]
    vectors = sum(per_class)
    votes = None
    if vectors:
        table = np.asarray(attrs.get("support_vectors", []), np.float64).reshape(-1)
        pairs = [(i, j) for i in range(classes) for j in range(i + 1, classes)]
        if len(per_class) != classes or len(table) != vectors * features or \
                len(coefficients) != (classes - 1) * vectors or len(rho) != len(pairs):
            raise UnsupportedModel("SVMClassifier whose support vectors, coefficients or rho do not fit its "
                                   f"{classes} classes and {features} features",
                                   expected="vectors_per_class per class, (classes - 1) x vectors coefficients, "
                                            "one rho per pair of classes")
        table = table.reshape(vectors, features)
        dots = builder.op("matmul", [x, builder.literal(f"{name}.vectors_t", table.T.astype(dtype.numpy), dtype)],
                          hint=f"{name}.dots")
        gamma, coef0, degree = (list(attrs.get("kernel_params", [])) + [0.0, 0.0, 0.0])[:3]
        kernels = _kernel(builder, x, dots, table, kernel, float(gamma), float(coef0), int(degree), name)
        rows = coefficients.reshape(classes - 1, vectors)
        starts = np.concatenate([[0], np.cumsum(per_class)])
        weights = np.zeros((vectors, len(pairs)))
        ahead, behind = np.zeros((len(pairs), classes)), np.zeros((len(pairs), classes))
        for p, (i, j) in enumerate(pairs):
            weights[starts[i]:starts[i + 1], p] = rows[j - 1, starts[i]:starts[i + 1]]
            weights[starts[j]:starts[j + 1], p] = rows[i, starts[j]:starts[j + 1]]
            ahead[p, i], behind[p, j] = 1.0, 1.0
        scores = builder.op("matmul", [kernels, builder.literal(f"{name}.pair_weights", weights.astype(dtype.numpy),
                                                                dtype)], hint=f"{name}.pair_dots")
        scores = builder.op("add", [scores, builder.literal(f"{name}.rho", rho.astype(dtype.numpy), dtype)],
                            hint=f"{name}.pairs")
        won = builder.op("cast", [builder.op("gt", [scores, builder.scalar(0.0, dtype)], hint=f"{name}.won_bool")],
                         {"to": DType.f32}, hint=f"{name}.won")
        lost = builder.op("sub", [builder.scalar(1.0, DType.f32), won], hint=f"{name}.lost")
        votes = builder.op("add", [builder.op("matmul", [won, builder.literal(f"{name}.ahead", ahead.astype(
            np.float32))], hint=f"{name}.votes_i"), builder.op("matmul", [lost, builder.literal(
                f"{name}.behind", behind.astype(np.float32))], hint=f"{name}.votes_j")], hint=f"{name}.votes")
    else:
        if len(coefficients) != classes * features:
            raise UnsupportedModel(f"SVMClassifier with {len(coefficients)} coefficients for {classes} classes of "
                                   f"{features} features", expected=f"{classes * features} coefficients")
        weights = coefficients.reshape(classes, features).T.astype(dtype.numpy)
        scores = builder.op("matmul", [x, builder.literal(f"{name}.coefficients", weights, dtype)],
                            hint=f"{name}.dots")
        scores = builder.op("add", [scores, builder.scalar(float(rho[0]), dtype)], hint=f"{name}.classes")
    label = _svm_label(ctx, node, votes if votes is not None else scores, labels, strings, len(rho) == 1,
                       bool(coefficients.size) and coefficients.min() >= 0)
    scores = _as_f32(builder, scores, f"{name}.f32")
    if len(prob_a) and votes is not None:
        if len(prob_a) != len(pairs) or len(prob_b) != len(pairs):
            raise UnsupportedModel(f"SVMClassifier with {len(prob_a)} prob_a and {len(prob_b)} prob_b for "
                                   f"{len(pairs)} pairs of classes", expected="one of each per pair")
        scores = _coupled_probabilities(ctx, scores, prob_a, prob_b, classes, pairs, name)
        return [label, named(builder, post_transform(ctx, scores, post, "SVMClassifier", name), name)]
    if builder.type(scores).shape[1] == 1 and post != "PROBIT":
        # One score: two labels make it the pair (-s, s) before the transform; otherwise it
        # stays as it is, untransformed (ONNX's reference).
        if not (labels is not None and len(labels) == 2 and len(rho) == 1):
            return [label, named(builder, scores, name)]
        scores = builder.op("concat", [builder.op("neg", [scores], hint=f"{name}.negative"), scores], {"axis": 1},
                            hint=f"{name}.pair")
    return [label, named(builder, post_transform(ctx, scores, post, "SVMClassifier", name), name)]


def _coupled_probabilities(ctx, scores: str, prob_a: np.ndarray, prob_b: np.ndarray, classes: int, pairs: list,
                           name: str) -> str:
    """The class probabilities of pairwise scores [rows, pairs] (f32): each pair's
    probability ``1 - logistic(score * prob_a + prob_b)`` (clipped to [1e-7, 1 - 1e-7]),
    coupled by libsvm's iterative solve (``multiclass_probability``, as onnxruntime runs it):
    at most max(100, classes) rounds, a row stopping once its largest residual is below
    0.005 / classes (its later rounds change nothing), unrolled into the graph. [rows, classes]."""
    builder, f32 = ctx.builder, DType.f32
    op = Arith(ctx, f32, name)  # op(kind, *operands, tag=...): a Python number is an f32 scalar
    rows = builder.type(scores).shape[0]
    a = builder.literal(f"{name}.prob_a", prob_a.astype(np.float32))
    b = builder.literal(f"{name}.prob_b", prob_b.astype(np.float32))
    pair = op("sub", 1.0, op("sigmoid", op("add", op("mul", scores, a, tag="scaled"), b, tag="shifted"),
                              tag="logistic"), tag="pair_probability")
    pair = op("minimum", op("maximum", pair, 1e-7, tag="floor"), 1.0 - 1e-7, tag="clipped")
    # R[i, j] = r for pair (i, j), R[j, i] = 1 - r: two matmuls onto the flattened k x k grid.
    upper, lower = np.zeros((len(pairs), classes * classes), np.float32), np.zeros((len(pairs), classes * classes),
                                                                                 np.float32)
    for p, (i, j) in enumerate(pairs):
        upper[p, i * classes + j] = 1.0
        lower[p, j * classes + i] = 1.0
    grid = op("add", op("matmul", pair, builder.literal(f"{name}.upper", upper), tag="upper_part"),
              op("matmul", op("sub", 1.0, pair, tag="other"), builder.literal(f"{name}.lower", lower),
                 tag="lower_part"),
              tag="r_flat")
    r = op("reshape", grid, tag="r", attrs={"shape": (rows, classes, classes)})
    r_t = op("transpose", r, tag="r_t", attrs={"perm": (0, 2, 1)})
    eye = np.eye(classes, dtype=bool)
    # Q[t, j] = -R[j, t] R[t, j] off the diagonal; Q[t, t] = sum over j of R[j, t]^2.
    cross = op("neg", op("mul", r_t, r, tag="products"), tag="off_diagonal")
    squares = op("reduce_sum", op("mul", r, r, tag="squares"), tag="diagonal_sums", attrs={"axes": (1,),
                                                                                             "keepdims": False})
    diagonal = op("mul", op("reshape", squares, tag="diagonal_col", attrs={"shape": (rows, classes, 1)}),
                  builder.literal(f"{name}.eye", eye.astype(np.float32)), tag="diagonal")
    q = op("add", op("where", builder.literal(f"{name}.eye_mask", eye), 0.0, cross, tag="off"), diagonal, tag="q")
    q_diagonal = [op("slice", op("slice", q, tag=f"q_row{t}", attrs={"axis": 1, "start": t, "len": 1}),
                     tag=f"q{t}{t}", attrs={"axis": 2, "start": t, "len": 1}) for t in range(classes)]
    q_rows = [op("reshape", op("slice", q, tag=f"q_r{t}", attrs={"axis": 1, "start": t, "len": 1}),
                 tag=f"q_row{t}_flat", attrs={"shape": (rows, classes)}) for t in range(classes)]
    q_diagonal = [op("reshape", value, tag=f"q{t}{t}_col", attrs={"shape": (rows, 1)})
                  for t, value in enumerate(q_diagonal)]
    unit = [builder.literal(f"{name}.unit{t}", np.eye(classes, dtype=np.float32)[t]) for t in range(classes)]
    p = builder.splat(f"{name}.p0", 1.0 / classes, TensorType(f32, (rows, classes)))
    done = builder.splat(f"{name}.done0", False, TensorType(DType.bool, (rows, 1)))
    eps = 0.005 / classes
    for round_ in range(max(100, classes)):
        tag = f"i{round_}"
        qp = op("reshape", op("matmul", q, op("reshape", p, tag=f"{tag}.p_col", attrs={"shape": (rows, classes, 1)}),
                              tag=f"{tag}.qp3"), tag=f"{tag}.qp", attrs={"shape": (rows, classes)})
        pqp = op("reduce_sum", op("mul", p, qp, tag=f"{tag}.p_qp"), tag=f"{tag}.pqp",
                 attrs={"axes": (1,), "keepdims": True})
        error = op("reduce_max", op("abs", op("sub", qp, pqp, tag=f"{tag}.residual"), tag=f"{tag}.size"),
                   tag=f"{tag}.error", attrs={"axes": (1,), "keepdims": True})
        done = op("maximum", done, op("lt", error, eps, tag=f"{tag}.converged"), tag=f"{tag}.done")
        for t in range(classes):
            step = f"{tag}.{t}"
            qp_t = op("slice", qp, tag=f"{step}.qp_t", attrs={"axis": 1, "start": t, "len": 1})
            diff = op("div", op("sub", pqp, qp_t, tag=f"{step}.gap"), q_diagonal[t], tag=f"{step}.diff_raw")
            diff = op("where", done, 0.0, diff, tag=f"{step}.diff")
            grow = op("add", 1.0, diff, tag=f"{step}.grow")
            p = op("add", p, op("mul", diff, unit[t], tag=f"{step}.bump"), tag=f"{step}.p_bumped")
            inner = op("add", op("mul", diff, q_diagonal[t], tag=f"{step}.dq"), op("mul", qp_t, 2.0, tag=f"{step}.qp2"),
                       tag=f"{step}.inner")
            pqp = op("div", op("add", pqp, op("mul", diff, inner, tag=f"{step}.change"), tag=f"{step}.pqp_raw"),
                     op("mul", grow, grow, tag=f"{step}.grow2"), tag=f"{step}.pqp")
            qp = op("div", op("add", qp, op("mul", diff, q_rows[t], tag=f"{step}.dqrow"), tag=f"{step}.qp_raw"), grow,
                    tag=f"{step}.qp")
            p = op("div", p, grow, tag=f"{step}.p")
    return p


def _svm_label(ctx, node, ranked: str, labels, strings, binary: bool, all_positive: bool) -> str | None:
    """SVMClassifier's label from its votes (or scores): see `convert_svm_classifier`."""
    if not binary or unused(ctx, node, 0):
        return class_labels(ctx, node, ranked, labels or None, strings, "SVMClassifier")
    if labels is None and strings is not None:
        raise UnsupportedModel("SVMClassifier whose string labels (output 0) are read",
                               expected="classlabels_ints, or a model that reads only the scores")
    builder, name = ctx.builder, node.output[0]
    best = best_class(ctx, ranked, name)
    top = builder.op("reduce_max", [ranked], {"axes": (1,), "keepdims": False}, hint=f"{name}.top")
    if labels is None or len(labels) != 2:
        positive = builder.op("gt", [top, builder.scalar(0.0, builder.type(top).dtype)], hint=f"{name}.positive")
        return builder.op("where", [positive, builder.scalar(1, DType.i64), builder.scalar(0, DType.i64)], hint=name)
    table = builder.literal(f"{name}.labels", np.asarray(labels, np.int64))
    picked = builder.op("gather", [table, best], {"axis": 0}, hint=f"{name}.picked")
    if not all_positive:
        return named(builder, picked, name)
    sure = builder.op("ge", [top, builder.scalar(0.5, builder.type(top).dtype)], hint=f"{name}.sure")
    return builder.op("where", [sure, builder.scalar(int(labels[1]), DType.i64), picked], hint=name)


def _kernel(builder, x: str, dots: str, vectors: np.ndarray, kernel: str, gamma: float, coef0: float, degree: int,
            name: str) -> str:
    """The kernel between each row of `x` and each support vector, from their dot products."""
    dtype = builder.type(x).dtype
    if kernel == "LINEAR":
        return dots
    if kernel == "RBF":
        # |x - v|^2 = |x|^2 - 2 x . v + |v|^2
        squares = builder.op("mul", [x, x], hint=f"{name}.x2")
        rows = builder.op("reduce_sum", [squares], {"axes": (1,), "keepdims": True}, hint=f"{name}.row_norms")
        norms = builder.literal(f"{name}.vector_norms", (vectors ** 2).sum(1).astype(dtype.numpy), dtype)
        twice = builder.op("mul", [dots, builder.scalar(2.0, dtype)], hint=f"{name}.twice")
        distance = builder.op("add", [builder.op("sub", [rows, twice], hint=f"{name}.partial"), norms],
                              hint=f"{name}.distance")
        distance = builder.op("maximum", [distance, builder.scalar(0.0, dtype)], hint=f"{name}.distance0")
        return builder.op("exp", [builder.op("mul", [distance, builder.scalar(-gamma, dtype)], hint=f"{name}.scaled")],
                          hint=f"{name}.kernel")
    scaled = builder.op("add", [builder.op("mul", [dots, builder.scalar(gamma, dtype)], hint=f"{name}.gamma"),
                                builder.scalar(coef0, dtype)], hint=f"{name}.affine")
    if kernel == "SIGMOID":
        return builder.op("tanh", [scaled], hint=f"{name}.kernel")
    return builder.op("pow", [scaled, builder.scalar(float(degree), dtype)], hint=f"{name}.kernel")


def convert_one_hot_encoder(ctx, node, attrs):
    categories = attrs.get("cats_int64s")
    if not categories:
        if attrs.get("cats_strings"):
            raise UnsupportedModel("OneHotEncoder of strings", expected="cats_int64s (the IR has no string tensors)")
        raise UnsupportedModel("OneHotEncoder without categories", expected="cats_int64s")
    x = ctx.value(node.input[0])
    type_ = ctx.builder.type(x)
    if not (type_.dtype.is_integer or type_.dtype.is_float):
        raise UnsupportedModel(f"OneHotEncoder of a {type_.dtype} tensor", expected="a numeric tensor")
    builder, name = ctx.builder, hint(node)
    spread = builder.op("reshape", [x], {"shape": (*type_.shape, 1)}, hint=f"{name}.spread")
    table = builder.literal(f"{name}.categories", np.asarray(categories, np.int64).astype(type_.dtype.numpy),
                            type_.dtype)
    hits = builder.op("eq", [spread, table], hint=f"{name}.hits")
    return [builder.op("cast", [hits], {"to": DType.f32}, hint=name)]


def convert_feature_vectorizer(ctx, node, attrs):
    widths = [int(width) for width in attrs.get("inputdimensions", [])]
    if len(widths) != len(node.input):
        raise UnsupportedModel(f"FeatureVectorizer with {len(widths)} input dimensions for {len(node.input)} inputs",
                               expected="one dimension per input")
    builder, name = ctx.builder, hint(node)
    pieces = []
    rows = None
    for index, width in enumerate(widths):
        x = _as_f32(builder, _float_input(ctx, node, "FeatureVectorizer", index), f"{name}.in{index}_f32")
        type_ = builder.type(x)
        if type_.rank == 1:
            x = builder.op("reshape", [x], {"shape": (type_.shape[0], 1)}, hint=f"{name}.in{index}_row")
            type_ = builder.type(x)
        if type_.rank != 2 or not isinstance(type_.shape[1], int):
            raise UnsupportedModel(f"FeatureVectorizer input {index} of shape {type_}",
                                   expected="a 1-D or 2-D tensor, its columns static")
        rows = type_.shape[0] if rows is None else rows
        have = type_.shape[1]
        if width < have:
            x = builder.op("slice", [x], {"axis": 1, "start": 0, "len": width}, hint=f"{name}.in{index}_cut")
        elif width > have:
            zeros = builder.splat(f"{name}.in{index}_pad", 0.0, TensorType(DType.f32, (type_.shape[0], width - have)))
            x = builder.op("concat", [x, zeros], {"axis": 1}, hint=f"{name}.in{index}_padded")
        pieces.append(x)
    if len(pieces) == 1:
        return [builder.op("reshape", [pieces[0]], {"shape": builder.type(pieces[0]).shape}, hint=name)]
    return [builder.op("concat", pieces, {"axis": 1}, hint=name)]


def _label_table(attrs) -> tuple[np.ndarray, np.ndarray, object]:
    """LabelEncoder's keys, values and default as arrays (the last key of a repeated one
    wins, as a dict built from them has it)."""
    tensors = [attribute_array(attrs[name]) for name in ("keys_tensor", "values_tensor") if name in attrs]
    if any(attrs.get(name) for name in ("keys_strings", "values_strings")) or \
            any(array.dtype.kind in "OSU" for array in tensors):
        raise UnsupportedModel("LabelEncoder of strings", expected="int64 or float keys and values "
                               "(the IR has no string tensors)")
    if "keys_tensor" in attrs:
        keys = attribute_array(attrs["keys_tensor"]).reshape(-1)
    elif attrs.get("keys_int64s"):
        keys = np.asarray(attrs["keys_int64s"], np.int64)
    else:
        keys = np.asarray(attrs.get("keys_floats", []), np.float32)
    if "values_tensor" in attrs:
        values = attribute_array(attrs["values_tensor"]).reshape(-1)
        default = attribute_array(attrs["default_tensor"]).reshape(-1)[0] if "default_tensor" in attrs else \
            np.zeros(1, values.dtype)[0]
    elif attrs.get("values_int64s"):
        values = np.asarray(attrs["values_int64s"], np.int64)
        default = np.int64(attrs.get("default_int64", -1))
    else:
        values = np.asarray(attrs.get("values_floats", []), np.float32)
        default = np.float32(attrs.get("default_float", -0.0))
    if len(keys) != len(values) or not len(keys):
        raise UnsupportedModel(f"LabelEncoder with {len(keys)} keys and {len(values)} values",
                               expected="as many values as keys, at least one")
    table = dict(zip(keys.tolist(), values.tolist()))
    return np.asarray(list(table), keys.dtype), np.asarray(list(table.values()), values.dtype), default


def convert_label_encoder(ctx, node, attrs):
    keys, values, default = _label_table(attrs)
    x = ctx.value(node.input[0])
    type_ = ctx.builder.type(x)
    builder, name = ctx.builder, hint(node)
    key_dtype = dtype_of_array(keys)
    if type_.dtype is not key_dtype:
        x = builder.op("cast", [x], {"to": key_dtype}, hint=f"{name}.keyed")
    value_dtype = dtype_of_array(values)
    spread = builder.op("reshape", [x], {"shape": (*type_.shape, 1)}, hint=f"{name}.spread")
    hits = builder.op("eq", [spread, builder.literal(f"{name}.keys", keys, key_dtype)], hint=f"{name}.hits")
    zero = builder.scalar(0, value_dtype)
    picked = builder.op("where", [hits, builder.literal(f"{name}.values", values, value_dtype), zero],
                        hint=f"{name}.picked")
    last = {"axes": (type_.rank,), "keepdims": False}
    found = builder.op("reduce_max", [builder.op("cast", [hits], {"to": DType.i32}, hint=f"{name}.hit_i32")], last,
                       hint=f"{name}.found_count")
    found = builder.op("gt", [found, builder.scalar(0, DType.i32)], hint=f"{name}.found")
    value = builder.op("reduce_sum", [picked], last, hint=f"{name}.value")
    return [builder.op("where", [found, value, builder.scalar(default.item(), value_dtype)], hint=name)]


register({
    "ai.onnx.ml.Scaler": convert_scaler, "ai.onnx.ml.Normalizer": convert_normalizer,
    "ai.onnx.ml.Imputer": convert_imputer, "ai.onnx.ml.LinearRegressor": convert_linear_regressor,
    "ai.onnx.ml.LinearClassifier": convert_linear_classifier, "ai.onnx.ml.OneHotEncoder": convert_one_hot_encoder,
    "ai.onnx.ml.FeatureVectorizer": convert_feature_vectorizer, "ai.onnx.ml.LabelEncoder": convert_label_encoder,
    "ai.onnx.ml.SVMRegressor": convert_svm_regressor, "ai.onnx.ml.SVMClassifier": convert_svm_classifier,
})
