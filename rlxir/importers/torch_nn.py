"""ATen op -> core ops: norms, reductions, softmax, linear algebra, attention, convolution
and pooling (the rest, and the handler table, are in `rlxir.importers.torch_ops`)."""

from __future__ import annotations

import torch

from rlxir.dtypes import DType
from rlxir.importers.torch import Static
from rlxir.importers.torch_ops import op, op_key, operand, refuse, reshape, result_dtype, shape_of
from rlxir.types import TensorType


# --- reductions and norms --------------------------------------------------------------
def reduction(name: str):
    def handle(ctx, node, args, kwargs):
        x = operand(ctx, args[0], result_dtype(node), node.name)
        rank = ctx.builder.type(x).rank
        dims = args[1] if len(args) > 1 else kwargs.get("dim")
        keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
        dims = list(range(rank)) if dims in (None, []) else ([dims] if isinstance(dims, int) else list(dims))
        return op(ctx, name, [x], {"axes": tuple(dims), "keepdims": bool(keepdim)}, hint=node.name)

    return handle


def handle_softmax(ctx, node, args, kwargs):
    x = operand(ctx, args[0], result_dtype(node), node.name)
    log = "log" in str(node.target)
    result = op(ctx, "softmax", [x], {"axis": args[1]}, hint=f"{node.name}.softmax" if log else node.name)
    if log:
        result = op(ctx, "log", [result], hint=node.name)
    return result


def _norm_parameter(ctx, item, fill: float, shape, dtype, hint):
    if item is None:
        return ctx.builder.splat(hint, fill, TensorType(dtype, tuple(shape)))
    return operand(ctx, item, dtype, hint)


def handle_layer_norm(ctx, node, args, kwargs):
    x = ctx.value(args[0])
    normalized = list(args[1])
    weight = args[2] if len(args) > 2 else kwargs.get("weight")
    bias = args[3] if len(args) > 3 else kwargs.get("bias")
    eps = args[4] if len(args) > 4 else kwargs.get("eps", 1e-5)
    dtype = ctx.builder.type(x).dtype
    gamma = _norm_parameter(ctx, weight, 1.0, normalized, dtype, f"{node.name}.weight")
    beta = _norm_parameter(ctx, bias, 0.0, normalized, dtype, f"{node.name}.bias")
    return op(ctx, "layernorm", [x, gamma, beta], {"axis": -len(normalized), "eps": float(eps)}, hint=node.name)


def handle_rms_norm(ctx, node, args, kwargs):
    x = ctx.value(args[0])
    normalized = list(args[1])
    weight = args[2] if len(args) > 2 else kwargs.get("weight")
    eps = args[3] if len(args) > 3 else kwargs.get("eps")
    dtype = ctx.builder.type(x).dtype
    eps = torch.finfo(torch.float32 if dtype is DType.f32 else torch.float16).eps if eps is None else eps
    gamma = _norm_parameter(ctx, weight, 1.0, normalized, dtype, f"{node.name}.weight")
    return op(ctx, "rmsnorm", [x, gamma], {"axis": -len(normalized), "eps": float(eps)}, hint=node.name)


def handle_batch_norm(ctx, node, args, kwargs):
    """batch_norm(x, w, b, mean, var, training, momentum, eps, ...) and the
    no-training variant (x, w, b, mean, var, momentum, eps) -> (out, ...)."""
    x = ctx.value(args[0])
    key = op_key(node.target)
    if key == "aten.batch_norm" and args[5]:
        refuse("batch_norm in training mode", "a module in eval() mode")
    eps = args[7] if key == "aten.batch_norm" else args[6]
    dtype = ctx.builder.type(x).dtype
    channels = shape_of(ctx, x)[1]
    parameters = [_norm_parameter(ctx, item, fill, (channels,), dtype, f"{node.name}.{index}")
                  for index, (item, fill) in enumerate(zip(args[1:5], (1.0, 0.0, 0.0, 1.0)))]
    result = op(ctx, "batchnorm", [x] + parameters, {"eps": float(eps)}, hint=node.name)
    return result if key == "aten.batch_norm" else [result, None, None]


# --- linear algebra and attention ------------------------------------------------------
def handle_linear(ctx, node, args, kwargs):
    x = ctx.value(args[0])
    weight, bias = args[1], args[2] if len(args) > 2 else kwargs.get("bias")
    dtype = ctx.builder.type(x).dtype
    weight_node = node.args[1]
    biases = [operand(ctx, bias, dtype, f"{node.name}.bias")] if bias is not None else []
    if isinstance(weight, Static) and weight.weight and isinstance(weight_node, torch.fx.Node) \
            and weight_node.name in ctx.linear_only:
        return op(ctx, "linear", [x, ctx.linear_weight(weight)] + biases, hint=node.name)
    product = op(ctx, "matmul", [x, operand(ctx, weight, dtype, node.name)], {"transpose_b": True},
                 hint=f"{node.name}.product" if biases else node.name)
    return op(ctx, "add", [product] + biases, hint=node.name) if biases else product


def handle_addmm(ctx, node, args, kwargs):
    """beta bias + alpha (m1 @ m2): ``linear(m1, m2, bias)`` when alpha = beta = 1."""
    bias, first, second = args[:3]
    if kwargs.get("beta", 1) != 1 or kwargs.get("alpha", 1) != 1:
        refuse("addmm with alpha or beta other than 1")
    dtype = result_dtype(node)
    operands = [operand(ctx, first, dtype, node.name), operand(ctx, second, dtype, node.name),
                operand(ctx, bias, dtype, f"{node.name}.bias")]
    return op(ctx, "linear", operands, hint=node.name)


def handle_matmul(ctx, node, args, kwargs):
    dtype = result_dtype(node)
    return op(ctx, "matmul", [operand(ctx, args[0], dtype, node.name), operand(ctx, args[1], dtype, node.name)],
              hint=node.name)


def handle_embedding(ctx, node, args, kwargs):
    table, indices = ctx.value(args[0]), ctx.value(args[1])
    return op(ctx, "gather", [table, indices], {"axis": 0}, hint=node.name)


def handle_sdpa(ctx, node, args, kwargs):
    """scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale=,
    enable_gqa=): grouped k/v heads are repeated to q's (head h reads kv head h // rep)."""
    names = ("attn_mask", "dropout_p", "is_causal")
    extra = {name: args[3 + index] for index, name in enumerate(names) if len(args) > 3 + index}
    extra.update({key: value for key, value in kwargs.items()})
    q, k, v = (ctx.value(item) for item in args[:3])
    heads = shape_of(ctx, q)[-3] if ctx.builder.type(q).rank >= 3 else None
    if extra.get("enable_gqa") and heads is not None and shape_of(ctx, k)[-3] != heads:
        k, v = (_repeat_heads(ctx, value, heads, f"{node.name}.{part}") for value, part in ((k, "k"), (v, "v")))
    operands = [q, k, v]
    if extra.get("attn_mask") is not None:
        operands.append(ctx.value(extra["attn_mask"]))
    attrs = {"causal": bool(extra.get("is_causal", False))}
    if extra.get("scale") is not None:
        attrs["scale"] = float(extra["scale"])
    return op(ctx, "attention", operands, attrs, hint=node.name)


def _repeat_heads(ctx, value: str, heads: int, hint: str) -> str:
    *batch, groups, length, width = shape_of(ctx, value)
    repeat = heads // groups
    split = reshape(ctx, value, (*batch, groups, 1, length, width), f"{hint}.groups")
    spread = op(ctx, "expand", [split], {"shape": (*batch, groups, repeat, length, width)}, hint=f"{hint}.repeat")
    return reshape(ctx, spread, (*batch, heads, length, width), f"{hint}.heads")


# --- convolution and pooling -----------------------------------------------------------
def _pair(value, count: int) -> list[int]:
    value = list(value) if isinstance(value, (list, tuple)) else [value]
    return value * count if len(value) == 1 else value


def handle_conv(ctx, node, args, kwargs):
    """conv1d/conv2d/convolution: 1-D convs run as 2-D over a unit height."""
    key = op_key(node.target)
    x, w = ctx.value(args[0]), None
    dtype = ctx.builder.type(x).dtype
    w = operand(ctx, args[1], dtype, node.name)
    bias = args[2] if len(args) > 2 else None
    spatial = ctx.builder.type(x).rank - 2
    if key == "aten.convolution":
        stride, padding, dilation, transposed, _, groups = args[3:9]
        if transposed:
            refuse("a transposed convolution", "a forward convolution")
    else:
        stride, padding, dilation, groups = (list(args[3:7]) + [1, 0, 1, 1][len(args[3:7]):])
    if spatial not in (1, 2):
        refuse(f"a {spatial}-D convolution", "1-D or 2-D")
    kernel = [int(size) for size in shape_of(ctx, w)[2:]]
    stride, dilation = _pair(stride, spatial), _pair(dilation, spatial)
    if isinstance(padding, str):
        padding = [0] * spatial if padding == "valid" else [d * (k - 1) // 2 for d, k in zip(dilation, kernel)]
        if padding != [0] * spatial and any((d * (k - 1)) % 2 for d, k in zip(dilation, kernel)):
            refuse("padding='same' with an even kernel")
    padding = _pair(padding, spatial)
    biases = [operand(ctx, bias, dtype, f"{node.name}.bias")] if bias is not None else []
    if spatial == 2:
        attrs = {"stride": tuple(stride), "padding": (padding[0], padding[1], padding[0], padding[1]),
                 "dilation": tuple(dilation), "groups": int(groups)}
        return op(ctx, "conv2d", [x, w] + biases, attrs, hint=node.name)
    batch, channels, length = shape_of(ctx, x)
    out_channels, per_group, width = shape_of(ctx, w)
    x4 = reshape(ctx, x, (batch, channels, 1, length), f"{node.name}.x2d")
    w4 = reshape(ctx, w, (out_channels, per_group, 1, width), f"{node.name}.w2d")
    attrs = {"stride": (1, stride[0]), "padding": (0, padding[0], 0, padding[0]), "dilation": (1, dilation[0]),
             "groups": int(groups)}
    y4 = op(ctx, "conv2d", [x4, w4] + biases, attrs, hint=f"{node.name}.2d")
    return reshape(ctx, y4, (batch, out_channels, shape_of(ctx, y4)[3]), node.name)


def handle_pool(ctx, node, args, kwargs):
    key = op_key(node.target)
    x = ctx.value(args[0])
    kernel = _pair(args[1], 2)
    stride = _pair(args[2], 2) if len(args) > 2 and args[2] else kernel
    padding = _pair(args[3], 2) if len(args) > 3 else [0, 0]
    ceil_index = 5 if key == "aten.max_pool2d" else 4
    if len(args) > ceil_index and args[ceil_index]:
        refuse(f"{key} with ceil_mode", "ceil_mode=False")
    if key == "aten.max_pool2d" and len(args) > 4 and _pair(args[4], 2) != [1, 1]:
        refuse("max_pool2d with dilation", "dilation 1")
    if key == "aten.avg_pool2d":
        include = args[5] if len(args) > 5 else True
        if not include and any(padding) or len(args) > 6 and args[6] is not None:
            refuse("avg_pool2d excluding padding or with a divisor override", "count_include_pad=True")
    name = "max_pool2d" if key == "aten.max_pool2d" else "avg_pool2d"
    attrs = {"kernel": tuple(kernel), "stride": tuple(stride),
             "padding": (padding[0], padding[1], padding[0], padding[1])}
    return op(ctx, name, [x], attrs, hint=node.name)


def handle_adaptive_avg_pool(ctx, node, args, kwargs):
    if list(_pair(args[1], 2)) != [1, 1]:
        refuse(f"adaptive_avg_pool2d to {list(args[1])}", "output size 1 (a global average)")
    x = ctx.value(args[0])
    return op(ctx, "reduce_mean", [x], {"axes": (2, 3), "keepdims": True}, hint=node.name)


HANDLERS = {
    "aten.mean": reduction("reduce_mean"), "aten.sum": reduction("reduce_sum"), "aten.amax": reduction("reduce_max"),
    "aten.amin": reduction("reduce_min"), "aten.softmax": handle_softmax, "aten._softmax": handle_softmax,
    "aten.log_softmax": handle_softmax, "aten._log_softmax": handle_softmax, "aten.layer_norm": handle_layer_norm,
    "aten.rms_norm": handle_rms_norm, "aten.batch_norm": handle_batch_norm,
    "aten._native_batch_norm_legit_no_training": handle_batch_norm, "aten.linear": handle_linear,
    "aten.addmm": handle_addmm, "aten.matmul": handle_matmul, "aten.mm": handle_matmul, "aten.bmm": handle_matmul,
    "aten.embedding": handle_embedding, "aten.scaled_dot_product_attention": handle_sdpa,
    "aten.conv1d": handle_conv, "aten.conv2d": handle_conv, "aten.convolution": handle_conv,
    "aten.max_pool2d": handle_pool, "aten.avg_pool2d": handle_pool,
    "aten.adaptive_avg_pool2d": handle_adaptive_avg_pool,
}
