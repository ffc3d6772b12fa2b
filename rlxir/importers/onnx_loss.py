"""ONNX op -> core ops: the losses NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.

Both read scores x [N, C, d1, ...] and integer targets [N, d1, ...]. The loss of a position
is -x[n, target, d...] (after a log-softmax over C for SoftmaxCrossEntropyLoss) times the
target's class weight, 0 where the target is `ignore_index`; ``reduction`` none keeps every
position, sum adds them, mean divides the sum by the weights' sum (by the count of
positions when there are neither weights nor an ignored index), as ONNX's reference does.
The picked score is a ``gather_elements`` along C at the target (an ignored target reads
class 0, then counts 0).
"""

from __future__ import annotations

from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_ops import Arith, hint, log_softmax, operand, optional_input
from rlxir.importers.onnx_registry import register

REDUCTIONS = ("none", "sum", "mean")


def convert_nll_loss(ctx, node, attrs):
    x = ctx.value(node.input[0])
    return [negative_log_likelihood(ctx, node, attrs, x, hint(node))]


def convert_softmax_cross_entropy(ctx, node, attrs):
    """SoftmaxCrossEntropyLoss: NLL of the log-softmax over axis 1 (output 1, when read,
    is that log-softmax)."""
    x = ctx.value(node.input[0])
    log_prob = log_softmax(ctx, x, 1, hint(node, 1) if len(node.output) > 1 and node.output[1]
                           else f"{hint(node)}.log_prob")
    return [negative_log_likelihood(ctx, node, attrs, log_prob, hint(node)), log_prob]


def negative_log_likelihood(ctx, node, attrs, scores: str, name: str) -> str:
    reduction = attrs.get("reduction", "mean")
    if reduction not in REDUCTIONS:
        raise UnsupportedModel(f"{node.op_type} reduction {reduction!r}", expected="one of " + ", ".join(REDUCTIONS))
    type_ = ctx.builder.type(scores)
    if type_.rank < 2:
        raise UnsupportedModel(f"{node.op_type} of rank-{type_.rank} scores", expected="scores [N, C, d1, ...]")
    target = ctx.value(node.input[1])
    target_type = ctx.builder.type(target)
    if not target_type.dtype.is_integer:
        raise UnsupportedModel(f"{node.op_type} targets of type {target_type.dtype}", expected="integer targets")
    f = Arith(ctx, type_.dtype, name)
    ignored = attrs.get("ignore_index")
    kept, safe = None, target
    if ignored is not None:
        kept = f.builder.op("ne", [target, f.builder.scalar(ignored, target_type.dtype)], hint=f"{name}.kept")
        safe = f.builder.op("where", [kept, target, f.builder.scalar(0, target_type.dtype)], hint=f"{name}.target")
    column = (target_type.shape[0], 1, *target_type.shape[1:])
    index = f.builder.op("reshape", [safe], {"shape": column}, hint=f"{name}.index")
    picked = f("gather_elements", scores, index, attrs={"axis": 1}, tag="picked")
    score = f.builder.op("reshape", [picked], {"shape": tuple(target_type.shape)}, hint=f"{name}.score")
    weights = _position_weights(ctx, node, f, safe, kept)
    unreduced = reduction == "none"
    loss = f("neg", score, tag="loss", final=unreduced and weights is None and kept is None)
    if weights is not None:
        loss = f("mul", loss, weights, tag="weighted", final=unreduced and kept is None)
    if kept is not None:
        loss = f("where", kept, loss, 0.0, tag="counted", final=unreduced)
    return loss if unreduced else _reduce(f, loss, weights, reduction)


def _position_weights(ctx, node, f: Arith, target: str, kept: str | None) -> str | None:
    """The class weight of each position's target (0 where ignored), the kept mask as
    numbers when there are no weights, or None when every position weighs 1."""
    weight = optional_input(node, 2)
    if weight is None:
        return None if kept is None else f("cast", kept, attrs={"to": f.dtype}, tag="weights")
    picked = f("gather", operand(ctx, weight, f.dtype), target, attrs={"axis": 0}, tag="class_weight")
    return picked if kept is None else f("where", kept, picked, 0.0, tag="weights")


def _reduce(f: Arith, loss: str, weights: str | None, reduction: str) -> str:
    every = {"axes": tuple(range(f.builder.type(loss).rank)), "keepdims": False}
    if reduction == "sum":
        return f("reduce_sum", loss, attrs=every, final=True)
    if weights is None:
        return f("reduce_mean", loss, attrs=every, final=True)
    total = f("reduce_sum", loss, attrs=every, tag="total")
    return f("div", total, f("reduce_sum", weights, attrs=every, tag="weight_sum"), final=True)


register({"NegativeLogLikelihoodLoss": convert_nll_loss, "SoftmaxCrossEntropyLoss": convert_softmax_cross_entropy})
