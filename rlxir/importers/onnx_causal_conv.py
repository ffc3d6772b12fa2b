"""ONNX op -> core ops: CausalConvWithState, a depthwise 1-D convolution over the carried
state followed by the new input.

The past state (zeros when absent) is concatenated before the input along the length, and a
depthwise ``conv2d`` over a unit height without padding gives one output per input
position; the optional fused SiLU / Swish follows. Both are computed in f32 for f16 data
(ONNX's reference rounds to f16 once, at the end). The present state is the last ``k - 1``
positions of that concatenation.
"""

from __future__ import annotations

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_ops import hint, operand, optional_input, unused
from rlxir.importers.onnx_registry import register
from rlxir.types import TensorType

ACTIVATIONS = ("none", "silu", "swish")


def convert_causal_conv_with_state(ctx, node, attrs):
    activation = attrs.get("activation", "none")
    if activation not in ACTIVATIONS:
        raise UnsupportedModel(f"CausalConvWithState with activation {activation!r}",
                               expected="one of " + ", ".join(ACTIVATIONS))
    x = ctx.value(node.input[0])
    type_ = ctx.builder.type(x)
    if type_.rank != 3:
        raise UnsupportedModel(f"CausalConvWithState of a rank-{type_.rank} input", expected="[N, C, L]")
    batch, channels, length = type_.shape
    dtype = type_.dtype
    w = operand(ctx, node.input[1], dtype)
    kernel = ctx.builder.type(w).shape[-1]
    if not isinstance(kernel, int) or not isinstance(channels, int):
        raise UnsupportedModel("CausalConvWithState of a symbolic kernel or channel count",
                               expected="static C and k")
    name, b = hint(node), ctx.builder
    if kernel > 1:
        past = optional_input(node, 3)
        state = operand(ctx, past, dtype) if past else \
            b.splat(f"{name}.zero_state", 0, TensorType(dtype, (batch, channels, kernel - 1)))
        sequence = b.op("concat", [state, x], {"axis": 2}, hint=f"{name}.sequence")
    else:
        sequence = x
    total = length + kernel - 1
    wide = DType.f32 if dtype is DType.f16 else dtype
    planes = b.op("reshape", [_as(ctx, sequence, wide)], {"shape": (batch, channels, 1, total)},
                  hint=f"{name}.planes")
    taps = b.op("reshape", [_as(ctx, w, wide)], {"shape": (channels, 1, 1, kernel)}, hint=f"{name}.taps")
    bias = [operand(ctx, node.input[2], wide)] if optional_input(node, 2) else []
    convolved = b.op("conv2d", [planes, taps] + bias, {"groups": channels}, hint=f"{name}.conv2d")
    last = activation == "none" and wide is dtype
    output = b.op("reshape", [convolved], {"shape": (batch, channels, length)}, hint=name if last else f"{name}.conv")
    if activation != "none":
        output = b.op("silu", [output], hint=name if wide is dtype else f"{name}.silu")
    if wide is not dtype:
        output = b.op("cast", [output], {"to": dtype}, hint=name)
    return [output, _present_state(ctx, node, sequence, length, kernel)]


def _as(ctx, value: str, dtype: DType) -> str:
    if ctx.builder.type(value).dtype is dtype:
        return value
    return ctx.builder.op("cast", [value], {"to": dtype}, hint=f"{value}.{dtype.value}")


def _present_state(ctx, node, sequence: str, length, kernel: int) -> str | None:
    """The last ``k - 1`` positions (none for k = 1: an empty tensor)."""
    if unused(ctx, node, 1):
        return None
    return ctx.builder.op("slice", [sequence], {"axis": 2, "start": length, "len": kernel - 1},
                          hint=hint(node, 1))


register({"CausalConvWithState": convert_causal_conv_with_state})
