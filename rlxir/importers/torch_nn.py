"""ATen op -> core ops: norms, reductions, softmax, linear algebra, attention, convolution
and pooling (the rest, and the handler table, are in `rlxir.importers.torch_ops`)."""

from __future__ import annotations

import operator

import numpy as np
import torch

from rlxir.dtypes import DType
from rlxir.importers.pooling import average_factors, ceil_mode_padding
from rlxir.importers.torch_ops import (binary, op, operand, read_results, refuse, reshape, result_dtype, shape_of,
                                       static_dim)
from rlxir.importers.torch_registry import Static, converter, op_key, register
from rlxir.importers.torch_spatial import transposed_as_forward, transposed_convolution, windowed_max_pool
from rlxir.ops import normalize_axis
from rlxir.symbolic import mul
from rlxir.types import TensorType


# --- reductions and norms --------------------------------------------------------------
def reduction(name: str):
    def handle(ctx, node, args, kwargs):
        x = operand(ctx, args[0], result_dtype(node), node.name)
        rank = ctx.builder.type(x).rank
        if rank == 0:  # a 0-d tensor reduced over "every dim" (or dim 0, -1) is itself
            return x
        dims = args[1] if len(args) > 1 else kwargs.get("dim")
        keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
        dims = list(range(rank)) if dims in (None, []) else ([dims] if isinstance(dims, int) else list(dims))
        return op(ctx, name, [x], {"axes": tuple(dims), "keepdims": bool(keepdim)}, hint=node.name)

    return handle


@converter("aten.max", "aten.min")
def handle_extremum(ctx, node, args, kwargs):
    """aten.max / aten.min by overload: ``.other`` elementwise (maximum / minimum),
    ``.default`` over every dim, ``.dim`` the values along one dim and the index of the
    first extreme one (built only when read)."""
    largest = op_key(node.target) == "aten.max"
    overload = node.target._overloadname
    if overload == "other":
        return binary("maximum" if largest else "minimum")(ctx, node, args, kwargs)
    reduce = reduction("reduce_max" if largest else "reduce_min")
    if overload == "default":
        return reduce(ctx, node, args[:1], {})
    if overload != "dim":
        refuse(f"{op_key(node.target)}.{overload}", "the .dim, .other and .default overloads")
    values = reduce(ctx, node, args[:3], kwargs)
    read = {user.args[1] for user in node.users if user.target is operator.getitem}
    return [values, _extreme_index(ctx, node, args, kwargs, largest) if 1 in read else None]


@converter("aten.argmax", "aten.argmin")
def handle_arg_extremum(ctx, node, args, kwargs):
    """argmax / argmin(x, dim=None, keepdim=False): the first extreme index (over x
    flattened when dim is None)."""
    return _extreme_index(ctx, node, args, kwargs, op_key(node.target) == "aten.argmax")


def _extreme_index(ctx, node, args, kwargs, largest: bool) -> str:
    """`topk` with k = 1 (ties go to the lower index, as PyTorch's first extreme)."""
    x = ctx.value(args[0])
    shape = shape_of(ctx, x)
    if not shape:
        return ctx.builder.splat(f"{node.name}.index", 0, TensorType(DType.i64, ()))
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
    if dim is None:
        flat = reshape(ctx, x, (_product(shape),), f"{node.name}.flat")
        best = op(ctx, "topk", [flat], {"k": 1, "axis": 0, "largest": largest}, hint=f"{node.name}.best")
        return reshape(ctx, best, (1,) * len(shape) if keepdim else (), f"{node.name}.index")
    axis = normalize_axis(dim, len(shape))
    best = op(ctx, "topk", [x], {"k": 1, "axis": axis, "largest": largest},
              hint=node.name if keepdim else f"{node.name}.best")
    return best if keepdim else reshape(ctx, best, shape[:axis] + shape[axis + 1:], f"{node.name}.index")


def _product(shape):
    total = 1
    for size in shape:
        total = mul(total, size)
    return total


@converter("aten.topk")
def handle_topk(ctx, node, args, kwargs):
    """topk(x, k, dim=-1, largest=True, sorted=True) -> (values, indices): the IR's topk
    gives the indices, best first (ties to the lower index); values gather them."""
    names = ("k", "dim", "largest", "sorted")
    given = {"dim": -1, "largest": True, **dict(zip(names, args[1:])), **kwargs}
    x = ctx.value(args[0])
    axis = normalize_axis(given["dim"], len(shape_of(ctx, x)))
    indices = op(ctx, "topk", [x], {"k": int(given["k"]), "axis": axis, "largest": bool(given["largest"])},
                 hint=f"{node.name}.indices")
    return [op(ctx, "gather_elements", [x, indices], {"axis": axis}, hint=node.name), indices]


@converter("aten.softmax", "aten._softmax", "aten.log_softmax", "aten._log_softmax")
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


@converter("aten.layer_norm")
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


@converter("aten.rms_norm")
def handle_rms_norm(ctx, node, args, kwargs):
    x = ctx.value(args[0])
    normalized = list(args[1])
    weight = args[2] if len(args) > 2 else kwargs.get("weight")
    eps = args[3] if len(args) > 3 else kwargs.get("eps")
    dtype = ctx.builder.type(x).dtype
    eps = torch.finfo(torch.float32 if dtype is DType.f32 else torch.float16).eps if eps is None else eps
    gamma = _norm_parameter(ctx, weight, 1.0, normalized, dtype, f"{node.name}.weight")
    return op(ctx, "rmsnorm", [x, gamma], {"axis": -len(normalized), "eps": float(eps)}, hint=node.name)


@converter("aten.batch_norm", "aten._native_batch_norm_legit_no_training")
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
    if key == "aten.batch_norm":
        return result
    # the saved statistics of inference are empty tensors (what PyTorch returns)
    read = read_results(node)
    empty = [ctx.builder.splat(f"{node.name}.saved", 0, TensorType(dtype, tuple(int(size) for size in meta.shape)))
             if index in read else None for index, meta in enumerate(node.meta["val"][1:3], 1)]
    return [result, *empty]


# --- linear algebra and attention ------------------------------------------------------
@converter("aten.linear")
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


@converter("aten.addmm")
def handle_addmm(ctx, node, args, kwargs):
    """beta bias + alpha (m1 @ m2): ``linear(m1, m2, bias)`` when alpha = beta = 1, else the
    product and the bias scaled apart (beta = 0 drops the bias, NaNs in it too, as PyTorch)."""
    bias, first, second = args[:3]
    beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
    dtype = result_dtype(node)
    factors = [operand(ctx, first, dtype, node.name), operand(ctx, second, dtype, node.name)]
    if beta == 1 and alpha == 1:
        return op(ctx, "linear", factors + [operand(ctx, bias, dtype, f"{node.name}.bias")], hint=node.name)
    product = op(ctx, "matmul", factors, hint=f"{node.name}.product")
    if alpha != 1:
        product = op(ctx, "mul", [product, ctx.builder.scalar(alpha, dtype)], hint=f"{node.name}.alpha")
    if beta == 0:
        return reshape(ctx, product, shape_of(ctx, product), node.name)
    scaled = operand(ctx, bias, dtype, f"{node.name}.bias")
    if beta != 1:
        scaled = op(ctx, "mul", [scaled, ctx.builder.scalar(beta, dtype)], hint=f"{node.name}.beta")
    return op(ctx, "add", [product, scaled], hint=node.name)


@converter("aten.matmul", "aten.mm", "aten.bmm")
def handle_matmul(ctx, node, args, kwargs):
    """matmul / mm / bmm; a 1-D operand is a matrix of one row (left) or one column (right)
    for the product, that dim dropped after (PyTorch's matmul)."""
    dtype = result_dtype(node)
    left, right = (operand(ctx, item, dtype, node.name) for item in args[:2])
    left_shape, right_shape = shape_of(ctx, left), shape_of(ctx, right)
    if len(left_shape) > 1 and len(right_shape) > 1:
        return op(ctx, "matmul", [left, right], hint=node.name)
    if len(left_shape) == 1:
        left = reshape(ctx, left, (1,) + left_shape, f"{node.name}.row")
    if len(right_shape) == 1:
        right = reshape(ctx, right, right_shape + (1,), f"{node.name}.column")
    product = op(ctx, "matmul", [left, right], hint=f"{node.name}.product")
    return reshape(ctx, product, tuple(node.meta["val"].shape), node.name)


@converter("aten.embedding")
def handle_embedding(ctx, node, args, kwargs):
    table, indices = ctx.value(args[0]), ctx.value(args[1])
    return op(ctx, "gather", [table, indices], {"axis": 0}, hint=node.name)


@converter("aten.scaled_dot_product_attention")
def handle_sdpa(ctx, node, args, kwargs):
    """scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale=,
    enable_gqa=): grouped k/v heads are repeated to q's (head h reads kv head h // rep)."""
    names = ("attn_mask", "dropout_p", "is_causal")
    extra = {name: args[3 + index] for index, name in enumerate(names) if len(args) > 3 + index}
    extra.update({key: value for key, value in kwargs.items()})
    if extra.get("dropout_p", 0.0) > 0:
        refuse(f"scaled_dot_product_attention with dropout_p={extra['dropout_p']} (random in training)",
               "dropout_p = 0 (a module in eval mode passes 0)")
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


@converter("aten._scaled_dot_product_flash_attention_for_cpu")
def handle_flash_attention(ctx, node, args, kwargs):
    """_scaled_dot_product_flash_attention_for_cpu(q, k, v, dropout_p=0, is_causal=False,
    attn_mask=, scale=) -> (out, logsumexp): out is the IR's ``attention``; the log-sum-exp
    of each query's scaled (and masked) scores over the keys, built only when read."""
    names = ("dropout_p", "is_causal")
    given = {"dropout_p": 0.0, "is_causal": False, **dict(zip(names, args[3:])), **kwargs}
    out = handle_sdpa(ctx, node, list(args[:3]), {key: given.get(key) for key in
                                                  ("dropout_p", "is_causal", "attn_mask", "scale")})
    if 1 not in read_results(node):
        return [out, None]
    q, k = ctx.value(args[0]), ctx.value(args[1])
    dtype = ctx.builder.type(q).dtype
    width = shape_of(ctx, q)[-1]
    scale = given.get("scale") or 1.0 / float(np.sqrt(static_dim(width, "attention's head width")))
    scores = op(ctx, "mul", [op(ctx, "matmul", [q, k], {"transpose_b": True}, hint=f"{node.name}.scores"),
                             ctx.builder.scalar(scale, dtype)], hint=f"{node.name}.scaled")
    if given.get("attn_mask") is not None:
        scores = op(ctx, "add", [scores, operand(ctx, given["attn_mask"], dtype, node.name)], hint=f"{node.name}.masked")
    if given["is_causal"]:
        rows, columns = (static_dim(size, "a causal mask") for size in shape_of(ctx, scores)[-2:])
        allowed = np.tril(np.ones((rows, columns), dtype=bool))
        scores = op(ctx, "where", [ctx.builder.tensor(f"{node.name}.causal", allowed), scores,
                                   ctx.builder.scalar(-np.inf, dtype)], hint=f"{node.name}.causal_scores")
    most = op(ctx, "reduce_max", [scores], {"axes": (-1,), "keepdims": True}, hint=f"{node.name}.max")
    total = op(ctx, "reduce_sum", [op(ctx, "exp", [op(ctx, "sub", [scores, most], hint=f"{node.name}.centered")],
                                      hint=f"{node.name}.exp")], {"axes": (-1,), "keepdims": True},
               hint=f"{node.name}.sum")
    lse = op(ctx, "add", [op(ctx, "log", [total], hint=f"{node.name}.log"), most], hint=f"{node.name}.lse_kept")
    return [out, reshape(ctx, lse, shape_of(ctx, lse)[:-1], f"{node.name}.logsumexp")]


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


@converter("aten.conv1d", "aten.conv2d", "aten.convolution")
def handle_conv(ctx, node, args, kwargs):
    """conv1d / conv2d / convolution (forward or transposed): 1-D convs run as 2-D over a
    unit height; a transposed one as a forward ``conv2d`` (`transposed_convolution`)."""
    x = ctx.value(args[0])
    dtype = ctx.builder.type(x).dtype
    w = operand(ctx, args[1], dtype, node.name)
    bias = args[2] if len(args) > 2 else None
    spatial = ctx.builder.type(x).rank - 2
    transposed, output_padding = False, [0] * max(spatial, 1)
    if op_key(node.target) == "aten.convolution":
        stride, padding, dilation, transposed, output_padding, groups = args[3:9]
    else:
        stride, padding, dilation, groups = (list(args[3:7]) + [1, 0, 1, 1][len(args[3:7]):])
    if spatial not in (1, 2, 3):
        refuse(f"a {spatial}-D convolution of a rank-{spatial + 2} input", "1-D, 2-D or 3-D convolutions of batched inputs")
    kernel = [int(size) for size in shape_of(ctx, w)[2:]]
    stride, dilation = _pair(stride, spatial), _pair(dilation, spatial)
    padding = _padding(padding, dilation, kernel, spatial)
    if spatial == 3 and transposed:
        x, w = transposed_as_forward(ctx, node, x, w, (stride, padding, dilation, _pair(output_padding, 3)),
                                     int(groups))
        stride, padding = [1, 1, 1], [0, 0, 0]
    if spatial == 3:
        return _conv3d(ctx, node, x, w, bias, (stride, padding, dilation), int(groups))
    if spatial == 1:
        return _conv1d(ctx, node, x, w, bias, (stride, padding, dilation, _pair(output_padding, 1)), groups,
                       transposed)
    if transposed:
        return transposed_convolution(ctx, node, x, w, bias, stride, padding, dilation, _pair(output_padding, 2),
                                      int(groups))
    biases = [operand(ctx, bias, dtype, f"{node.name}.bias")] if bias is not None else []
    attrs = {"stride": tuple(stride), "padding": (padding[0], padding[1], padding[0], padding[1]),
             "dilation": tuple(dilation), "groups": int(groups)}
    return op(ctx, "conv2d", [x, w] + biases, attrs, hint=node.name)


def _padding(padding, dilation, kernel, spatial: int) -> list[int]:
    """The padding per spatial dim ("valid", "same" with an odd extent, or numbers)."""
    if isinstance(padding, str):
        padding = [0] * spatial if padding == "valid" else [d * (k - 1) // 2 for d, k in zip(dilation, kernel)]
        if padding != [0] * spatial and any((d * (k - 1)) % 2 for d, k in zip(dilation, kernel)):
            refuse("padding='same' with an even kernel")
    return _pair(padding, spatial)


def _conv3d(ctx, node, x: str, w: str, bias, geometry, groups: int) -> str:
    """A 3-D convolution as one ``conv2d`` per kernel depth: the input depths each output
    depth reads at that kernel depth (a static ``gather``, zero padding joined first) moved
    into the batch, convolved with that slice of the kernel, and the kernel depths summed."""
    stride, padding, dilation = geometry
    batch, channels, depth, height, width = shape_of(ctx, x)
    out_channels, _, kernel_depth, kernel_h, kernel_w = (static_dim(size, "a 3-D convolution")
                                                        for size in shape_of(ctx, w))
    depth = static_dim(depth, "a 3-D convolution")
    out_depth = int(node.meta["val"].shape[2])
    dtype = ctx.builder.type(x).dtype
    if padding[0]:
        zeros = ctx.builder.splat(f"{node.name}.depth_pad", 0, TensorType(dtype, (batch, channels, padding[0], height,
                                                                                  width)))
        x = op(ctx, "concat", [zeros, x, zeros], {"axis": 2}, hint=f"{node.name}.padded")
    attrs = {"stride": tuple(stride[1:]), "padding": (padding[1], padding[2], padding[1], padding[2]),
             "dilation": tuple(dilation[1:]), "groups": groups}
    total = None
    for level in range(kernel_depth):
        rows = np.arange(out_depth, dtype=np.int64) * stride[0] + level * dilation[0]
        picked = op(ctx, "gather", [x, ctx.builder.tensor(f"{node.name}.depths", rows)], {"axis": 2},
                    hint=f"{node.name}.d{level}")
        moved = op(ctx, "transpose", [picked], {"perm": (0, 2, 1, 3, 4)}, hint=f"{node.name}.moved{level}")
        planes = reshape(ctx, moved, (batch * out_depth, channels, height, width), f"{node.name}.planes{level}")
        kernel = reshape(ctx, op(ctx, "slice", [w], {"axis": 2, "start": level, "len": 1}, hint=f"{node.name}.w"),
                         (out_channels, shape_of(ctx, w)[1], kernel_h, kernel_w), f"{node.name}.w{level}")
        part = op(ctx, "conv2d", [planes, kernel], attrs, hint=f"{node.name}.part{level}")
        total = part if total is None else op(ctx, "add", [total, part], hint=f"{node.name}.sum{level}")
    out_h, out_w = shape_of(ctx, total)[2:]
    result = op(ctx, "transpose", [reshape(ctx, total, (batch, out_depth, out_channels, out_h, out_w),
                                           f"{node.name}.unplanes")], {"perm": (0, 2, 1, 3, 4)},
                hint=f"{node.name}.conv" if bias is not None else node.name)
    if bias is None:
        return result
    shift = reshape(ctx, operand(ctx, bias, dtype, f"{node.name}.bias"), (1, out_channels, 1, 1, 1),
                    f"{node.name}.bias_shape")
    return op(ctx, "add", [result, shift], hint=node.name)


def _conv1d(ctx, node, x: str, w: str, bias, geometry, groups, transposed: bool) -> str:
    """A 1-D convolution as a 2-D one over a unit height."""
    stride, padding, dilation, output_padding = geometry
    batch, channels, length = shape_of(ctx, x)
    x4 = reshape(ctx, x, (batch, channels, 1, length), f"{node.name}.x2d")
    w4 = reshape(ctx, w, shape_of(ctx, w)[:2] + (1, shape_of(ctx, w)[2]), f"{node.name}.w2d")
    if transposed:
        y4 = transposed_convolution(ctx, node, x4, w4, bias, (1, stride[0]), (0, padding[0]), (1, dilation[0]),
                                    (0, output_padding[0]), int(groups))
    else:
        biases = [operand(ctx, bias, ctx.builder.type(x).dtype, f"{node.name}.bias")] if bias is not None else []
        attrs = {"stride": (1, stride[0]), "padding": (0, padding[0], 0, padding[0]), "dilation": (1, dilation[0]),
                 "groups": int(groups)}
        y4 = op(ctx, "conv2d", [x4, w4] + biases, attrs, hint=f"{node.name}.2d")
    out = shape_of(ctx, y4)
    return reshape(ctx, y4, (out[0], out[1], out[3]), node.name)


POOL_ARGUMENTS = {
    "aten.max_pool2d": ("kernel_size", "stride", "padding", "dilation", "ceil_mode"),
    "aten.avg_pool2d": ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"),
}


@converter("aten.max_pool2d", "aten.avg_pool2d")
def handle_pool(ctx, node, args, kwargs):
    """max_pool2d / avg_pool2d: ceil_mode as extra bottom / right padding; an average whose
    divisor is not the kernel's area (the extra ceil padding, count_include_pad=False,
    divisor_override) as the IR's average times a static factor (`rlxir.importers.pooling`)."""
    key = op_key(node.target)
    given = dict(zip(POOL_ARGUMENTS[key], args[1:]), **kwargs)
    x = ctx.value(args[0])
    if ctx.builder.type(x).rank == 3:  # unbatched [C, H, W]: pooled as a batch of one
        batched = reshape(ctx, x, (1,) + shape_of(ctx, x), f"{node.name}.batched")
        pooled = handle_pool(ctx, node, [batched, *args[1:]], kwargs)
        return reshape(ctx, pooled, shape_of(ctx, pooled)[1:], f"{node.name}.unbatched")
    kernel = _pair(given["kernel_size"], 2)
    stride = _pair(given["stride"], 2) if given.get("stride") else kernel
    declared = _pair(given.get("padding", 0), 2) * 2
    if key == "aten.max_pool2d" and _pair(given.get("dilation", 1), 2) != [1, 1]:
        out_size = [int(size) for size in node.meta["val"].shape[-2:]]
        return windowed_max_pool(ctx, node, x, (kernel, stride, _pair(given.get("padding", 0), 2),
                                                _pair(given["dilation"], 2)), out_size)
    spatial = shape_of(ctx, x)[2:]
    padding = tuple(declared)
    if given.get("ceil_mode"):
        padding = ceil_mode_padding(spatial, kernel, stride, declared, f"{key} with ceil_mode")
    name = key.removeprefix("aten.")
    attrs = {"kernel": tuple(kernel), "stride": tuple(stride), "padding": padding}
    if name == "max_pool2d":
        return op(ctx, name, [x], attrs, hint=node.name)
    factors = average_factors(spatial, kernel, stride, padding, declared, given.get("count_include_pad", True),
                              given.get("divisor_override"))
    result = op(ctx, name, [x], attrs, hint=f"{node.name}.kernel_mean" if factors else node.name)
    dtype = ctx.builder.type(x).dtype
    for index, factor in enumerate(factors):
        correction = ctx.builder.literal(f"{node.name}.divisor_correction", factor.astype(np.float32), dtype)
        last = index == len(factors) - 1
        result = op(ctx, "mul", [result, correction], hint=node.name if last else f"{node.name}.rows")
    return result


@converter("aten.adaptive_avg_pool2d", "aten._adaptive_avg_pool2d")
def handle_adaptive_avg_pool(ctx, node, args, kwargs):
    """adaptive_avg_pool2d(x, (oh, ow)): output row i averages input rows floor(i H / oh) to
    ceil((i + 1) H / oh) (PyTorch's windows). 1x1 is a mean; sizes that divide the input are
    an avg_pool2d; others a matmul per axis by a static averaging matrix."""
    x = ctx.value(args[0])
    if ctx.builder.type(x).rank == 3:  # unbatched [C, H, W]: pooled as a batch of one
        batched = reshape(ctx, x, (1,) + shape_of(ctx, x), f"{node.name}.batched")
        pooled = handle_adaptive_avg_pool(ctx, node, [batched, *args[1:]], kwargs)
        return reshape(ctx, pooled, shape_of(ctx, pooled)[1:], f"{node.name}.unbatched")
    shape = shape_of(ctx, x)
    sizes = [shape[2 + axis] if size is None else size for axis, size in enumerate(_pair(args[1], 2))]
    if sizes == [1, 1]:
        return op(ctx, "reduce_mean", [x], {"axes": (2, 3), "keepdims": True}, hint=node.name)
    spatial = [static_dim(size, f"adaptive_avg_pool2d to {sizes}") for size in shape[2:]]
    if sizes == spatial:
        return x
    if all(size % out == 0 for size, out in zip(spatial, sizes)):
        kernel = tuple(size // out for size, out in zip(spatial, sizes))
        return op(ctx, "avg_pool2d", [x], {"kernel": kernel, "stride": kernel}, hint=node.name)
    dtype = ctx.builder.type(x).dtype
    rows = ctx.builder.literal(f"{node.name}.rows", _averaging(spatial[0], sizes[0]), dtype)
    columns = ctx.builder.literal(f"{node.name}.columns", _averaging(spatial[1], sizes[1]).T, dtype)
    by_rows = op(ctx, "matmul", [rows, x], hint=f"{node.name}.by_rows")
    return op(ctx, "matmul", [by_rows, columns], hint=node.name)


def _averaging(size: int, out: int) -> np.ndarray:
    """The [out, size] matrix whose row i averages PyTorch's i-th adaptive window."""
    matrix = np.zeros((out, size), np.float32)
    for index in range(out):
        start, stop = index * size // out, -(-(index + 1) * size // out)
        matrix[index, start:stop] = 1.0 / (stop - start)
    return matrix


register("aten.mean", reduction("reduce_mean"))
register("aten.sum", reduction("reduce_sum"))
register("aten.amax", reduction("reduce_max"))
register("aten.amin", reduction("reduce_min"))


@converter("aten.linalg_vector_norm")
def handle_vector_norm(ctx, node, args, kwargs):
    """linalg_vector_norm(x, ord, dim, keepdim, dtype) over `dim` (every dim when absent):
    ord 2 the root of the sum of squares, 1 the sum of magnitudes, inf / -inf their largest
    / smallest, 0 the count of nonzeros, any other p ``sum(|x|^p)^(1/p)``. PyTorch's Core
    ATen table lowers it to these ops itself; releases whose table has no decomposition for
    it leave it whole, and this converter takes it there."""
    x = operand(ctx, args[0], result_dtype(node), node.name)
    order = args[1] if len(args) > 1 else kwargs.get("ord", 2)
    rank = ctx.builder.type(x).rank
    dims = args[2] if len(args) > 2 else kwargs.get("dim")
    keepdim = bool(args[3] if len(args) > 3 else kwargs.get("keepdim", False))
    axes = tuple(range(rank)) if dims in (None, []) else tuple([dims] if isinstance(dims, int) else dims)
    reduce = {"axes": axes, "keepdims": keepdim}
    name, dtype = node.name, ctx.builder.type(x).dtype
    if rank == 0:
        reduce = None
    magnitude = op(ctx, "abs", [x], hint=f"{name}.abs")

    def summed(value: str, reduce_op: str = "reduce_sum") -> str:
        return value if reduce is None else op(ctx, reduce_op, [value], reduce, hint=f"{name}.{reduce_op}")

    if order == 2:
        return op(ctx, "sqrt", [summed(op(ctx, "mul", [magnitude, magnitude], hint=f"{name}.square"))], hint=name)
    if order == 1:
        return summed(magnitude)
    if order in (float("inf"), float("-inf")):
        return summed(magnitude, "reduce_max" if order > 0 else "reduce_min")
    if order == 0:
        nonzero = op(ctx, "ne", [x, ctx.builder.scalar(0, dtype)], hint=f"{name}.nonzero")
        return summed(op(ctx, "cast", [nonzero], {"to": dtype}, hint=f"{name}.count"))
    powered = op(ctx, "pow", [magnitude, ctx.builder.scalar(float(order), dtype)], hint=f"{name}.pow")
    return op(ctx, "pow", [summed(powered), ctx.builder.scalar(1.0 / float(order), dtype)], hint=name)


@converter("aten.addmv", "aten.addbmm")
def handle_add_product(ctx, node, args, kwargs):
    """addmv(x, mat, vec) and addbmm(x, batch1, batch2): beta x + alpha (the matrix-vector
    product, or the sum over the batch of the products); beta = 0 ignores x (NaNs too)."""
    dtype = result_dtype(node)
    x, first, second = (operand(ctx, item, dtype, node.name) for item in args[:3])
    beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
    if str(node.target).startswith("aten.addmv"):
        column = reshape(ctx, second, shape_of(ctx, second) + (1,), f"{node.name}.column")
        product = reshape(ctx, op(ctx, "matmul", [first, column], hint=f"{node.name}.matmul"),
                          shape_of(ctx, first)[:1], f"{node.name}.product")
    else:
        batched = op(ctx, "matmul", [first, second], hint=f"{node.name}.matmul")
        product = op(ctx, "reduce_sum", [batched], {"axes": (0,), "keepdims": False}, hint=f"{node.name}.product")
    if alpha != 1:
        product = op(ctx, "mul", [product, ctx.builder.scalar(alpha, dtype)], hint=f"{node.name}.alpha")
    if beta == 0:
        return op(ctx, "expand", [product], {"shape": tuple(node.meta["val"].shape)}, hint=node.name) \
            if shape_of(ctx, product) != tuple(node.meta["val"].shape) else product
    if beta != 1:
        x = op(ctx, "mul", [x, ctx.builder.scalar(beta, dtype)], hint=f"{node.name}.beta")
    return op(ctx, "add", [x, product], hint=node.name)
