"""Linear + cross entropy -> core ops: PyTorch's chunked ``linear_cross_entropy``
(``torch_nn._linear_cross_entropy_batch_chunked`` and its ``_no_reduction`` form).

The chunked ops compute ``cross_entropy(linear(input, linear_weight, linear_bias), target,
weight, reduction, ignore_index, label_smoothing)`` a batch chunk at a time to save memory;
the graph computes the same loss whole: the logits by a ``matmul``, their log-softmax
shifted by the row maximum (finite for any logits), the target's entry picked by a
``gather_elements``. The scalar op also returns gradients it precomputes for its backward;
they are empty unless the program asked for them, and refused when it reads non-empty ones
(rlxir derives backward graphs itself).
"""

from __future__ import annotations

from rlxir.dtypes import DType
from rlxir.importers.torch_ops import op, operand, read_results, refuse, reshape, result_dtype, shape_of
from rlxir.importers.torch_registry import converter
from rlxir.types import TensorType


@converter("torch_nn._linear_cross_entropy_batch_chunked")
def handle_linear_cross_entropy(ctx, node, args, kwargs):
    """(input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
    label_smoothing, ...) -> (loss, grad_input, grad_linear_weight, grad_linear_bias)."""
    input_, linear_weight, target, linear_bias, weight, reduction, ignore_index, smoothing = args[:8]
    loss = _cross_entropy(ctx, node, (input_, linear_weight, linear_bias), target, weight, reduction,
                          ignore_index, float(smoothing))
    results = [loss]
    for index, meta in enumerate(node.meta["val"][1:], 1):
        if index not in read_results(node):
            results.append(None)
            continue
        if meta.numel() != 0:
            refuse("linear_cross_entropy's precomputed gradients read in the forward graph",
                   "only the loss (rlxir derives backward graphs itself)")
        results.append(ctx.builder.splat(f"{node.name}.grad{index}", 0,
                                         TensorType(result_dtype(node), tuple(int(size) for size in meta.shape))))
    return results


@converter("torch_nn._linear_cross_entropy_batch_chunked_no_reduction")
def handle_linear_cross_entropy_per_sample(ctx, node, args, kwargs):
    """(input, linear_weight, target, linear_bias, weight, ignore_index, ...) -> the loss of
    each sample (no label smoothing on this path)."""
    input_, linear_weight, target, linear_bias, weight, ignore_index = args[:6]
    return _cross_entropy(ctx, node, (input_, linear_weight, linear_bias), target, weight, "none", ignore_index, 0.0)


def _cross_entropy(ctx, node, linear, target, weight, reduction: str, ignore_index: int, smoothing: float) -> str:
    """PyTorch's cross entropy of the linear layer's logits: class indices or probabilities."""
    if reduction not in ("none", "mean", "sum"):
        refuse(f"linear_cross_entropy with reduction {reduction!r}", "none, mean or sum")
    dtype = result_dtype(node)
    logits = _logits(ctx, node, linear, dtype)
    classes = shape_of(ctx, logits)[-1]
    log_probs = _log_softmax(ctx, node, logits)
    weights = operand(ctx, weight, dtype, f"{node.name}.class_weight") if weight is not None else None
    if ctx.type(target).dtype.is_float:
        return _with_probabilities(ctx, node, log_probs, target, weights, reduction, smoothing)
    target = operand(ctx, target, DType.i64, f"{node.name}.target")
    unbatched = not shape_of(ctx, target)
    target = reshape(ctx, target, (shape_of(ctx, log_probs)[0],), f"{node.name}.targets")
    kept = op(ctx, "ne", [target, ctx.builder.scalar(ignore_index, DType.i64)], hint=f"{node.name}.kept")
    picked_class = op(ctx, "where", [kept, target, ctx.builder.scalar(0, DType.i64)], hint=f"{node.name}.class")
    rows = shape_of(ctx, log_probs)[0]
    column = reshape(ctx, picked_class, (rows, 1), f"{node.name}.class_column")
    picked = reshape(ctx, op(ctx, "gather_elements", [log_probs, column], {"axis": 1}, hint=f"{node.name}.picked"),
                     (rows,), f"{node.name}.target_log_prob")
    zero = ctx.builder.scalar(0, dtype)
    row_weight = op(ctx, "cast", [kept], {"to": dtype}, hint=f"{node.name}.kept_weight")
    if weights is not None:
        row_weight = op(ctx, "mul", [row_weight, op(ctx, "gather", [weights, picked_class], {"axis": 0},
                                                       hint=f"{node.name}.target_weight")], hint=f"{node.name}.weight")
    losses = op(ctx, "neg", [op(ctx, "mul", [picked, row_weight], hint=f"{node.name}.weighted")],
                hint=f"{node.name}.nll")
    if smoothing > 0:
        spread = log_probs if weights is None else op(ctx, "mul", [log_probs, weights], hint=f"{node.name}.spread")
        smooth = op(ctx, "neg", [op(ctx, "reduce_sum", [spread], {"axes": (1,), "keepdims": False},
                                    hint=f"{node.name}.spread_sum")], hint=f"{node.name}.smooth")
        smooth = op(ctx, "where", [kept, smooth, zero], hint=f"{node.name}.smooth_kept")
        losses = op(ctx, "add", [op(ctx, "mul", [losses, ctx.builder.scalar(1 - smoothing, dtype)],
                                    hint=f"{node.name}.sharp"),
                                 op(ctx, "mul", [smooth, ctx.builder.scalar(smoothing / classes, dtype)],
                                    hint=f"{node.name}.smoothed")], hint=f"{node.name}.losses")
    if reduction == "none":
        return reshape(ctx, losses, () if unbatched else (rows,), node.name)
    total = op(ctx, "reduce_sum", [losses], {"axes": (0,), "keepdims": False}, hint=f"{node.name}.sum")
    if reduction == "sum":
        return total
    counted = op(ctx, "reduce_sum", [row_weight], {"axes": (0,), "keepdims": False}, hint=f"{node.name}.counted")
    return op(ctx, "div", [total, counted], hint=node.name)


def _with_probabilities(ctx, node, log_probs: str, target, weights, reduction: str, smoothing: float) -> str:
    """-Σ_c weight_c p_c log q_c per sample, p smoothed towards uniform; mean over samples."""
    dtype = ctx.builder.type(log_probs).dtype
    rows, classes = shape_of(ctx, log_probs)
    unbatched = len(shape_of(ctx, target)) == 1
    probs = reshape(ctx, operand(ctx, target, dtype, f"{node.name}.target"), (rows, classes), f"{node.name}.probs")
    if smoothing > 0:
        probs = op(ctx, "add", [op(ctx, "mul", [probs, ctx.builder.scalar(1 - smoothing, dtype)],
                                   hint=f"{node.name}.sharp"), ctx.builder.scalar(smoothing / classes, dtype)],
                   hint=f"{node.name}.smoothed")
    terms = op(ctx, "mul", [probs, log_probs], hint=f"{node.name}.terms")
    if weights is not None:
        terms = op(ctx, "mul", [terms, weights], hint=f"{node.name}.weighted")
    losses = op(ctx, "neg", [op(ctx, "reduce_sum", [terms], {"axes": (1,), "keepdims": False},
                                hint=f"{node.name}.sum_classes")], hint=f"{node.name}.losses")
    if reduction == "none":
        return reshape(ctx, losses, () if unbatched else (rows,), node.name)
    kind = "reduce_sum" if reduction == "sum" else "reduce_mean"
    return op(ctx, kind, [losses], {"axes": (0,), "keepdims": False}, hint=node.name)


def _logits(ctx, node, linear, dtype: DType) -> str:
    """input [N, in] (or [in]) @ linear_weight.T (+ linear_bias) as [N, classes]."""
    input_, linear_weight, linear_bias = linear
    x = operand(ctx, input_, dtype, f"{node.name}.input")
    weight = operand(ctx, linear_weight, dtype, f"{node.name}.linear_weight")
    if len(shape_of(ctx, weight)) != 2:
        refuse(f"linear_cross_entropy with a linear weight of shape {shape_of(ctx, weight)}", "[classes, in]")
    if len(shape_of(ctx, x)) == 1:
        x = reshape(ctx, x, (1,) + shape_of(ctx, x), f"{node.name}.row")
    logits = op(ctx, "matmul", [x, weight], {"transpose_b": True}, hint=f"{node.name}.logits")
    if linear_bias is None:
        return logits
    return op(ctx, "add", [logits, operand(ctx, linear_bias, dtype, f"{node.name}.linear_bias")],
              hint=f"{node.name}.biased")


def _log_softmax(ctx, node, logits: str) -> str:
    """logits - max - log Σ exp(logits - max) over the classes (the last axis)."""
    peak = op(ctx, "reduce_max", [logits], {"axes": (1,), "keepdims": True}, hint=f"{node.name}.peak")
    shifted = op(ctx, "sub", [logits, peak], hint=f"{node.name}.shifted")
    exponentials = op(ctx, "exp", [shifted], hint=f"{node.name}.exp")
    total = op(ctx, "reduce_sum", [exponentials], {"axes": (1,), "keepdims": True}, hint=f"{node.name}.total")
    return op(ctx, "sub", [shifted, op(ctx, "log", [total], hint=f"{node.name}.log_total")],
              hint=f"{node.name}.log_probs")
