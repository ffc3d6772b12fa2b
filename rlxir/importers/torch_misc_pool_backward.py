"""``max_pool2d_with_indices_backward`` -> a ``scatter_elements`` add.

PyTorch's backward of a max pool adds each output's gradient at the input position its
index names (a flat position within the input's H x W plane); positions no window chose get
zero, positions several windows chose get the sum. That is a scatter with reduction "add"
of the output gradient at the indices, into zeros of the input's shape: exact whatever
produced the indices, for any kernel, stride, padding, dilation or ceil mode (they only
shaped the indices). The IR's ``max_pool2d_grad`` recomputes the argmax from the input and
has no dilation or ceil mode, so it is not used.
"""

from __future__ import annotations

from rlxir.dtypes import DType
from rlxir.importers.torch_ops import op, operand, reshape, result_dtype, shape_of
from rlxir.importers.torch_registry import converter
from rlxir.symbolic import mul
from rlxir.types import TensorType


@converter("aten.max_pool2d_with_indices_backward")
def handle_max_pool2d_backward(ctx, node, args, kwargs):
    """(grad_output, x, kernel, stride, padding, dilation, ceil_mode, indices) -> grad_input."""
    dtype = result_dtype(node)
    grad = operand(ctx, args[0], dtype, f"{node.name}.grad")
    indices = operand(ctx, args[7], DType.i64, f"{node.name}.indices")
    input_shape = shape_of(ctx, args[1])
    grad_shape = shape_of(ctx, grad)
    planes = 1
    for size in input_shape[:-2]:
        planes = mul(planes, size)
    plane = mul(input_shape[-2], input_shape[-1])
    windows = mul(grad_shape[-2], grad_shape[-1])
    flat_grad = reshape(ctx, grad, (planes, windows), f"{node.name}.flat_grad")
    flat_indices = reshape(ctx, indices, (planes, windows), f"{node.name}.flat_indices")
    zeros = ctx.builder.splat(f"{node.name}.zeros", 0, TensorType(dtype, (planes, plane)))
    summed = op(ctx, "scatter_elements", [zeros, flat_indices, flat_grad], {"axis": 1, "reduction": "add"},
                hint=f"{node.name}.summed")
    return reshape(ctx, summed, input_shape, node.name)
