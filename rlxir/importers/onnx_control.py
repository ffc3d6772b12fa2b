"""ONNX If whose condition is known while importing: the taken branch's nodes are converted
in place of the If (exporters write such Ifs around shape checks, e.g. ``if x.size(0) == 1``).

The branch reads outer values by name, as ONNX scoping allows, and its outputs become the
If's outputs, static or built as they come out. An op type the taken branch has and the
importer lacks is refused listing each (the branch not taken is never looked at), and a
condition computed at run time is refused naming the node.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_registry import CONVERTERS, register
from rlxir.importers.onnx_context import concrete, op_key
from rlxir.importers.onnx_ops import static_input


def convert_if(ctx, node, attrs):
    condition = np.asarray(concrete(static_input(ctx, node, 0, "condition"), "If's condition"))
    if condition.size != 1:
        raise UnsupportedModel(f"an If condition of {condition.size} elements", expected="one boolean")
    branch = attrs["then_branch"] if bool(condition.reshape(())) else attrs["else_branch"]
    missing = Counter(op_key(inner) for inner in branch.node if op_key(inner) not in CONVERTERS)
    if missing:
        listed = ", ".join(f"{op} x{count}" for op, count in sorted(missing.items()))
        raise UnsupportedModel(f"its taken branch {branch.name!r} has ops with no rlx mapping: {listed}")
    for inner in branch.node:
        ctx.convert(inner, CONVERTERS)
    return [ctx.static(output.name) if ctx.is_static(output.name) else ctx.value(output.name)
            for output in branch.output]


register({"If": convert_if})
