"""ONNX op -> core ops: the simple ``ai.onnx.ml`` ops.

- **Binarizer**: 1 where x > threshold, else 0, in x's type.
- **ArrayFeatureExtractor**: the entries of x's last axis at the (flattened) indices, a
  ``gather``; a vector gives one row, as onnxruntime and ONNX's reference have it.
"""

from __future__ import annotations

import math

from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_ops import Arith, hint, product
from rlxir.importers.onnx_registry import register


def convert_binarizer(ctx, node, attrs):
    """On integers x > threshold is x > floor(threshold)."""
    x = ctx.value(node.input[0])
    dtype = ctx.builder.type(x).dtype
    if not (dtype.is_float or dtype.is_integer):
        raise UnsupportedModel(f"Binarizer of a {dtype} tensor", expected="a numeric tensor")
    threshold = float(attrs.get("threshold", 0.0))
    f = Arith(ctx, dtype, hint(node))
    above = f("gt", x, threshold if dtype.is_float else math.floor(threshold), tag="above")
    return [f("where", above, 1, 0, final=True)]


def convert_array_feature_extractor(ctx, node, attrs):
    x = ctx.value(node.input[0])
    shape = ctx.builder.type(x).shape
    indices = ctx.value(node.input[1])
    count = product(ctx.builder.type(indices).shape)
    flat = ctx.builder.op("reshape", [indices], {"shape": (count,)}, hint=f"{hint(node)}.index")
    picked = ctx.builder.op("gather", [x, flat], {"axis": len(shape) - 1},
                            hint=hint(node) if len(shape) > 1 else f"{hint(node)}.row")
    if len(shape) > 1:
        return [picked]
    return [ctx.builder.op("reshape", [picked], {"shape": (1, count)}, hint=hint(node))]


register({"ai.onnx.ml.Binarizer": convert_binarizer,
          "ai.onnx.ml.ArrayFeatureExtractor": convert_array_feature_extractor})
