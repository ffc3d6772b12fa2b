"""What the ``ai.onnx.ml`` classifiers and regressors do with their scores: the
`post_transform` (NONE, LOGISTIC, SOFTMAX, SOFTMAX_ZERO, PROBIT, with ONNX's reference
formulas) and the label of the best score. Labels are int64: string class labels cannot be
a tensor of the IR, so a model that reads them is refused; one that reads only the scores
converts."""

from __future__ import annotations

import math

import numpy as np
from onnx import numpy_helper

from rlxir.importers.builder import UnsupportedModel, sanitize_name
from rlxir.importers.onnx_ops import Arith, unused
from rlxir.importers.onnx_reduce import extreme_position

TRANSFORMS = ("NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT")


def attribute_array(value) -> np.ndarray:
    """An attribute given as a tensor or as a list, as an array."""
    if hasattr(value, "data_type"):  # a TensorProto
        return numpy_helper.to_array(value)
    return np.asarray(value)


def named(builder, value: str, name: str) -> str:
    """`value` under the name its ONNX output hints (`name`, sanitized), where that name is
    free: the converters below build their results through helper ops named after their
    steps, and an output should read as the model's."""
    wanted = builder.fresh(name)
    if builder.graph.kind(value) == "op" and value != wanted and wanted == sanitize_name(name):
        builder.graph.rename(value, wanted, views=False)
        return wanted
    return value


def post_transform(ctx, scores: str, mode: str, op_type: str, name: str) -> str:
    """`scores` [rows, classes] after `mode`."""
    if mode not in TRANSFORMS:
        raise UnsupportedModel(f"{op_type} post_transform {mode!r}", expected=" or ".join(TRANSFORMS))
    if mode == "NONE":
        return scores
    f = Arith(ctx, ctx.builder.type(scores).dtype, name)
    if mode == "LOGISTIC":
        return f("sigmoid", scores, tag="logistic")
    if mode == "SOFTMAX":
        return f("softmax", scores, tag="softmax", attrs={"axis": -1})
    if mode == "SOFTMAX_ZERO":
        # A softmax in which a score of (nearly) zero stays near zero: it is scaled by
        # exp(-max) instead of exponentiated; a row that sums to 0 is 0.5 throughout.
        row = {"axes": (1,), "keepdims": True}
        top = f("reduce_max", scores, tag="top", attrs=row)
        shifted = f("exp", f("sub", scores, top, tag="shifted"), tag="exp")
        scaled = f("mul", scores, f("exp", f("neg", top, tag="neg_top"), tag="exp_neg_top"), tag="scaled")
        nonzero = f("gt", f("abs", scores, tag="size"), 1e-7, tag="nonzero")
        values = f("where", nonzero, shifted, scaled, tag="values")
        total = f("reduce_sum", values, tag="total", attrs=row)
        empty = f("eq", total, 0.0, tag="empty")
        shares = f("div", values, f("where", empty, 1.0, total, tag="divisor"), tag="shares")
        return f("where", empty, 0.5, shares, tag="softmax_zero")
    # PROBIT: sqrt(2) * erfinv(2 p - 1), erfinv by the approximation ONNX's reference uses.
    x = f("sub", f("mul", scores, 2.0, tag="twice"), 1.0, tag="centred")
    sign = f("where", f("lt", x, 0.0, tag="negative"), -1.0, 1.0, tag="sign")
    inner = f("mul", f("sub", 1.0, x, tag="below"), f("add", 1.0, x, tag="above"), tag="inner")
    log = f("log", inner, tag="log")
    v = f("add", 2.0 / (math.pi * 0.147), f("mul", 0.5, log, tag="half_log"), tag="v")
    v3 = f("sub", f("sqrt", f("sub", f("mul", v, v, tag="v_squared"), f("mul", 1.0 / 0.147, log, tag="v2"),
                              tag="radicand"), tag="root"), v, tag="v3")
    signed = f("mul", sign, f("sqrt", v3, tag="sqrt_v3"), tag="signed")
    erfinv = f("where", f("eq", inner, 0.0, tag="edge"), 0.0, signed, tag="erfinv")
    return f("mul", erfinv, 1.41421356, tag="probit")


def best_class(ctx, scores: str, name: str) -> str:
    """The position of each row's best score, as NumPy's argmax has it (the first on ties,
    a NaN's where the row holds one): i64 [rows]."""
    return extreme_position(ctx, "ArgMax", scores, 1, False, False, f"{name}.best")


def class_labels(ctx, node, scores: str, labels: list | None, strings: list | None, op_type: str) -> str | None:
    """Output 0 of a classifier: the label of each row's best score, its position where no
    labels are given (None where the model does not read it)."""
    if unused(ctx, node, 0):
        return None
    if labels is None and strings is None:
        return named(ctx.builder, best_class(ctx, scores, node.output[0]), node.output[0])
    if labels is None:
        raise UnsupportedModel(f"{op_type} whose string labels (output 0) are read",
                               expected="classlabels_int64s, or a model that reads only the scores")
    builder = ctx.builder
    name = node.output[0]
    best = best_class(ctx, scores, name)
    table = builder.literal(f"{name}.labels", np.asarray(labels, np.int64))
    return builder.op("gather", [table, best], {"axis": 0}, hint=name)
