"""Core ATen elementwise functions beyond `torch_math`'s, built on its helpers: ``erfc``,
``exp2``, ``copysign``, ``signbit``, ``fmax`` / ``fmin``, ``ldexp`` and ``hypot``.
"""

from __future__ import annotations

import math

from rlxir.dtypes import DType
from rlxir.importers.torch_math import _mul, _scalar, _x
from rlxir.importers.torch_ops import op, operand
from rlxir.importers.torch_registry import converter


@converter("aten.erfc", "aten.special_erfc")
def handle_erfc(ctx, node, args, kwargs):
    """1 - erf(x) (absolute error about 1e-7 where erfc is tiny)."""
    x = _x(ctx, node, args)
    return op(ctx, "sub", [_scalar(ctx, 1, x), op(ctx, "erf", [x], hint=f"{node.name}.erf")], hint=node.name)


@converter("aten.exp2", "aten.special_exp2")
def handle_exp2(ctx, node, args, kwargs):
    """exp(x ln 2)."""
    return op(ctx, "exp", [_mul(ctx, _x(ctx, node, args), math.log(2.0), f"{node.name}.scaled")], hint=node.name)


def _negative_sign(ctx, x: str, hint: str) -> str:
    """Where x's sign bit is set: below 0, or -0.0 (1 / x is -inf), or a NaN with the bit is
    not told apart (treated as positive)."""
    zero = _scalar(ctx, 0, x)
    below = op(ctx, "lt", [x, zero], hint=f"{hint}.below")
    negative_zero = op(ctx, "minimum", [op(ctx, "eq", [x, zero], hint=f"{hint}.zero"),
                                        op(ctx, "lt", [op(ctx, "div", [_scalar(ctx, 1, x), x], hint=f"{hint}.inv"),
                                                       zero], hint=f"{hint}.inv_below")], hint=f"{hint}.neg_zero")
    return op(ctx, "maximum", [below, negative_zero], hint=hint)


@converter("aten.copysign")
def handle_copysign(ctx, node, args, kwargs):
    """|x| with y's sign (a -0.0 y counts as negative)."""
    x, y = _x(ctx, node, args, 0), _x(ctx, node, args, 1)
    size = op(ctx, "abs", [x], hint=f"{node.name}.abs")
    return op(ctx, "where", [_negative_sign(ctx, y, f"{node.name}.sign"), op(ctx, "neg", [size], hint=f"{node.name}.neg"),
                             size], hint=node.name)


@converter("aten.signbit")
def handle_signbit(ctx, node, args, kwargs):
    x = ctx.value(args[0])
    if not ctx.builder.type(x).dtype.is_float:
        x = operand(ctx, x, DType.f32, node.name)
    return _negative_sign(ctx, x, node.name)


@converter("aten.fmax", "aten.fmin")
def handle_fmax(ctx, node, args, kwargs):
    """maximum / minimum that ignores a NaN operand (NaN only where both are)."""
    x, y = _x(ctx, node, args, 0), _x(ctx, node, args, 1)
    kind = "maximum" if str(node.target).startswith("aten.fmax") else "minimum"
    both = op(ctx, kind, [x, y], hint=f"{node.name}.both")
    if not ctx.builder.type(x).dtype.is_float:
        return both
    from_y = op(ctx, "where", [op(ctx, "ne", [x, x], hint=f"{node.name}.x_nan"), y, both], hint=f"{node.name}.y")
    return op(ctx, "where", [op(ctx, "ne", [y, y], hint=f"{node.name}.y_nan"), x, from_y], hint=node.name)


@converter("aten.ldexp")
def handle_ldexp(ctx, node, args, kwargs):
    """x * 2^e."""
    x, e = _x(ctx, node, args, 0), _x(ctx, node, args, 1)
    return op(ctx, "mul", [x, op(ctx, "pow", [_scalar(ctx, 2, x), e], hint=f"{node.name}.power")], hint=node.name)


@converter("aten.hypot")
def handle_hypot(ctx, node, args, kwargs):
    """sqrt(x² + y²)."""
    x, y = _x(ctx, node, args, 0), _x(ctx, node, args, 1)
    squares = op(ctx, "add", [op(ctx, "mul", [x, x], hint=f"{node.name}.xx"), op(ctx, "mul", [y, y],
                                                                              hint=f"{node.name}.yy")],
                 hint=f"{node.name}.sum")
    return op(ctx, "sqrt", [squares], hint=node.name)
