"""Core ATen normalizations with their saved statistics -> core ops: ``native_layer_norm``,
``native_group_norm``, ``_native_batch_norm_legit`` (batch statistics in training mode),
and ``native_dropout`` in inference.

Each returns (out, mean, rstd[, running stats]); the statistics are built only when the
program reads them (an inference program reads only ``out``).
"""

from __future__ import annotations

from rlxir.dtypes import DType
from rlxir.importers.torch_math import variance
from rlxir.importers.torch_nn import handle_batch_norm
from rlxir.importers.torch_ops import op, operand, read_results, refuse, reshape, result_dtype, shape_of, static_dim
from rlxir.importers.torch_registry import converter
from rlxir.symbolic import mul
from rlxir.types import TensorType


def _parameter(ctx, item, fill: float, shape, dtype, hint: str) -> str:
    if item is None:
        return ctx.builder.splat(hint, fill, TensorType(dtype, tuple(shape)))
    return operand(ctx, item, dtype, hint)


def _statistics(ctx, x: str, axes, eps: float, hint: str) -> tuple[str, str]:
    """mean and 1 / sqrt(biased var + eps) over `axes`, kept as size-1 dims."""
    mean = op(ctx, "reduce_mean", [x], {"axes": tuple(axes), "keepdims": True}, hint=f"{hint}.mean")
    var = variance(ctx, x, axes, 0, True, f"{hint}.var")
    rstd = op(ctx, "rsqrt", [op(ctx, "add", [var, ctx.builder.scalar(eps, ctx.builder.type(x).dtype)],
                                hint=f"{hint}.var_eps")], hint=f"{hint}.rstd")
    return mean, rstd


def _normalized(ctx, x: str, mean: str, rstd: str, hint: str) -> str:
    return op(ctx, "mul", [op(ctx, "sub", [x, mean], hint=f"{hint}.centered"), rstd], hint=hint)


@converter("aten.native_layer_norm")
def handle_native_layer_norm(ctx, node, args, kwargs):
    """native_layer_norm(x, shape, weight, bias, eps) -> (out, mean, rstd): out is the IR's
    ``layernorm`` over the trailing `shape` dims."""
    x = operand(ctx, args[0], result_dtype(node), node.name)
    normalized = list(args[1])
    dtype = ctx.builder.type(x).dtype
    rank = ctx.builder.type(x).rank
    eps = float(args[4])
    if not normalized:
        refuse("native_layer_norm over no dims", "a normalized shape of at least one dim")
    gamma = _parameter(ctx, args[2], 1.0, normalized, dtype, f"{node.name}.weight")
    beta = _parameter(ctx, args[3], 0.0, normalized, dtype, f"{node.name}.bias")
    out = op(ctx, "layernorm", [x, gamma, beta], {"axis": -len(normalized), "eps": eps}, hint=node.name)
    if not read_results(node) - {0}:
        return [out, None, None]
    mean, rstd = _statistics(ctx, x, range(rank - len(normalized), rank), eps, node.name)
    return [out, mean, rstd]


@converter("aten.native_group_norm")
def handle_native_group_norm(ctx, node, args, kwargs):
    """native_group_norm(x, weight, bias, N, C, HxW, group, eps) -> (out, mean [N, G],
    rstd [N, G]): statistics over each group's channels and positions."""
    x = operand(ctx, args[0], result_dtype(node), node.name)
    weight, bias, batch, channels, _, groups, eps = args[1:8]
    shape = shape_of(ctx, x)
    dtype = ctx.builder.type(x).dtype
    per_group = static_dim(channels, "group_norm's channels") // groups
    positions = 1
    for dim in shape[2:]:
        positions = mul(positions, dim)
    grouped = reshape(ctx, x, (batch, groups, per_group * positions), f"{node.name}.groups")
    mean, rstd = _statistics(ctx, grouped, (2,), float(eps), node.name)
    normed = reshape(ctx, _normalized(ctx, grouped, mean, rstd, f"{node.name}.normed"), shape, f"{node.name}.back")
    affine_shape = (1, channels) + (1,) * (len(shape) - 2)
    gamma = reshape(ctx, _parameter(ctx, weight, 1.0, (channels,), dtype, f"{node.name}.weight"), affine_shape,
                    f"{node.name}.gamma")
    beta = reshape(ctx, _parameter(ctx, bias, 0.0, (channels,), dtype, f"{node.name}.bias"), affine_shape,
                   f"{node.name}.beta")
    out = op(ctx, "add", [op(ctx, "mul", [normed, gamma], hint=f"{node.name}.scaled"), beta], hint=node.name)
    return [out, reshape(ctx, mean, (batch, groups), f"{node.name}.mean_out"),
            reshape(ctx, rstd, (batch, groups), f"{node.name}.rstd_out")]


@converter("aten._native_batch_norm_legit", "aten._native_batch_norm_legit_functional")
def handle_native_batch_norm(ctx, node, args, kwargs):
    """_native_batch_norm_legit(x, w, b, running_mean, running_var, training, momentum, eps)
    (and ``.no_stats`` without the running stats): in eval mode the IR's ``batchnorm``; in
    training mode the batch's statistics over every dim but the channels, -> (out,
    save_mean, save_rstd[, new running mean, new running var])."""
    functional = str(node.target).startswith("aten._native_batch_norm_legit_functional")
    with_stats = node.target._overloadname != "no_stats"
    x = operand(ctx, args[0], result_dtype(node), node.name)
    weight, bias = args[1], args[2]
    running = args[3:5] if with_stats else (None, None)
    training, momentum, eps = args[5:8] if with_stats else args[3:6]
    if not training:
        if not with_stats:
            refuse("batch norm in eval mode without running statistics", "running_mean and running_var")
        result = handle_batch_norm(ctx, node, [x, weight, bias, *running, momentum, eps], {})
        return result + [ctx.value(item) for item in running] if functional else result  # stats unchanged
    out, mean, rstd, *running_stats = training_batch_norm(ctx, node, x, weight, bias, running, momentum, eps)
    return [out, mean, rstd] + (running_stats if functional else [])


def training_batch_norm(ctx, node, x: str, weight, bias, running, momentum: float, eps: float) -> list[str]:
    """Batch norm with the batch's statistics over every dim but the channels: [out,
    save_mean, save_rstd, new running mean, new running var] (the last two None without
    running statistics)."""
    shape = shape_of(ctx, x)
    dtype = ctx.builder.type(x).dtype
    axes = [axis for axis in range(len(shape)) if axis != 1]
    mean, rstd = _statistics(ctx, x, axes, float(eps), node.name)
    affine_shape = (1, shape[1]) + (1,) * (len(shape) - 2)
    gamma = reshape(ctx, _parameter(ctx, weight, 1.0, (shape[1],), dtype, f"{node.name}.weight"), affine_shape,
                    f"{node.name}.gamma")
    beta = reshape(ctx, _parameter(ctx, bias, 0.0, (shape[1],), dtype, f"{node.name}.bias"), affine_shape,
                   f"{node.name}.beta")
    out = op(ctx, "add", [op(ctx, "mul", [_normalized(ctx, x, mean, rstd, f"{node.name}.normed"), gamma],
                             hint=f"{node.name}.scaled"), beta], hint=node.name)
    results = [out, reshape(ctx, mean, (shape[1],), f"{node.name}.save_mean"),
               reshape(ctx, rstd, (shape[1],), f"{node.name}.save_rstd")]
    if running[0] is None:
        return results + [None, None]
    return results + _running_statistics(ctx, node, x, axes, mean, running, momentum)


def _running_statistics(ctx, node, x: str, axes, mean: str, running, momentum: float) -> list[str]:
    """(1 - momentum) running + momentum batch, the batch variance unbiased (PyTorch's update)."""
    channels = shape_of(ctx, x)[1]
    dtype = ctx.builder.type(x).dtype
    batch_var = reshape(ctx, variance(ctx, x, axes, 1, True, f"{node.name}.unbiased"), (channels,),
                        f"{node.name}.batch_var")
    updated = []
    for name, old, new in (("mean", running[0], reshape(ctx, mean, (channels,), f"{node.name}.batch_mean")),
                           ("var", running[1], batch_var)):
        kept = op(ctx, "mul", [operand(ctx, old, dtype, node.name), ctx.builder.scalar(1 - momentum, dtype)],
                  hint=f"{node.name}.kept_{name}")
        added = op(ctx, "mul", [new, ctx.builder.scalar(momentum, dtype)], hint=f"{node.name}.new_{name}")
        updated.append(op(ctx, "add", [kept, added], hint=f"{node.name}.running_{name}"))
    return updated


@converter("aten.native_dropout")
def handle_native_dropout(ctx, node, args, kwargs):
    """native_dropout(x, p, train) -> (x, mask of ones) in inference or with p = 0; training
    with p > 0 is random, refused."""
    p, train = args[1], args[2]
    if train and p > 0:
        refuse(f"dropout with p={p} in training mode (random)", "the module in eval mode, or p = 0")
    x = ctx.value(args[0])
    mask = ctx.builder.splat(f"{node.name}.mask", True, TensorType(DType.bool, shape_of(ctx, x)))
    return [x, mask]


@converter("aten._batch_norm_with_update_functional")
def handle_batch_norm_with_update(ctx, node, args, kwargs):
    """_batch_norm_with_update_functional(x, w, b, running_mean, running_var, momentum, eps)
    -> (out, save_mean, save_rstd, reserve, new running mean, new running var): training
    mode's batch statistics (`handle_native_batch_norm` of the functional form)."""
    x = operand(ctx, args[0], result_dtype(node), node.name)
    out, mean, rstd, running_mean, running_var = training_batch_norm(ctx, node, x, args[1], args[2], args[3:5],
                                                                     args[5], args[6])
    reserve = ctx.builder.splat(f"{node.name}.reserve", 0, TensorType(DType.u8, (0,)))
    return [out, mean, rstd, reserve, running_mean, running_var]


@converter("aten.rrelu_with_noise_functional")
def handle_rrelu(ctx, node, args, kwargs):
    """rrelu in eval mode: a leaky relu of slope (lower + upper) / 2; the noise unchanged."""
    given = {"lower": 0.125, "upper": 1.0 / 3.0, "training": False,
             **dict(zip(("lower", "upper", "training"), args[2:])), **kwargs}
    if given["training"]:
        refuse("rrelu in training mode (random slopes)", "the module in eval mode")
    x = operand(ctx, args[0], result_dtype(node), node.name)
    slope = ctx.builder.scalar((given["lower"] + given["upper"]) / 2, ctx.builder.type(x).dtype)
    positive = op(ctx, "ge", [x, ctx.builder.scalar(0, ctx.builder.type(x).dtype)], hint=f"{node.name}.positive")
    out = op(ctx, "where", [positive, x, op(ctx, "mul", [x, slope], hint=f"{node.name}.scaled")], hint=node.name)
    return [out, ctx.value(args[1])]
