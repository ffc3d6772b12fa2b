"""ONNX op -> core ops: the ops of recent decoder blocks around attention.

- RotaryEmbedding (opset 23): the cos / sin rows (gathered by ``position_ids`` when given)
  rotate the first ``rotary_embedding_dim`` features of each head, as two halves or as
  interleaved pairs; the other features pass through.
- SwiGLU (opset 28): ``A * sigmoid(alpha * A) * B`` (``silu`` when alpha is 1).
- CausalConvWithState (opset 27): the past state (zeros when absent) joined in front of the
  input, a depthwise ``conv2d`` over a unit height (summed in f32 for f16 / bf16 inputs, as
  ONNX does), the optional SiLU (in f32); the present state is the joined sequence's last
  k - 1 positions.

LinearAttention, the recurrent mixer of the same models, is in
`rlxir.importers.onnx_linear_attention`.
"""

from __future__ import annotations

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_attention import shape_text
from rlxir.importers.onnx_norm import cast_to
from rlxir.importers.onnx_ops import hint, operand, optional_input
from rlxir.importers.onnx_registry import register
from rlxir.types import TensorType


def slice_axis(ctx, value: str, axis: int, start: int, length: int, name: str) -> str:
    """`length` entries of `value` from `start` along `axis`."""
    return ctx.builder.op("slice", [value], {"axis": axis, "start": start, "len": length}, hint=name)


# --- RotaryEmbedding -------------------------------------------------------------------
def convert_rotary(ctx, node, attrs):
    """Heads stay where they are: a 4-D input is [B, H, S, D] and the cos / sin rows are
    [B, 1, S, R/2]; a 3-D input [B, S, H*D] is viewed as [B, S, H, D] with rows [B, S, 1, R/2]."""
    builder, name = ctx.builder, hint(node)
    x = ctx.value(node.input[0])
    type_ = builder.type(x)
    if type_.rank == 3:
        heads = int(attrs.get("num_heads", 0))
        batch, length, hidden = type_.shape
        if heads < 1 or not isinstance(hidden, int) or hidden % heads:
            raise UnsupportedModel(f"a 3-D RotaryEmbedding input of hidden size {hidden} with num_heads={heads}",
                                   expected="num_heads dividing the hidden size")
        x = builder.op("reshape", [x], {"shape": (batch, length, heads, hidden // heads)}, hint=f"{name}.heads")
        row_axis = 2
    elif type_.rank == 4:
        row_axis = 1
    else:
        raise UnsupportedModel(f"RotaryEmbedding of a rank-{type_.rank} input", expected="rank 3 or 4")
    head_size = builder.type(x).shape[-1]
    rotated = int(attrs.get("rotary_embedding_dim", 0)) or head_size
    if rotated % 2 or rotated > head_size:
        raise UnsupportedModel(f"rotary_embedding_dim {rotated} for heads of {head_size}",
                               expected="an even size of at most the head size")
    cos, sin = (_rotation_rows(ctx, node, index, type_.dtype, rotated // 2, row_axis, f"{name}.{part}")
                for index, part in ((1, "cos"), (2, "sin")))
    part = x if rotated == head_size else slice_axis(ctx, x, -1, 0, rotated, f"{name}.rotated_part")
    if attrs.get("interleaved", 0):
        result = _rotate_interleaved(ctx, part, cos, sin, name)
    else:
        first, second = (slice_axis(ctx, part, -1, start, rotated // 2, f"{name}.half{start}")
                         for start in (0, rotated // 2))
        real, imaginary = _rotate(ctx, first, second, cos, sin, name)
        result = builder.op("concat", [real, imaginary], {"axis": -1}, hint=f"{name}.rotated")
    if rotated != head_size:
        rest = slice_axis(ctx, x, -1, rotated, head_size - rotated, f"{name}.passed")
        result = builder.op("concat", [result, rest], {"axis": -1}, hint=f"{name}.joined")
    return [builder.op("reshape", [result], {"shape": tuple(type_.shape)}, hint=name)
            if type_.rank == 3 else result]


def _rotation_rows(ctx, node, index: int, dtype: DType, half: int, row_axis: int, name: str) -> str:
    """cos_cache / sin_cache as [B, S, R/2] rows (gathered at position_ids when given), with a
    unit axis at `row_axis` for the heads."""
    builder = ctx.builder
    cache = operand(ctx, node.input[index], dtype)
    position_ids = optional_input(node, 3)
    rows = cache if position_ids is None else builder.op("gather", [cache, ctx.value(position_ids)], {"axis": 0},
                                                          hint=f"{name}.rows")
    shape = builder.type(rows).shape
    if len(shape) != 3 or shape[-1] != half:
        raise UnsupportedModel(f"cos / sin rows of shape {shape_text(shape)}",
                               expected=f"[batch, sequence, {half}] (rotary_embedding_dim / 2 wide)")
    target = list(shape)
    target.insert(row_axis, 1)
    return builder.op("reshape", [rows], {"shape": tuple(target)}, hint=name)


def _rotate(ctx, first: str, second: str, cos: str, sin: str, name: str) -> tuple[str, str]:
    """(cos x1 - sin x2, sin x1 + cos x2)."""
    builder = ctx.builder
    real = builder.op("sub", [builder.op("mul", [cos, first], hint=f"{name}.cos_x1"),
                              builder.op("mul", [sin, second], hint=f"{name}.sin_x2")], hint=f"{name}.real")
    imaginary = builder.op("add", [builder.op("mul", [sin, first], hint=f"{name}.sin_x1"),
                                   builder.op("mul", [cos, second], hint=f"{name}.cos_x2")], hint=f"{name}.imag")
    return real, imaginary


def _rotate_interleaved(ctx, part: str, cos: str, sin: str, name: str) -> str:
    """Pairs (x[2i], x[2i+1]) rotated: the features viewed as [..., R/2, 2]."""
    builder = ctx.builder
    shape = builder.type(part).shape
    half = shape[-1] // 2
    pairs = builder.op("reshape", [part], {"shape": (*shape[:-1], half, 2)}, hint=f"{name}.pairs")
    even, odd = (builder.op("reshape", [slice_axis(ctx, pairs, -1, start, 1, f"{name}.pair{start}")],
                            {"shape": (*shape[:-1], half)}, hint=f"{name}.lane{start}") for start in (0, 1))
    real, imaginary = _rotate(ctx, even, odd, cos, sin, name)
    columns = [builder.op("reshape", [value], {"shape": (*shape[:-1], half, 1)}, hint=f"{name}.column")
               for value in (real, imaginary)]
    joined = builder.op("concat", columns, {"axis": -1}, hint=f"{name}.rotated_pairs")
    return builder.op("reshape", [joined], {"shape": tuple(shape)}, hint=f"{name}.rotated")


# --- SwiGLU ----------------------------------------------------------------------------
def convert_swiglu(ctx, node, attrs):
    builder, name = ctx.builder, hint(node)
    gate = ctx.value(node.input[0])
    dtype = builder.type(gate).dtype
    value = operand(ctx, node.input[1], dtype)
    if builder.type(value).shape != builder.type(gate).shape:
        raise UnsupportedModel(f"SwiGLU of {builder.type(gate)} and {builder.type(value)}",
                               expected="inputs of one shape (SwiGLU does not broadcast)")
    alpha = float(attrs.get("alpha", 1.0))
    if alpha == 1.0:
        swish = builder.op("silu", [gate], hint=f"{name}.swish")
    else:
        scaled = builder.op("mul", [gate, builder.scalar(alpha, dtype)], hint=f"{name}.alpha_gate")
        swish = builder.op("mul", [gate, builder.op("sigmoid", [scaled], hint=f"{name}.sigmoid")],
                           hint=f"{name}.swish")
    return [builder.op("mul", [swish, value], hint=name)]


# --- CausalConvWithState ---------------------------------------------------------------
def convert_causal_conv(ctx, node, attrs):
    builder, name = ctx.builder, hint(node)
    x = ctx.value(node.input[0])
    type_ = builder.type(x)
    activation = attrs.get("activation", "none")
    activation = activation.decode() if isinstance(activation, bytes) else activation
    if activation not in ("none", "silu", "swish"):
        raise UnsupportedModel(f"activation {activation!r}", expected="none, silu or swish")
    weight = operand(ctx, node.input[1], type_.dtype)
    if type_.rank != 3 or builder.type(weight).rank != 3:
        raise UnsupportedModel("CausalConvWithState of other ranks", expected="input [B, C, L] and weight [C, 1, k]")
    batch, channels, length = type_.shape
    kernel = builder.type(weight).shape[2]
    if not isinstance(kernel, int) or not isinstance(length, int) or builder.type(weight).shape[:2] != (channels, 1):
        raise UnsupportedModel(f"a weight of shape {builder.type(weight)}",
                               expected=f"[{channels}, 1, k] with a static k and a static length")
    if optional_input(node, 3) is not None:
        past = operand(ctx, node.input[3], type_.dtype)
    elif kernel > 1:
        past = builder.splat(f"{name}.no_past", 0, TensorType(type_.dtype, (batch, channels, kernel - 1)))
    else:
        past = None
    joined = x if past is None else builder.op("concat", [past, x], {"axis": 2}, hint=f"{name}.joined")
    wide = DType.f32 if type_.dtype in (DType.f16, DType.bf16) else type_.dtype  # sums in f32, as ONNX does
    rows = builder.op("reshape", [cast_to(ctx, joined, wide, f"{name}.joined_{wide.value}")],
                      {"shape": (batch, channels, 1, length + kernel - 1)}, hint=f"{name}.rows")
    kernels = builder.op("reshape", [cast_to(ctx, weight, wide, f"{name}.weight_{wide.value}")],
                         {"shape": (channels, 1, 1, kernel)}, hint=f"{name}.kernels")
    bias = [operand(ctx, node.input[2], wide)] if optional_input(node, 2) else []
    convolved = builder.op("conv2d", [rows, kernels, *bias], {"groups": channels}, hint=f"{name}.conv")
    output = builder.op("reshape", [convolved], {"shape": (batch, channels, length)},
                        hint=name if activation == "none" and wide is type_.dtype else f"{name}.linear")
    output = cast_to(ctx, output, type_.dtype, name if activation == "none" else f"{name}.narrow")
    if activation != "none":
        output = _silu_in_f32(ctx, output, name)
    present = slice_axis(ctx, joined, 2, length, kernel - 1, f"{name}.present_state")
    return [output, present]


def _silu_in_f32(ctx, value: str, name: str) -> str:
    """SiLU evaluated in f32 (ONNX's precision for it) and cast back."""
    builder = ctx.builder
    dtype = builder.type(value).dtype
    wide = value if dtype is DType.f32 else builder.op("cast", [value], {"to": DType.f32}, hint=f"{name}.f32")
    activated = builder.op("silu", [wide], hint=name if wide == value else f"{name}.silu")
    return activated if wide == value else builder.op("cast", [activated], {"to": dtype}, hint=name)


register({"RotaryEmbedding": convert_rotary, "SwiGLU": convert_swiglu, "CausalConvWithState": convert_causal_conv})
