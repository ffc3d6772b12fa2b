"""Complex tensors on the PyTorch route, carried as real pairs: (re)construction, parts,
conjugation, elementwise arithmetic and the layout ops they flow through.

The IR's core ops are real and it has no complex literal, so a complex64 value of the
program is carried as an f32 value with a trailing dim of 2 (real, imaginary): exactly
``torch.view_as_real`` of it, as ONNX's DFT carries its signals. ``view_as_complex`` and
``view_as_real`` are then the identity, ``complex(re, im)`` a ``concat``, a product of two
complex values pair arithmetic. A converter that makes a pair records it on its fx node
(`carried`): the node's ``meta["val"]`` becomes the real view, so the importer's type
check compares the pair with the shape and dtype it must have, and later converters know
the operand is a pair (`is_pair`). A complex graph output is therefore an f32 [..., 2].

Ops registered elsewhere for real tensors (``add``, ``view``, ``slice``, ``constant_pad_nd``,
...) read complex operands through `carry`: the table's converter still serves real nodes;
a node that reads or makes a complex value goes to the pair converter here. The other ops
registered before this module (`refuse_complex`) refuse a complex operand by name; one
registered after it is refused by the importer's type check (the complex result it leaves
is not the pair recorded): never computed on the wrong layout. complex128 and complex32 are
carried the same way, as f64 and f16 pairs (`COMPONENTS`), where a real value becomes one
(``x.cdouble()``, ``x.chalf()``); the converters here compute on f32 pairs, so any other op
on them is refused by the type check. A complex graph input stays refused (a c64 value the
IR cannot split): pass its real view.
"""

from __future__ import annotations

import numpy as np
import torch

from rlxir.dtypes import DType
from rlxir.importers import torch_layout, torch_math, torch_special  # noqa: F401  (their converters are carried)
from rlxir.importers.strided import HUGE, slice_any
from rlxir.importers.torch_ops import op, operand, refuse, reshape, shape_of, slice_axis, static_dim
from rlxir.importers.torch_registry import CONVERTERS, NEVER_FOLD, Static, converter, op_key, torch_dtype
from rlxir.ops import normalize_axis
from rlxir.types import TensorType

PAIR = "rlx_complex_pair"
"""The fx node meta key that marks a node whose value is carried as a real pair."""

COMPONENTS = {torch.complex64: DType.f32, torch.complex128: DType.f64, torch.complex32: DType.f16}
"""Each complex dtype's pair dtype: that of its real and imaginary parts (its real view's)."""


# --- pairs -----------------------------------------------------------------------------
def is_pair(item) -> bool:
    """Whether an fx argument is a complex value (carried as a pair, or still complex)."""
    if not isinstance(item, torch.fx.Node):
        return False
    value = item.meta.get("val")
    return item.meta.get(PAIR) is not None or isinstance(value, torch.Tensor) and value.is_complex()


def reads_complex(node) -> bool:
    """Whether the node makes a complex value or reads one."""
    return is_pair(node) or any(is_pair(item) for item in node.all_input_nodes)


def complex_shape(ctx, node) -> tuple:
    """The shape torch.export recorded for a node's complex result (without the pair dim)."""
    value = node.meta[PAIR] if node.meta.get(PAIR) is not None else node.meta["val"]
    return tuple(ctx.dim(size) for size in value.shape)


def carried(ctx, node, pair: str) -> str:
    """`pair` as the value of a node with a complex result: its meta now records the real
    view (what the type check compares), the complex one kept under `PAIR`."""
    value = node.meta["val"]
    if not value.is_complex():
        return pair
    if COMPONENTS.get(value.dtype) is not ctx.type(pair).dtype:  # the pair ops compute in f32
        refuse(f"a {value.dtype} result", "complex64; complex128 and complex32 only where a real value becomes one")
    real_view = _real_view(value)
    if tuple(shape_of(ctx, pair)) != tuple(ctx.dim(size) for size in real_view.shape):
        refuse(f"a complex result of shape {shape_of(ctx, pair)[:-1]}", f"the recorded {tuple(value.shape)}")
    node.meta[PAIR], node.meta["val"] = value, real_view
    return pair


def _real_view(value: torch.Tensor) -> torch.Tensor:
    """The recorded complex value's real view (a conjugate view resolved first), made in the
    fake mode it was recorded in."""
    mode = getattr(value, "fake_mode", None)
    if mode is None:
        return torch.view_as_real(value.resolve_conj())
    with mode:
        return torch.view_as_real(value.resolve_conj())


def pair_of(ctx, item, hint: str, dtype: DType = DType.f32) -> str:
    """An fx argument as a pair [..., 2]: a pair as it is, a real tensor or number with a
    zero imaginary part (both of `dtype`), a complex constant by its real view."""
    source = ctx.resolve(item)
    if isinstance(source, Static) and source.tensor.is_complex():
        return _static_pair(ctx, source, hint)
    if isinstance(source, complex):
        return ctx.builder.tensor(f"{hint}.literal", np.array([source.real, source.imag], np.float32))
    if is_pair(item):
        value = ctx.value(source)
        if ctx.builder.type(value).dtype is DType.c64:
            refuse("a complex64 graph input (the IR cannot split a c64 value)",
                   "its real view: torch.view_as_real(x) as the input, torch.view_as_complex inside")
        return value
    real = operand(ctx, source, dtype, hint)
    zero = ctx.builder.splat(f"{hint}.zero", 0.0, TensorType(dtype, shape_of(ctx, real) + (1,)))
    return op(ctx, "concat", [reshape(ctx, real, shape_of(ctx, real) + (1,), f"{hint}.re"), zero],
              {"axis": len(shape_of(ctx, real))}, hint=f"{hint}.pair")


def _static_pair(ctx, source: Static, hint: str) -> str:
    if source.fake or source.tensor.dtype != torch.complex64:
        refuse(f"a {source.tensor.dtype} constant without values" if source.fake else
               f"a {source.tensor.dtype} constant", "a complex64 constant with values")
    real_view = torch.view_as_real(source.tensor.detach().resolve_conj()).contiguous().numpy()
    return ctx.builder.tensor(f"{source.node}.pair", real_view, weight=source.weight, dtype=DType.f32)


def parts(ctx, pair: str, hint: str) -> tuple[str, str]:
    """The real and imaginary parts of a pair (each in the pair's shape without its last dim)."""
    shape = shape_of(ctx, pair)
    last = len(shape) - 1
    return tuple(reshape(ctx, slice_axis(ctx, pair, last, index, 1, f"{hint}.{part}.slice"), shape[:-1],
                         f"{hint}.{part}") for index, part in enumerate(("re", "im")))


def joined(ctx, real: str, imag: str, hint: str) -> str:
    """The pair [..., 2] of two parts of one shape."""
    shape = shape_of(ctx, real) + (1,)
    pieces = [reshape(ctx, real, shape, f"{hint}.re1"), reshape(ctx, imag, shape, f"{hint}.im1")]
    return op(ctx, "concat", pieces, {"axis": len(shape) - 1}, hint=hint)


# --- making and splitting complex values -----------------------------------------------
@converter("aten.complex")
def handle_complex(ctx, node, args, kwargs):
    """complex(real, imag): both broadcast to the result's shape, then joined."""
    shape = complex_shape(ctx, node)
    real, imag = (_expanded(ctx, operand(ctx, item, DType.f32, node.name), shape, f"{node.name}.{part}")
                  for item, part in zip(args[:2], ("re", "im")))
    return carried(ctx, node, joined(ctx, real, imag, node.name))


def _expanded(ctx, value: str, shape: tuple, hint: str) -> str:
    have = shape_of(ctx, value)
    if have == shape:
        return value
    value = reshape(ctx, value, (1,) * (len(shape) - len(have)) + have, f"{hint}.ranked")
    return op(ctx, "expand", [value], {"shape": shape}, hint=hint)


@converter("aten.polar")
def handle_polar(ctx, node, args, kwargs):
    """polar(abs, angle) = abs cos(angle) + i abs sin(angle), broadcast to the result."""
    shape = complex_shape(ctx, node)
    size, angle = (_expanded(ctx, operand(ctx, item, DType.f32, node.name), shape, f"{node.name}.{what}")
                   for item, what in zip(args[:2], ("abs", "angle")))
    real = op(ctx, "mul", [size, op(ctx, "cos", [angle], hint=f"{node.name}.cos")], hint=f"{node.name}.re")
    imag = op(ctx, "mul", [size, op(ctx, "sin", [angle], hint=f"{node.name}.sin")], hint=f"{node.name}.im")
    return carried(ctx, node, joined(ctx, real, imag, node.name))


@converter("aten.view_as_complex")
def handle_view_as_complex(ctx, node, args, kwargs):
    """A real [..., 2] is already the pair of its complex view."""
    return carried(ctx, node, operand(ctx, args[0], DType.f32, node.name))


@converter("aten.view_as_real")
def handle_view_as_real(ctx, node, args, kwargs):
    return pair_of(ctx, node.args[0], node.name)


@converter("aten.real", "aten.imag")
def handle_part(ctx, node, args, kwargs):
    """The real or imaginary part (of a real tensor: itself, or zeros)."""
    real, imag = parts(ctx, pair_of(ctx, node.args[0], node.name), node.name)
    return imag if op_key(node.target) == "aten.imag" else real


@converter("aten._conj", "aten.conj_physical", "aten._conj_physical", "aten.conj")
def handle_conj(ctx, node, args, kwargs):
    """The conjugate: the imaginary part negated (a real tensor is its own conjugate)."""
    if not is_pair(node.args[0]):
        return ctx.value(args[0])
    pair = pair_of(ctx, node.args[0], node.name)
    signs = ctx.builder.tensor(f"{node.name}.signs", np.array([1.0, -1.0], np.float32))
    return carried(ctx, node, op(ctx, "mul", [pair, signs], hint=node.name))


# --- elementwise arithmetic ------------------------------------------------------------
def _operands(ctx, node, hint: str) -> tuple[str, str]:
    return pair_of(ctx, node.args[0], f"{hint}.a"), pair_of(ctx, node.args[1], f"{hint}.b")


def pair_add(ctx, node, args, kwargs):
    """add / sub (with alpha): part by part."""
    left, right = _operands(ctx, node, node.name)
    alpha = kwargs.get("alpha", 1)
    if alpha != 1:
        right = op(ctx, "mul", [right, ctx.builder.scalar(float(alpha), DType.f32)], hint=f"{node.name}.alpha")
    name = "sub" if op_key(node.target) in ("aten.sub", "aten.rsub") else "add"
    if op_key(node.target) == "aten.rsub":
        left, right = right, left
    return carried(ctx, node, op(ctx, name, [left, right], hint=node.name))


def pair_mul(ctx, node, args, kwargs):
    """(a + bi)(c + di) = (ac - bd) + (ad + bc)i."""
    (a, b), (c, d) = (parts(ctx, pair, f"{node.name}.{side}")
                      for pair, side in zip(_operands(ctx, node, node.name), ("l", "r")))
    name = node.name
    real = op(ctx, "sub", [op(ctx, "mul", [a, c], hint=f"{name}.ac"), op(ctx, "mul", [b, d], hint=f"{name}.bd")],
              hint=f"{name}.re")
    imag = op(ctx, "add", [op(ctx, "mul", [a, d], hint=f"{name}.ad"), op(ctx, "mul", [b, c], hint=f"{name}.bc")],
              hint=f"{name}.im")
    return carried(ctx, node, joined(ctx, real, imag, name))


def pair_div(ctx, node, args, kwargs):
    """(a + bi) / (c + di) = ((ac + bd) + (bc - ad)i) / (c² + d²), computed in f64 so that
    the squares neither lose precision nor overflow for float32 operands."""
    if kwargs.get("rounding_mode") is not None:
        refuse("a rounded division of complex numbers", "true division")
    name = node.name
    (a, b), (c, d) = ((op(ctx, "cast", [part], {"to": DType.f64}, hint=f"{name}.{label}.f64") for part in
                       parts(ctx, pair, f"{name}.{label}"))
                      for pair, label in zip(_operands(ctx, node, name), ("l", "r")))
    norm = op(ctx, "add", [op(ctx, "mul", [c, c], hint=f"{name}.cc"), op(ctx, "mul", [d, d], hint=f"{name}.dd")],
              hint=f"{name}.norm")
    real = op(ctx, "add", [op(ctx, "mul", [a, c], hint=f"{name}.ac"), op(ctx, "mul", [b, d], hint=f"{name}.bd")],
              hint=f"{name}.re.num")
    imag = op(ctx, "sub", [op(ctx, "mul", [b, c], hint=f"{name}.bc"), op(ctx, "mul", [a, d], hint=f"{name}.ad")],
              hint=f"{name}.im.num")
    real, imag = (op(ctx, "cast", [op(ctx, "div", [part, norm], hint=f"{name}.{label}.q")], {"to": DType.f32},
                     hint=f"{name}.{label}") for part, label in ((real, "re"), (imag, "im")))
    return carried(ctx, node, joined(ctx, real, imag, name))


def pair_neg(ctx, node, args, kwargs):
    return carried(ctx, node, op(ctx, "neg", [pair_of(ctx, node.args[0], node.name)], hint=node.name))


def pair_abs(ctx, node, args, kwargs):
    """|a + bi| = sqrt(a² + b²), in f64 (no overflow of the squares, float32's rounding once)."""
    real, imag = (op(ctx, "cast", [part], {"to": DType.f64}, hint=f"{node.name}.f64")
                  for part in parts(ctx, pair_of(ctx, node.args[0], node.name), node.name))
    square = op(ctx, "add", [op(ctx, "mul", [real, real], hint=f"{node.name}.aa"),
                             op(ctx, "mul", [imag, imag], hint=f"{node.name}.bb")], hint=f"{node.name}.norm")
    return op(ctx, "cast", [op(ctx, "sqrt", [square], hint=f"{node.name}.f64")], {"to": DType.f32}, hint=node.name)


def pair_angle(ctx, node, args, kwargs):
    """arg(a + bi) = atan2(b, a), by the route's own atan2."""
    real, imag = parts(ctx, pair_of(ctx, node.args[0], node.name), node.name)
    return torch_math.handle_atan2(ctx, node, [imag, real], {})


# --- layout ops on pairs ---------------------------------------------------------------
def pair_identity(ctx, node, args, kwargs):
    """clone, alias, contiguous, a complex64 -> complex64 copy: the pair itself; a copy of a
    complex value to a real dtype keeps its real part (as PyTorch), of a real one to a
    complex dtype adds a zero imaginary part (the pair in that dtype's `COMPONENTS`)."""
    value = node.meta["val"]
    if value.is_complex() or not is_pair(node.args[0]):
        component = COMPONENTS.get(value.dtype, DType.f32)
        pair = pair_of(ctx, node.args[0], node.name, component)
        return carried(ctx, node, operand(ctx, pair, component, f"{node.name}.pair"))
    real, _ = parts(ctx, pair_of(ctx, node.args[0], node.name), node.name)
    return operand(ctx, real, torch_dtype(value.dtype), f"{node.name}.real")


def pair_reshape(ctx, node, args, kwargs):
    """view, reshape, squeeze, unsqueeze, flatten, unflatten: the pair in the recorded shape."""
    pair = pair_of(ctx, node.args[0], node.name)
    return carried(ctx, node, reshape(ctx, pair, complex_shape(ctx, node) + (2,), node.name))


def pair_expand(ctx, node, args, kwargs):
    pair = pair_of(ctx, node.args[0], node.name)
    shape = complex_shape(ctx, node)
    pair = reshape(ctx, pair, (1,) * (len(shape) + 1 - len(shape_of(ctx, pair))) + shape_of(ctx, pair),
                   f"{node.name}.ranked")
    if shape_of(ctx, pair) == shape + (2,):
        return carried(ctx, node, pair)
    return carried(ctx, node, op(ctx, "expand", [pair], {"shape": shape + (2,)}, hint=node.name))


def pair_permute(ctx, node, args, kwargs):
    """permute / transpose: the pair dim stays last."""
    pair = pair_of(ctx, node.args[0], node.name)
    rank = len(shape_of(ctx, pair)) - 1
    if op_key(node.target) == "aten.permute":
        perm = [normalize_axis(axis, rank) for axis in args[1]]
    else:
        perm = list(range(rank))
        first, second = (normalize_axis(args[1], rank), normalize_axis(args[2], rank)) if len(args) > 2 else (0, 1)
        perm[first], perm[second] = perm[second], perm[first]
    if perm == list(range(rank)):
        return carried(ctx, node, pair)
    return carried(ctx, node, op(ctx, "transpose", [pair], {"perm": tuple(perm) + (rank,)}, hint=node.name))


def pair_slice(ctx, node, args, kwargs):
    """slice(x, dim, start, end, step) of a pair (any step, as the real slice)."""
    pair = pair_of(ctx, node.args[0], node.name)
    axis = normalize_axis(args[1] if len(args) > 1 else 0, len(shape_of(ctx, pair)) - 1)
    start = args[2] if len(args) > 2 and args[2] is not None else 0
    end = args[3] if len(args) > 3 and args[3] is not None else HUGE
    step = args[4] if len(args) > 4 else 1
    return carried(ctx, node, slice_any(ctx.builder, pair, axis, start, end, step, node.name))


def pair_select(ctx, node, args, kwargs):
    pair = pair_of(ctx, node.args[0], node.name)
    axis = normalize_axis(args[1], len(shape_of(ctx, pair)) - 1)
    index = args[2] + shape_of(ctx, pair)[axis] if args[2] < 0 else args[2]
    picked = slice_axis(ctx, pair, axis, index, 1, f"{node.name}.slice")
    return carried(ctx, node, reshape(ctx, picked, complex_shape(ctx, node) + (2,), node.name))


def pair_cat(ctx, node, args, kwargs):
    """cat of complex (or real, promoted) tensors along a dim of the complex shape."""
    rank = len(complex_shape(ctx, node))
    axis = normalize_axis(args[1] if len(args) > 1 else kwargs.get("dim", 0), rank)
    pieces = []
    for index, item in enumerate(node.args[0]):
        pieces.append(pair_of(ctx, item, f"{node.name}.{index}"))
    pieces = [piece for piece in pieces if 0 not in shape_of(ctx, piece)]
    if len(pieces) == 1:
        return carried(ctx, node, pieces[0])
    return carried(ctx, node, op(ctx, "concat", pieces, {"axis": axis}, hint=node.name))


def pair_pad(ctx, node, args, kwargs):
    """constant_pad_nd(x, pad, value) / pad(x, pad, "constant", value) of a pair: each part
    padded with its part of the value; a negative amount crops."""
    key = op_key(node.target)
    mode = "constant" if key == "aten.constant_pad_nd" else (args[2] if len(args) > 2 else kwargs.get("mode",
                                                                                                       "constant"))
    if mode != "constant":
        refuse(f"a {mode} pad of a complex tensor", "a constant pad")
    fill = args[2] if key == "aten.constant_pad_nd" and len(args) > 2 else kwargs.get("value")
    fill = complex(0 if fill is None else fill)
    pair = pair_of(ctx, node.args[0], node.name)
    amounts = list(args[1])
    rank = len(shape_of(ctx, pair)) - 1
    for index in range(len(amounts) // 2):
        before, after = amounts[2 * index], amounts[2 * index + 1]
        if before or after:
            pair = _pad_axis(ctx, pair, rank - 1 - index, before, after, fill, f"{node.name}.d{rank - 1 - index}")
    return carried(ctx, node, pair)


def _pad_axis(ctx, pair: str, axis: int, before: int, after: int, fill: complex, hint: str) -> str:
    if before < 0 or after < 0:
        dim = static_dim(shape_of(ctx, pair)[axis], "a negative pad (a crop)")
        start, stop = max(-before, 0), dim - max(-after, 0)
        pair = slice_axis(ctx, pair, axis, start, max(stop - start, 0), f"{hint}.crop")
    shape = shape_of(ctx, pair)
    pieces = [pair]
    for amount, side in ((before, 0), (after, 1)):
        if amount <= 0:
            continue
        part_type = TensorType(DType.f32, shape[:axis] + (amount,) + shape[axis + 1:-1] + (1,))
        border = op(ctx, "concat", [ctx.builder.splat(f"{hint}.fill.re", fill.real, part_type),
                                    ctx.builder.splat(f"{hint}.fill.im", fill.imag, part_type)],
                    {"axis": len(shape) - 1}, hint=f"{hint}.fill")
        pieces.insert(side * len(pieces), border)
    return pieces[0] if len(pieces) == 1 else op(ctx, "concat", pieces, {"axis": axis}, hint=hint)


# --- the table's converters, carried ---------------------------------------------------
PAIR_CONVERTERS = {
    "aten.add": pair_add, "aten.sub": pair_add, "aten.rsub": pair_add, "aten.mul": pair_mul, "aten.div": pair_div,
    "aten.neg": pair_neg, "aten.abs": pair_abs, "aten.angle": pair_angle,
    "aten.clone": pair_identity, "aten.alias": pair_identity, "aten.contiguous": pair_identity,
    "aten.detach": pair_identity, "aten.lift_fresh_copy": pair_identity, "aten._to_copy": pair_identity,
    "aten.to": pair_identity,
    "aten.view": pair_reshape, "aten.reshape": pair_reshape, "aten._unsafe_view": pair_reshape,
    "aten.squeeze": pair_reshape, "aten.unsqueeze": pair_reshape, "aten.flatten": pair_reshape,
    "aten.unflatten": pair_reshape, "aten.expand": pair_expand, "aten.permute": pair_permute,
    "aten.transpose": pair_permute, "aten.t": pair_permute, "aten.slice": pair_slice, "aten.select": pair_select,
    "aten.cat": pair_cat, "aten.concat": pair_cat, "aten.constant_pad_nd": pair_pad, "aten.pad": pair_pad,
}
"""Ops the table holds for real tensors whose complex operands this module carries."""


def carry(key: str, pair_convert) -> None:
    """Let the table's converter of `key` serve real nodes and `pair_convert` the nodes that
    make or read a complex value."""
    real_convert = CONVERTERS[key]

    def convert(ctx, node, args, kwargs):
        if reads_complex(node):
            return pair_convert(ctx, node, args, kwargs)
        return real_convert(ctx, node, args, kwargs)

    convert.__name__ = f"{real_convert.__name__}_or_{pair_convert.__name__}"
    convert.__doc__ = real_convert.__doc__
    CONVERTERS[key] = convert


def refuse_complex(key: str) -> None:
    """Let the table's converter of `key` serve real nodes only: one that reads or makes a
    complex value is refused by name (it has no pair form), rather than left to build on
    the pair as if it were a real tensor."""
    real_convert = CONVERTERS[key]

    def convert(ctx, node, args, kwargs):
        if reads_complex(node):
            refuse(f"{key} of a complex value (complex values are carried as real pairs [..., 2] and this op has "
                   "no pair form)", "the complex ops rlxir.importers.torch_complex and torch_fft carry")
        return real_convert(ctx, node, args, kwargs)

    convert.__name__ = real_convert.__name__
    convert.__doc__ = real_convert.__doc__
    CONVERTERS[key] = convert


OWN_KEYS = frozenset({"aten.complex", "aten.polar", "aten.view_as_complex", "aten.view_as_real", "aten.real",
                      "aten.imag", "aten._conj", "aten.conj_physical", "aten._conj_physical", "aten.conj"})
"""The ops this module registers itself."""

for _key in [key for key in CONVERTERS if key not in PAIR_CONVERTERS and key not in OWN_KEYS
             and key not in NEVER_FOLD]:
    refuse_complex(_key)  # the converters registered so far: elementwise, layout and reductions
for _key, _pair_convert in PAIR_CONVERTERS.items():
    carry(_key, _pair_convert)
