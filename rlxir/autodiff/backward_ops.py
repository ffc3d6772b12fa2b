"""Backward ops: the gradient kernels `rlxir.grad` emits where an expansion into core ops
would be absurd (a scatter-add, a transposed convolution, a reversed time loop).

Each is registered through the public op API (`register_op`) with a shape rule, and gets
its NumPy reference (and, for `selective_scan_grad`, a decomposition) through
`rlxir.ops.attach`, as custom ops do. Each is also declared the backward kernel of its
forward op (`register_backward_kernel`): a target that claims the forward op claims its
gradient kernels, so a training graph legalizes wherever its forward graph does.

- ``gather_grad(grad, idx) {axis, shape}``: the table gradient of `gather`: a zero table
  of `shape` into which each row of `grad` is added at its index (a scatter-add).
- ``conv2d_grad_input(grad, w) {input_shape, stride, padding, dilation, groups}`` and
  ``conv2d_grad_weight(x, grad) {kernel, stride, padding, dilation, groups}``: the input
  and weight gradients of `conv2d` (bias: a plain reduce_sum).
- ``max_pool2d_grad(x, grad) {kernel, stride, padding}``: each window's gradient goes to
  the first position holding the window's maximum. ``avg_pool2d_grad(grad) {input_shape,
  kernel, stride, padding}``: each window's gradient spread over its full kernel area.
- ``selective_scan_grad(x, delta, A, Bm, C, grad) {state_size, operand}``: the gradient of
  operand `operand` (0..4: x, delta, A, Bm, C) of `selective_scan`. The kernel recomputes
  the state trajectory from its operands instead of reading a saved one, so only the
  scan's operands stay alive for the backward pass. One node per operand (the IR has one
  result per op); its decomposition unrolls the reversed time loop into primitives, for
  targets that do not claim `selective_scan`.

Every shape rule checks its operands against the forward op's own rule (the gradient has
the forward result's shape), so a malformed backward op is a located type error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rlxir.errors import RlxError
from rlxir.numpy_on_use import numpy_on_use
from rlxir.ops import AttrSpec, OpDef, ShapeError, attach, register_op
from rlxir.ops.core import conv2d_rule, gather_rule, pool_rule, selective_scan_rule
from rlxir.ops.reference import check_gather_indices
from rlxir.symbolic import floordiv, format_dim
from rlxir.targets.target import register_backward_kernel
from rlxir.types import TensorType

if TYPE_CHECKING:
    import numpy as np

    Arrays = Sequence[np.ndarray]
else:
    np = numpy_on_use(__name__)  # NumPy imported on first use (rlxir/numpy_on_use.py)

SCAN_OPERANDS = ("x", "delta", "A", "Bm", "C")


def _shape_text(shape) -> str:
    return "[" + ", ".join(format_dim(dim) for dim in shape) + "]"


def _expect_grad(grad: TensorType, forward: TensorType, operand: int, what: str) -> None:
    """The incoming gradient must have the forward result's type."""
    if grad.shape != forward.shape or grad.dtype is not forward.dtype:
        raise ShapeError(f"the gradient {grad} does not match the {what} result {forward}", operand=operand,
                         expected=str(forward))


# --- shape rules -----------------------------------------------------------------------
def gather_grad_rule(types, attrs) -> TensorType:
    grad, index = types
    table = TensorType(grad.dtype, attrs["shape"])
    _expect_grad(grad, gather_rule((table, index), attrs), 0, "gather")
    return table


def _conv_attrs(attrs) -> dict:
    return {key: attrs[key] for key in ("stride", "padding", "dilation", "groups")}


def conv2d_grad_input_rule(types, attrs) -> TensorType:
    grad, weight = types
    if len(attrs["input_shape"]) != 4:
        raise ShapeError(f"input_shape {_shape_text(attrs['input_shape'])} is not NCHW", expected="four dims")
    x = TensorType(grad.dtype, attrs["input_shape"])
    _expect_grad(grad, conv2d_rule((x, weight), _conv_attrs(attrs)), 0, "conv2d")
    return x


def conv2d_grad_weight_rule(types, attrs) -> TensorType:
    x, grad = types
    if x.rank != 4 or grad.rank != 4:
        raise ShapeError("conv2d_grad_weight takes x [N, C, H, W] and grad [N, O, OH, OW]", operand=0)
    if len(attrs["kernel"]) != 2:
        raise ShapeError(f"kernel {list(attrs['kernel'])} needs two sizes", expected="[kh, kw]")
    groups = attrs["groups"]
    if groups < 1:
        raise ShapeError(f"groups must be positive, got {groups}")
    weight = TensorType(x.dtype, (grad.shape[1], floordiv(x.shape[1], groups), *attrs["kernel"]))
    _expect_grad(grad, conv2d_rule((x, weight), _conv_attrs(attrs)), 1, "conv2d")
    return weight


def _pool_attrs(attrs) -> dict:
    return {key: attrs[key] for key in ("kernel", "stride", "padding")}


def max_pool2d_grad_rule(types, attrs) -> TensorType:
    x, grad = types
    _expect_grad(grad, pool_rule((x,), _pool_attrs(attrs)), 1, "max_pool2d")
    return x


def avg_pool2d_grad_rule(types, attrs) -> TensorType:
    (grad,) = types
    if len(attrs["input_shape"]) != 4:
        raise ShapeError(f"input_shape {_shape_text(attrs['input_shape'])} is not NCHW", expected="four dims")
    x = TensorType(grad.dtype, attrs["input_shape"])
    _expect_grad(grad, pool_rule((x,), _pool_attrs(attrs)), 0, "avg_pool2d")
    return x


def selective_scan_grad_rule(types, attrs) -> TensorType:
    forward = selective_scan_rule(types[:5], attrs)
    _expect_grad(types[5], forward, 5, "selective_scan")
    return types[attrs["operand"]]


# --- references ------------------------------------------------------------------------
def gather_grad(grad: np.ndarray, indices: np.ndarray, axis: int, shape) -> np.ndarray:
    """A zero table of `shape` with every slice of `grad` added at its index (repeats add up)."""
    axis %= len(shape)
    check_gather_indices(indices, shape[axis], "gather_grad")
    table = np.zeros(shape, grad.dtype)
    rows = grad.reshape(tuple(shape[:axis]) + (indices.size,) + tuple(shape[axis + 1:]))
    np.add.at(table, (slice(None),) * axis + (indices.reshape(-1),), rows)
    return table


def _taps(rows: int, cols: int, row: int, col: int, stride, dilation) -> tuple:
    """The index of the [rows, cols] grid of padded positions kernel tap (row, col) reads."""
    top, left = row * dilation[0], col * dilation[1]
    return (Ellipsis, slice(top, top + stride[0] * (rows - 1) + 1, stride[0]),
            slice(left, left + stride[1] * (cols - 1) + 1, stride[1]))


def _unpad(padded: np.ndarray, padding, height: int, width: int) -> np.ndarray:
    top, left = padding[0], padding[1]
    return padded[..., top:top + height, left:left + width]


def conv2d_grad_input(grad, weight, input_shape, stride, padding, dilation, groups, xp=np) -> np.ndarray:
    """The input gradient, one kernel tap at a time; `xp` is the array module (NumPy, or CuPy
    for the executor's kernel)."""
    batch, channels, height, width = input_shape
    out_channels, group_channels, kernel_h, kernel_w = weight.shape
    rows, cols = grad.shape[2:]
    padded = xp.zeros((batch, groups, group_channels, height + padding[0] + padding[2],
                       width + padding[1] + padding[3]), grad.dtype)
    grouped_grad = grad.reshape(batch, groups, out_channels // groups, rows, cols)
    grouped_w = weight.reshape(groups, out_channels // groups, group_channels, kernel_h, kernel_w)
    for row in range(kernel_h):
        for col in range(kernel_w):
            padded[_taps(rows, cols, row, col, stride, dilation)] += xp.einsum(
                "bgohw,goc->bgchw", grouped_grad, grouped_w[..., row, col])
    return _unpad(padded.reshape(batch, channels, *padded.shape[3:]), padding, height, width)


def conv2d_grad_weight(x, grad, kernel, stride, padding, dilation, groups, xp=np) -> np.ndarray:
    """The weight gradient, one kernel tap at a time; `xp` as for `conv2d_grad_input`."""
    batch, channels = x.shape[:2]
    out_channels, rows, cols = grad.shape[1:]
    top, left, bottom, right = padding
    padded = xp.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    grouped_x = padded.reshape(batch, groups, channels // groups, *padded.shape[2:])
    grouped_grad = grad.reshape(batch, groups, out_channels // groups, rows, cols)
    weight = xp.zeros((groups, out_channels // groups, channels // groups, *kernel), grad.dtype)
    for row in range(kernel[0]):
        for col in range(kernel[1]):
            taps = grouped_x[_taps(rows, cols, row, col, stride, dilation)]
            weight[..., row, col] = xp.einsum("bgchw,bgohw->goc", taps, grouped_grad)
    return weight.reshape(out_channels, channels // groups, *kernel)


def max_pool2d_grad(x, grad, kernel, stride, padding) -> np.ndarray:
    """Each window's gradient to the first tap (row-major) that holds its maximum."""
    stride = stride or kernel
    top, left, bottom, right = padding
    padded = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=-np.inf)
    rows, cols = grad.shape[2:]
    taps = [_taps(rows, cols, row, col, stride, (1, 1)) for row in range(kernel[0]) for col in range(kernel[1])]
    peak = np.max([padded[tap] for tap in taps], axis=0)
    result = np.zeros(padded.shape, grad.dtype)
    routed = np.zeros(grad.shape, bool)
    for tap in taps:
        hit = (padded[tap] == peak) & ~routed
        result[tap] += np.where(hit, grad, 0)
        routed |= hit
    return _unpad(result, padding, *x.shape[2:])


def avg_pool2d_grad(grad, input_shape, kernel, stride, padding) -> np.ndarray:
    """Each window's gradient divided by the full kernel area (padded cells included)."""
    stride = stride or kernel
    batch, channels, height, width = input_shape
    result = np.zeros((batch, channels, height + padding[0] + padding[2], width + padding[1] + padding[3]),
                      grad.dtype)
    rows, cols = grad.shape[2:]
    share = grad / grad.dtype.type(kernel[0] * kernel[1])
    for row in range(kernel[0]):
        for col in range(kernel[1]):
            result[_taps(rows, cols, row, col, stride, (1, 1))] += share
    return _unpad(result, padding, height, width)


def selective_scan_grads(x, delta, a, bm, c, grad) -> tuple[np.ndarray, ...]:
    """Gradients of `selective_scan` (rlxir.ops.reference) for x, delta, A, Bm and C.

    With ``decay_t = exp(delta_t A)`` and ``s_t = decay_t s_{t-1} + delta_t x_t Bm_t``, the
    adjoint of the state, ``lam_t = grad_t C_t + decay_{t+1} lam_{t+1}``, runs backward in
    time; every operand's gradient is read off it (and off the recomputed states).
    """
    batch, steps, hidden = x.shape
    states = np.zeros((steps + 1, batch, hidden, a.shape[1]), x.dtype)  # states[t + 1] is s_t
    decays = np.empty((steps, batch, hidden, a.shape[1]), x.dtype)
    for t in range(steps):
        step_delta = delta[:, t, :, np.newaxis]
        decays[t] = np.exp(step_delta * a)
        states[t + 1] = decays[t] * states[t] + step_delta * x[:, t, :, np.newaxis] * bm[:, t, np.newaxis, :]
    dx, ddelta, da = np.zeros_like(x), np.zeros_like(delta), np.zeros_like(a)
    dbm, dc = np.zeros_like(bm), np.zeros_like(c)
    adjoint = np.zeros_like(states[0])
    for t in reversed(range(steps)):
        step_grad, step_delta = grad[:, t, :, np.newaxis], delta[:, t, :, np.newaxis]
        step_x, step_bm = x[:, t, :, np.newaxis], bm[:, t, np.newaxis, :]
        dc[:, t, :] = np.sum(step_grad * states[t + 1], axis=1)
        adjoint = adjoint + step_grad * c[:, t, np.newaxis, :]
        through_decay = adjoint * states[t] * decays[t]
        da += np.sum(through_decay * step_delta, axis=0)
        ddelta[:, t, :] = np.sum(through_decay * a + adjoint * step_x * step_bm, axis=-1)
        dx[:, t, :] = np.sum(adjoint * step_delta * step_bm, axis=-1)
        dbm[:, t, :] = np.sum(adjoint * step_delta * step_x, axis=1)
        adjoint = adjoint * decays[t]
    return dx, ddelta, da, dbm, dc


REFERENCES = {
    "gather_grad": lambda inputs, attrs: gather_grad(inputs[0], inputs[1], attrs["axis"], tuple(attrs["shape"])),
    "conv2d_grad_input": lambda inputs, attrs: conv2d_grad_input(
        inputs[0], inputs[1], tuple(attrs["input_shape"]), attrs["stride"], attrs["padding"], attrs["dilation"],
        attrs["groups"]),
    "conv2d_grad_weight": lambda inputs, attrs: conv2d_grad_weight(
        inputs[0], inputs[1], tuple(attrs["kernel"]), attrs["stride"], attrs["padding"], attrs["dilation"],
        attrs["groups"]),
    "max_pool2d_grad": lambda inputs, attrs: max_pool2d_grad(inputs[0], inputs[1], attrs["kernel"], attrs["stride"],
                                                             attrs["padding"]),
    "avg_pool2d_grad": lambda inputs, attrs: avg_pool2d_grad(inputs[0], tuple(attrs["input_shape"]), attrs["kernel"],
                                                             attrs["stride"], attrs["padding"]),
    "selective_scan_grad": lambda inputs, attrs: selective_scan_grads(*inputs)[attrs["operand"]],
}


# --- selective_scan_grad's decomposition -----------------------------------------------
class _ScanSteps:
    """Per-step slices of the scan's operands, emitted once each, before the anchor node."""

    def __init__(self, graph, anchor: str):
        self.graph, self.anchor = graph, anchor
        self.x, self.delta, self.a, self.bm, self.c, self.grad = graph.operands(anchor)
        self.batch, self.steps, self.hidden = graph.type(self.x).shape
        self.cache: dict = {}

    def op(self, op: str, operands, **attrs) -> str:
        attrs = {key: tuple(value) if isinstance(value, list) else value for key, value in attrs.items()}
        name = self.graph.fresh_name(f"{self.anchor}.{op}")
        return self.graph.add_op(op, operands, attrs, name=name, before=self.anchor, origin=self.anchor)

    def zero(self, shape) -> str:
        dtype = self.graph.type(self.x).dtype
        name = self.graph.fresh_name(f"{self.anchor}.c")
        zero = self.graph.add_const(name, TensorType(dtype, ()), 0.0, loc=self.graph.location(self.anchor),
                                    provenance=self.graph.provenance(self.anchor), before=self.anchor)
        return self.op("expand", [zero], shape=list(shape))

    def _memo(self, key, make) -> str:
        if key not in self.cache:
            self.cache[key] = make()
        return self.cache[key]

    def column(self, value: str, t: int) -> str:
        """Step t of a [B, S, H] operand as [B, H, 1]."""
        return self._memo((value, t), lambda: self.op(
            "reshape", [self.op("slice", [value], axis=1, start=t, len=1)], shape=[self.batch, self.hidden, 1]))

    def row(self, value: str, t: int) -> str:
        """Step t of a [B, S, N] operand as [B, 1, N]."""
        return self._memo((value, t), lambda: self.op("slice", [value], axis=1, start=t, len=1))

    def decay(self, t: int) -> str:
        return self._memo(("decay", t), lambda: self.op("exp", [self.op("mul", [self.column(self.delta, t), self.a])]))

    def states(self) -> list[str]:
        """s_0 .. s_{S-1}, each [B, H, N], recomputed from the operands."""
        states: list[str] = []
        for t in range(self.steps):
            update = self.op("mul", [self.op("mul", [self.column(self.delta, t), self.column(self.x, t)]),
                                     self.row(self.bm, t)])
            states.append(update if t == 0 else self.op("add", [self.op("mul", [self.decay(t), states[-1]]), update]))
        return states

    def adjoints(self) -> list[str]:
        """lam_0 .. lam_{S-1}: the adjoint of each state, built backward in time."""
        adjoints: list[str] = [""] * self.steps
        carried = None
        for t in reversed(range(self.steps)):
            local = self.op("mul", [self.column(self.grad, t), self.row(self.c, t)])
            adjoints[t] = local if carried is None else self.op("add", [carried, local])
            carried = self.op("mul", [self.decay(t), adjoints[t]]) if t > 0 else None
        return adjoints


def _scan_dx(steps: _ScanSteps, t: int, adjoint: str, states) -> str:
    summed = steps.op("reduce_sum", [steps.op("mul", [adjoint, steps.row(steps.bm, t)])], axes=[2], keepdims=True)
    return steps.op("mul", [summed, steps.column(steps.delta, t)])


def _through_decay(steps: _ScanSteps, t: int, adjoint: str, states) -> str | None:
    """lam_t s_{t-1} decay_t: the adjoint of delta_t A (None at t = 0, where s_{-1} = 0)."""
    if t == 0:
        return None
    return steps.op("mul", [steps.op("mul", [adjoint, states[t - 1]]), steps.decay(t)])


def _scan_ddelta(steps: _ScanSteps, t: int, adjoint: str, states) -> str:
    summed = steps.op("reduce_sum", [steps.op("mul", [adjoint, steps.row(steps.bm, t)])], axes=[2], keepdims=True)
    value = steps.op("mul", [summed, steps.column(steps.x, t)])
    decayed = _through_decay(steps, t, adjoint, states)
    if decayed is None:
        return value
    from_decay = steps.op("reduce_sum", [steps.op("mul", [decayed, steps.a])], axes=[2], keepdims=True)
    return steps.op("add", [value, from_decay])


def _scan_dbm(steps: _ScanSteps, t: int, adjoint: str, states) -> str:
    scaled = steps.op("mul", [steps.column(steps.delta, t), steps.column(steps.x, t)])
    return steps.op("reduce_sum", [steps.op("mul", [adjoint, scaled])], axes=[1], keepdims=True)


def _scan_dc(steps: _ScanSteps, t: int, adjoint: str, states) -> str:
    return steps.op("reduce_sum", [steps.op("mul", [steps.column(steps.grad, t), states[t]])], axes=[1], keepdims=True)


# operand -> (per-step gradient, whether it needs the states, whether it needs the adjoints)
_SCAN_STEP_GRADS = {0: (_scan_dx, False, True), 1: (_scan_ddelta, True, True), 3: (_scan_dbm, False, True),
                    4: (_scan_dc, True, False)}


def decompose_selective_scan_grad(graph, name: str) -> str:
    """The reversed time loop unrolled into primitives (only what operand `operand` needs):
    the states recomputed forward, the adjoints backward, then per step the operand's
    gradient ([B, H, 1] or [B, 1, N] pieces concatenated along the sequence, or for A a
    running sum over the steps). Refuses a symbolic sequence length, as `selective_scan`'s
    own decomposition does."""
    steps = _ScanSteps(graph, name)
    operand = graph.attr(name, "operand")
    if not isinstance(steps.steps, int):
        raise RlxError(f"cannot unfuse %{name} = selective_scan_grad: unrolling needs its sequence length "
                       f"{format_dim(steps.steps)} bound", graph.location(name),
                       f"bind it with -D {format_dim(steps.steps)}=VALUE")
    if steps.steps == 0:
        return steps.zero(graph.type(name).shape)
    if operand == 2:
        return _scan_da(steps)
    step_grad, needs_states, needs_adjoints = _SCAN_STEP_GRADS[operand]
    states = steps.states() if needs_states else []
    adjoints = steps.adjoints() if needs_adjoints else [""] * steps.steps
    pieces = [step_grad(steps, t, adjoints[t], states) for t in range(steps.steps)]
    width = steps.hidden if operand in (0, 1) else graph.type(steps.bm).shape[2]
    if operand in (0, 1):
        pieces = [steps.op("reshape", [piece], shape=[steps.batch, 1, width]) for piece in pieces]
    return pieces[0] if len(pieces) == 1 else steps.op("concat", pieces, axis=1)


def _scan_da(steps: _ScanSteps) -> str:
    """dA = sum over steps and batch of lam_t s_{t-1} decay_t delta_t."""
    if steps.steps == 1:
        return steps.zero(steps.graph.type(steps.a).shape)
    states, adjoints = steps.states(), steps.adjoints()
    total = None
    for t in range(1, steps.steps):
        decayed = _through_decay(steps, t, adjoints[t], states)
        term = steps.op("reduce_sum", [steps.op("mul", [decayed, steps.column(steps.delta, t)])], axes=[0])
        total = term if total is None else steps.op("add", [total, term])
    return total


# --- registration ----------------------------------------------------------------------
def _conv_schema(first: str, first_spec: AttrSpec) -> dict:
    return {
        first: first_spec,
        "stride": AttrSpec("ints", (1, 1), doc="[sh, sw] of the forward conv2d"),
        "padding": AttrSpec("ints", (0, 0, 0, 0), doc="[top, left, bottom, right] of the forward conv2d"),
        "dilation": AttrSpec("ints", (1, 1), doc="[dh, dw] of the forward conv2d"),
        "groups": AttrSpec("int", 1, doc="channel groups of the forward conv2d"),
    }


def _pool_schema(extra: Mapping[str, AttrSpec]) -> dict:
    return {
        **extra,
        "kernel": AttrSpec("ints", doc="[kh, kw] of the forward pool"),
        "stride": AttrSpec("ints", (), doc="[sh, sw] of the forward pool; the kernel when absent"),
        "padding": AttrSpec("ints", (0, 0, 0, 0), doc="[top, left, bottom, right] of the forward pool"),
    }


_INPUT_SHAPE = AttrSpec("dims", doc="the forward input's shape [N, C, H, W]")
BACKWARD_OPS = (
    ("gather_grad", "gather", 2, gather_grad_rule, ("grad", "idx"),
     {"axis": AttrSpec("int", 0, doc="the gathered axis"), "shape": AttrSpec("dims", doc="the table's shape")},
     "gather's table gradient: grad's slices added into a zero table at their indices (scatter-add)"),
    ("conv2d_grad_input", "conv2d", 2, conv2d_grad_input_rule, ("grad", "w"), _conv_schema("input_shape", _INPUT_SHAPE),
     "conv2d's input gradient (a transposed convolution)"),
    ("conv2d_grad_weight", "conv2d", 2, conv2d_grad_weight_rule, ("x", "grad"),
     _conv_schema("kernel", AttrSpec("ints", doc="[kh, kw] of the forward weight")),
     "conv2d's weight gradient (a correlation of x with grad)"),
    ("max_pool2d_grad", "max_pool2d", 2, max_pool2d_grad_rule, ("x", "grad"), _pool_schema({}),
     "max_pool2d's input gradient: each window's gradient to its first maximum"),
    ("avg_pool2d_grad", "avg_pool2d", 1, avg_pool2d_grad_rule, ("grad",), _pool_schema({"input_shape": _INPUT_SHAPE}),
     "avg_pool2d's input gradient: each window's gradient spread over the kernel area"),
    ("selective_scan_grad", "selective_scan", 6, selective_scan_grad_rule, ("x", "delta", "A", "Bm", "C", "grad"),
     {"state_size": AttrSpec("int", doc="N, the state width"),
      "operand": AttrSpec("int", choices=(0, 1, 2, 3, 4), doc="whose gradient: 0 x, 1 delta, 2 A, 3 Bm, 4 C")},
     "the gradient of one operand of selective_scan (recomputes the state trajectory)"),
)

for _name, _forward, _arity, _rule, _operands, _schema, _doc in BACKWARD_OPS:
    register_op(OpDef(_name, _arity, _arity, _rule, _schema, frozenset({"backward"}), _operands, _doc))
    attach(_name, reference=REFERENCES[_name])
    register_backward_kernel(_name, _forward)
attach("selective_scan_grad", decompose=decompose_selective_scan_grad)
del _name, _forward, _arity, _rule, _operands, _schema, _doc
