"""ONNX RNN, GRU and LSTM, unrolled over a static sequence length into matmuls, slices and
elementwise ops.

For each direction the input projection of every step is one matmul (``X W^T + Wb``, of shape
``[T, N, gates * H]``); each step then slices its row, adds the recurrent projection
``H_{t-1} R^T`` and applies the cell's equations (ONNX's operator specs) gate by gate. The
reverse direction walks the steps from the last to the first and writes each hidden state at
its own time position. Every attribute is honoured:

- ``direction`` forward / reverse / bidirectional; ``layout`` 0 (``[T, N, I]``) and 1
  (``[N, T, I]``, with ``initial_h``/``initial_c`` and the outputs batch-major too);
- ``activations`` (per direction: RNN's f, GRU's f g, LSTM's f g h) with
  ``activation_alpha``/``activation_beta`` consumed in order by the functions that take
  them (each function's own default where the list runs out);
- ``clip`` bounds every gate's input to the activation; LSTM's ``input_forget`` couples the
  forget gate to ``1 - i``, and its peepholes ``P`` join the i, f and o gates; GRU's
  ``linear_before_reset`` applies the reset gate after the recurrent projection;
- the outputs Y, Y_h (and LSTM's Y_c) are built only where read.

- ``sequence_lens`` (static or computed at run time): a step past an entry's length keeps
  that entry's states and outputs zero (a static one of full lengths masks nothing).

Refused, naming what: a sequence length that is not static (the IR has no loop: the
recurrence is unrolled), an activation outside ONNX's list, an attribute the operator does
not define.
"""

from __future__ import annotations

import numpy as np

from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_context import concrete
from rlxir.importers.onnx_ops import hint, operand, optional_input, unused
from rlxir.importers.onnx_registry import register
from rlxir.types import TensorType

CELLS = {"RNN": (1, ("Tanh",)), "GRU": (3, ("Sigmoid", "Tanh")), "LSTM": (4, ("Sigmoid", "Tanh", "Tanh"))}
"""Op type -> (gates, default activations of one direction)."""

_COMMON_ATTRIBUTES = {"activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size",
                      "layout", "output_sequence"}
_OWN_ATTRIBUTES = {"RNN": set(), "GRU": {"linear_before_reset"}, "LSTM": {"input_forget"}}

ACTIVATION_DEFAULTS = {
    "relu": (None, None), "tanh": (None, None), "sigmoid": (None, None), "softsign": (None, None),
    "softplus": (None, None), "affine": (1.0, 0.0), "leakyrelu": (0.01, None), "thresholdedrelu": (1.0, None),
    "scaledtanh": (1.0, 1.0), "hardsigmoid": (0.2, 0.5), "elu": (1.0, None),
}
"""Activation (lower case) -> (default alpha, default beta); None: the function takes none."""


def convert_recurrent(ctx, node, attrs):
    """RNN / GRU / LSTM -> [Y, Y_h] (and Y_c for LSTM), each None where nobody reads it."""
    gates, defaults = CELLS[node.op_type]
    _refuse_unknown_attributes(node, attrs)
    directions = _directions(attrs.get("direction", "forward"))
    layout = int(attrs.get("layout", 0))
    if layout not in (0, 1):
        raise UnsupportedModel(f"layout {layout}", expected="layout 0 ([T, N, I]) or 1 ([N, T, I])")
    x = ctx.value(node.input[0])
    dtype = ctx.builder.type(x).dtype
    if not dtype.is_float:
        raise UnsupportedModel(f"an input X of {dtype.value}", expected="a float X")
    if ctx.builder.type(x).rank != 3:
        raise UnsupportedModel(f"an input X of rank {ctx.builder.type(x).rank}", expected="rank 3")
    if layout == 1:
        x = ctx.builder.op("transpose", [x], {"perm": (1, 0, 2)}, hint=f"{hint(node)}.x_tni")
    steps, batch, _ = ctx.builder.type(x).shape
    if not isinstance(steps, int) or steps < 1:
        raise UnsupportedModel(f"a sequence length of {steps}", expected="a static sequence length of at least 1 "
                               "(the IR has no loop: the recurrence is unrolled; import with --batch-size N when the "
                               "sequence axis is the leading one)")
    hidden = _hidden_size(ctx, node, attrs)
    functions = _activations(attrs, defaults, len(directions))
    cell = Cell(ctx, node, dtype, gates, hidden, batch, attrs, _sequence_lengths(ctx, node, steps))
    per_direction = [cell.run(x, index, reverse, functions[index], layout)
                     for index, reverse in enumerate(directions)]
    return _outputs(ctx, node, per_direction, layout, steps, batch, hidden)


def _refuse_unknown_attributes(node, attrs) -> None:
    unknown = sorted(set(attrs) - _COMMON_ATTRIBUTES - _OWN_ATTRIBUTES[node.op_type])
    if unknown:
        raise UnsupportedModel(f"{node.op_type} attribute(s) {', '.join(unknown)}, which the operator does not define",
                               expected=", ".join(sorted(_COMMON_ATTRIBUTES | _OWN_ATTRIBUTES[node.op_type])))


def _directions(direction: str) -> list[bool]:
    """One entry per direction: whether it runs in reverse."""
    table = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}
    if direction not in table:
        raise UnsupportedModel(f"direction {direction!r}", expected="forward, reverse or bidirectional")
    return table[direction]


def _sequence_lengths(ctx, node, steps: int) -> str | None:
    """`sequence_lens` as an rlx value, or None when it is left out or static with every
    entry the full length (nothing to mask)."""
    name = optional_input(node, 4)
    if name is None:
        return None
    if ctx.is_static(name):
        lengths = np.asarray(concrete(ctx.static(name), "sequence_lens")).reshape(-1)
        if np.all(lengths == steps):
            return None
    lengths = ctx.value(name)
    if not ctx.builder.type(lengths).dtype.is_integer or ctx.builder.type(lengths).rank != 1:
        raise UnsupportedModel(f"sequence_lens of type {ctx.builder.type(lengths)}", expected="a 1-D integer tensor")
    return lengths


def _hidden_size(ctx, node, attrs) -> int:
    from_r = ctx.shape(node.input[2])[-1]
    hidden = attrs.get("hidden_size", from_r)
    if not isinstance(hidden, int) or (isinstance(from_r, int) and from_r != hidden):
        raise UnsupportedModel(f"hidden_size {hidden} against R of shape {list(ctx.shape(node.input[2]))}",
                               expected="a static hidden_size equal to R's last dim")
    return hidden


def _activations(attrs, defaults: tuple, directions: int) -> list[list[tuple]]:
    """Per direction, its (name, alpha, beta) for each of the cell's functions."""
    names = [_text(name).lower() for name in attrs.get("activations", list(defaults) * directions)]
    if len(names) != len(defaults) * directions:
        raise UnsupportedModel(f"{len(names)} activations for {directions} direction(s)",
                               expected=f"{len(defaults)} per direction ({', '.join(defaults)})")
    alphas, betas = list(attrs.get("activation_alpha", [])), list(attrs.get("activation_beta", []))
    resolved = []
    for name in names:
        if name not in ACTIVATION_DEFAULTS:
            raise UnsupportedModel(f"activation {name!r}", expected=", ".join(sorted(ACTIVATION_DEFAULTS)))
        alpha, beta = ACTIVATION_DEFAULTS[name]
        if alpha is not None and alphas:
            alpha = alphas.pop(0)
        if beta is not None and betas:
            beta = betas.pop(0)
        resolved.append((name, alpha, beta))
    if alphas or betas:
        raise UnsupportedModel(f"{len(alphas)} activation_alpha and {len(betas)} activation_beta value(s) that no "
                               f"activation of {', '.join(names)} takes", expected="one per function that takes it")
    count = len(defaults)
    return [resolved[index * count:(index + 1) * count] for index in range(directions)]


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def activation(builder, function: tuple, x: str, name: str) -> str:
    """`function` = (name, alpha, beta) applied to `x` with core ops."""
    kind, alpha, beta = function
    dtype = builder.type(x).dtype

    def scalar(value):
        return builder.scalar(value, dtype)

    if kind in ("relu", "tanh", "sigmoid"):
        return builder.op(kind, [x], hint=name)
    if kind == "affine":
        scaled = builder.op("mul", [x, scalar(alpha)], hint=f"{name}.scaled")
        return builder.op("add", [scaled, scalar(beta)], hint=name)
    if kind in ("leakyrelu", "elu"):
        negative = x if kind == "leakyrelu" else builder.op(
            "sub", [builder.op("exp", [x], hint=f"{name}.exp"), scalar(1)], hint=f"{name}.expm1")
        scaled = builder.op("mul", [negative, scalar(alpha)], hint=f"{name}.scaled")
        positive = builder.op("ge", [x, scalar(0)], hint=f"{name}.positive")
        return builder.op("where", [positive, x, scaled], hint=name)
    if kind == "thresholdedrelu":
        above = builder.op("gt", [x, scalar(alpha)], hint=f"{name}.above")
        return builder.op("where", [above, x, scalar(0)], hint=name)
    if kind == "scaledtanh":
        inner = builder.op("tanh", [builder.op("mul", [x, scalar(beta)], hint=f"{name}.in")], hint=f"{name}.tanh")
        return builder.op("mul", [inner, scalar(alpha)], hint=name)
    if kind == "hardsigmoid":
        line = builder.op("add", [builder.op("mul", [x, scalar(alpha)], hint=f"{name}.scaled"), scalar(beta)],
                          hint=f"{name}.shifted")
        return builder.op("minimum", [builder.op("maximum", [line, scalar(0)], hint=f"{name}.low"), scalar(1)],
                          hint=name)
    if kind == "softsign":
        denominator = builder.op("add", [builder.op("abs", [x], hint=f"{name}.abs"), scalar(1)], hint=f"{name}.den")
        return builder.op("div", [x, denominator], hint=name)
    # softplus
    return builder.op("log", [builder.op("add", [builder.op("exp", [x], hint=f"{name}.exp"), scalar(1)],
                                         hint=f"{name}.plus1")], hint=name)


class Cell:
    """The weights and equations of one RNN/GRU/LSTM node, unrolled one direction at a time."""

    def __init__(self, ctx, node, dtype, gates: int, hidden: int, batch, attrs, lengths: str | None):
        self.ctx, self.node, self.dtype, self.gates, self.hidden, self.batch = ctx, node, dtype, gates, hidden, batch
        self.builder = ctx.builder
        self.kind = node.op_type
        self.clip = attrs.get("clip")
        self.input_forget = bool(attrs.get("input_forget", 0))
        self.linear_before_reset = bool(attrs.get("linear_before_reset", 0))
        self.lengths = lengths  # sequence_lens to mask with, or None
        self.name = next((output for output in node.output if output), node.op_type.lower())

    # --- weights ------------------------------------------------------------------------
    def _direction_slice(self, index: int, position: int, layout: int, what: str) -> str | None:
        """Input `position`'s entry for direction `index` (its leading axis dropped; for
        initial states in layout 1, the direction axis is the second), or None if absent."""
        name = optional_input(self.node, position)
        if name is None:
            return None
        value = operand(self.ctx, name, self.dtype)
        shape = self.builder.type(value).shape
        axis = 1 if layout == 1 and position in (5, 6) else 0
        part = self.builder.op("slice", [value], {"axis": axis, "start": index, "len": 1},
                               hint=f"{self.name}.{what}{index}.part")
        kept = [dim for position_, dim in enumerate(shape) if position_ != axis]
        return self.builder.op("reshape", [part], {"shape": tuple(kept)}, hint=f"{self.name}.{what}{index}")

    def _columns(self, value: str, axis: int, start: int, length: int, what: str) -> str:
        return self.builder.op("slice", [value], {"axis": axis, "start": start, "len": length}, hint=what)

    # --- one direction ------------------------------------------------------------------
    def run(self, x: str, index: int, reverse: bool, functions: list, layout: int) -> tuple[list, str, str | None]:
        """(the hidden state at each time position, the last hidden state, the last cell
        state or None) of direction `index`."""
        builder, width = self.builder, self.gates * self.hidden
        w = self._direction_slice(index, 1, layout, "w")
        r = self._direction_slice(index, 2, layout, "r")
        bias = self._direction_slice(index, 3, layout, "b")
        projected = builder.op("matmul", [x, w], {"transpose_b": True}, hint=f"{self.name}.xw{index}")
        recurrent_bias = None
        if bias is not None:
            input_bias = self._columns(bias, 0, 0, width, f"{self.name}.wb{index}")
            recurrent_bias = self._columns(bias, 0, width, width, f"{self.name}.rb{index}")
            if self.kind != "GRU":  # GRU's h gate needs the recurrent bias on its own
                input_bias = builder.op("add", [input_bias, recurrent_bias], hint=f"{self.name}.bias{index}")
                recurrent_bias = None
            projected = builder.op("add", [projected, input_bias], hint=f"{self.name}.xwb{index}")
        state = self._initial(index, 5, layout, "h")
        cell_state = self._initial(index, 6, layout, "c") if self.kind == "LSTM" else None
        peepholes = self._direction_slice(index, 7, layout, "p") if self.kind == "LSTM" else None
        steps = builder.type(projected).shape[0]
        order = range(steps - 1, -1, -1) if reverse else range(steps)
        states = [None] * steps
        for step in order:
            row = builder.op("slice", [projected], {"axis": 0, "start": step, "len": 1},
                             hint=f"{self.name}.d{index}t{step}.xw")
            row = builder.op("reshape", [row], {"shape": (self.batch, width)}, hint=f"{self.name}.d{index}t{step}.x")
            label = f"{self.name}.d{index}t{step}"
            if self.kind == "RNN":
                new_state, new_cell = self._rnn_step(row, state, r, functions, label), None
            elif self.kind == "GRU":
                new_state, new_cell = self._gru_step(row, state, r, recurrent_bias, functions, label), None
            else:
                new_state, new_cell = self._lstm_step(row, state, cell_state, r, peepholes, functions, label)
            if self.lengths is None:
                state, cell_state, states[step] = new_state, new_cell, new_state
                continue
            state, cell_state, states[step] = self._masked(step, label, new_state, state, new_cell, cell_state)
        return states, state, cell_state

    def _masked(self, step: int, label: str, new_state: str, state: str, new_cell, cell_state) -> tuple:
        """Where step `step` is past an entry's sequence length, the states stay as they were
        and the step's output is zero (so the reverse direction starts at each entry's own
        last step)."""
        builder = self.builder
        dtype = builder.type(self.lengths).dtype
        inside = builder.op("lt", [builder.scalar(step, dtype), self.lengths], hint=f"{label}.inside")
        inside = builder.op("reshape", [inside], {"shape": (self.batch, 1)}, hint=f"{label}.mask")
        kept_state = builder.op("where", [inside, new_state, state], hint=f"{label}.hkept")
        output = builder.op("where", [inside, new_state, builder.scalar(0, self.dtype)], hint=f"{label}.y")
        kept_cell = None if new_cell is None else builder.op("where", [inside, new_cell, cell_state],
                                                             hint=f"{label}.ckept")
        return kept_state, kept_cell, output

    def _initial(self, index: int, position: int, layout: int, what: str) -> str:
        given = self._direction_slice(index, position, layout, f"{what}0_")
        if given is not None:
            return given
        return self.builder.splat(f"{self.name}.{what}0_{index}", 0, TensorType(self.dtype, (self.batch, self.hidden)))

    # --- cell equations -----------------------------------------------------------------
    def _gate(self, pre: str, function: tuple, label: str) -> str:
        if self.clip is not None:
            limit = float(self.clip)
            pre = self.builder.op("minimum", [pre, self.builder.scalar(limit, self.dtype)], hint=f"{label}.cliphi")
            pre = self.builder.op("maximum", [pre, self.builder.scalar(-limit, self.dtype)], hint=f"{label}.clip")
        return activation(self.builder, function, pre, label)

    def _recurrent(self, state: str, r: str, label: str) -> str:
        return self.builder.op("matmul", [state, r], {"transpose_b": True}, hint=f"{label}.hr")

    def _part(self, value: str, gate: int, label: str) -> str:
        return self._columns(value, 1, gate * self.hidden, self.hidden, label)

    def _rnn_step(self, row, state, r, functions, label):
        pre = self.builder.op("add", [row, self._recurrent(state, r, label)], hint=f"{label}.pre")
        return self._gate(pre, functions[0], f"{label}.h")

    def _gru_step(self, row, state, r, recurrent_bias, functions, label):
        """z, r, h gates (ONNX order); Ht = (1 - z) h + z H(t-1)."""
        builder, hidden = self.builder, self.hidden
        gates_r = self._columns(r, 0, 0, 2 * hidden, f"{label}.rzr") if not self.linear_before_reset else r
        recurrent = self._recurrent(state, gates_r, label)
        if recurrent_bias is not None:
            bias = recurrent_bias if self.linear_before_reset else self._columns(recurrent_bias, 0, 0, 2 * hidden,
                                                                                f"{label}.rbzr")
            recurrent = builder.op("add", [recurrent, bias], hint=f"{label}.hrb")
        update = self._gate(builder.op("add", [self._part(row, 0, f"{label}.xz"), self._part(recurrent, 0, f"{label}.hz")],
                                       hint=f"{label}.zpre"), functions[0], f"{label}.z")
        reset = self._gate(builder.op("add", [self._part(row, 1, f"{label}.xr"), self._part(recurrent, 1, f"{label}.hr_")],
                                      hint=f"{label}.rpre"), functions[0], f"{label}.r")
        if self.linear_before_reset:
            candidate_in = builder.op("mul", [reset, self._part(recurrent, 2, f"{label}.hh")], hint=f"{label}.rhh")
        else:
            reset_state = builder.op("mul", [reset, state], hint=f"{label}.rh")
            rh = self._columns(r, 0, 2 * hidden, hidden, f"{label}.rh_w")
            candidate_in = builder.op("matmul", [reset_state, rh], {"transpose_b": True}, hint=f"{label}.rhh")
            if recurrent_bias is not None:
                rbh = self._columns(recurrent_bias, 0, 2 * hidden, hidden, f"{label}.rbh")
                candidate_in = builder.op("add", [candidate_in, rbh], hint=f"{label}.rhhb")
        pre = builder.op("add", [self._part(row, 2, f"{label}.xh"), candidate_in], hint=f"{label}.hpre")
        candidate = self._gate(pre, functions[1], f"{label}.hcand")
        # (1 - z) h + z H = h + z (H - h)
        moved = builder.op("mul", [update, builder.op("sub", [state, candidate], hint=f"{label}.diff")],
                           hint=f"{label}.zdiff")
        return builder.op("add", [candidate, moved], hint=f"{label}.h")

    def _lstm_step(self, row, state, cell_state, r, peepholes, functions, label):
        """i, o, f, c gates (ONNX order), peepholes i, o, f; Ct = f C(t-1) + i c, Ht = o h(Ct)."""
        builder = self.builder
        pre = builder.op("add", [row, self._recurrent(state, r, label)], hint=f"{label}.pre")

        def peep(gate_pre, which, cell, name):
            if peepholes is None:
                return gate_pre
            weight = self._columns(peepholes, 0, which * self.hidden, self.hidden, f"{name}.pw")
            term = builder.op("mul", [weight, cell], hint=f"{name}.peep")
            return builder.op("add", [gate_pre, term], hint=f"{name}.prep")

        f_act, g_act, h_act = functions
        input_gate = self._gate(peep(self._part(pre, 0, f"{label}.ipre"), 0, cell_state, f"{label}.i"), f_act,
                                f"{label}.i")
        if self.input_forget:
            forget = builder.op("sub", [builder.scalar(1, self.dtype), input_gate], hint=f"{label}.f")
        else:
            forget = self._gate(peep(self._part(pre, 2, f"{label}.fpre"), 2, cell_state, f"{label}.f"), f_act,
                                f"{label}.f")
        candidate = self._gate(self._part(pre, 3, f"{label}.cpre"), g_act, f"{label}.cand")
        kept = builder.op("mul", [forget, cell_state], hint=f"{label}.keep")
        added = builder.op("mul", [input_gate, candidate], hint=f"{label}.add")
        new_cell = builder.op("add", [kept, added], hint=f"{label}.c")
        output_gate = self._gate(peep(self._part(pre, 1, f"{label}.opre"), 1, new_cell, f"{label}.o"), f_act,
                                 f"{label}.o")
        shown = activation(builder, h_act, new_cell, f"{label}.hc")
        return builder.op("mul", [output_gate, shown], hint=f"{label}.h"), new_cell


def _outputs(ctx, node, per_direction, layout: int, steps: int, batch, hidden: int) -> list:
    """[Y, Y_h, Y_c] in the node's layout, each built only where read."""
    builder, name = ctx.builder, hint(node)
    results = []
    if not unused(ctx, node, 0):
        sequences = []
        for index, (states, _, _) in enumerate(per_direction):
            rows = [builder.op("reshape", [state], {"shape": (1, 1, batch, hidden)}, hint=f"{name}.y{index}t{step}")
                    for step, state in enumerate(states)]
            sequences.append(rows[0] if len(rows) == 1 else
                             builder.op("concat", rows, {"axis": 0}, hint=f"{name}.y{index}"))
        y = sequences[0] if len(sequences) == 1 else builder.op("concat", sequences, {"axis": 1}, hint=f"{name}.y")
        if layout == 1:
            y = builder.op("transpose", [y], {"perm": (2, 0, 1, 3)}, hint=hint(node, 0))
        results.append(y)
    else:
        results.append(None)
    for position, part in ((1, 1), (2, 2)):
        if position >= len(node.output) or unused(ctx, node, position) or per_direction[0][part] is None:
            results.append(None)
            continue
        finals = [builder.op("reshape", [entry[part]], {"shape": (1, batch, hidden)}, hint=f"{name}.last{position}_{i}")
                  for i, entry in enumerate(per_direction)]
        last = finals[0] if len(finals) == 1 else builder.op("concat", finals, {"axis": 0}, hint=f"{name}.last{position}")
        if layout == 1:
            last = builder.op("transpose", [last], {"perm": (1, 0, 2)}, hint=hint(node, position))
        results.append(last)
    return results


register({op: convert_recurrent for op in CELLS})
