"""The optimizer's update as core ops: `add_optimizer_update` turns the backward graph of a
loss (`rlxir.grad`) into a whole training step that also updates the weights.

Contract of `add_optimizer_update(backward, optimizer)`:

- Before: `backward` is a graph `rlxir.grad` made: outputs ``loss, grad.<p>...``, one
  gradient per param ``p`` it differentiates, in that order.
- After: a new graph (named ``<name>.<optimizer>``) whose outputs are the loss, then the
  updated weights ``next.<p>`` (typed as ``p``, in the gradients' order), then the updated
  optimizer state ``next.<s>`` for every state param ``s`` below, in their order. The
  gradients are no longer outputs: the update reads them, as a real step does.
- The optimizer's state is new params of this graph, added after the graph's own params, in
  this order: ``opt.step`` (Adam and AdamW only: an f32 scalar, the number of steps already
  taken, read for the bias correction), then per param ``p`` in the gradients' order:
  ``opt.master.<p>`` (only for an f16/bf16 ``p``: the f32 master copy the update is applied
  to, as mixed-precision training keeps it; ``next.<p>`` is its update cast back to ``p``'s
  dtype), ``opt.momentum.<p>`` (momentum), ``opt.m.<p>`` and ``opt.v.<p>`` (Adam, AdamW).
  State is f32 (f64 beside an f64 weight), never the weight's low precision.
- The math is PyTorch's (torch.optim, no dampening, no Nesterov, no amsgrad), with
  ``g = grad.<p>`` (cast to the state's dtype) and ``w`` the weight (or its master copy):
  sgd ``w - lr (g + wd w)``; momentum ``b' = mu b + (g + wd w)``, ``w - lr b'``; adam
  ``g' = g + wd w``, ``m' = b1 m + (1 - b1) g'``, ``v' = b2 v + (1 - b2) g'^2``,
  ``t = step + 1``, ``w - lr (m' / (1 - b1^t)) / (sqrt(v' / (1 - b2^t)) + eps)``; adamw as
  adam on ``g`` with the decay applied to the weight, ``w (1 - lr wd) - lr ...``.

The state params carry ``fill_sign = "positive"`` where the math needs it (``opt.v``,
``opt.step``), so a run without given state fills them with values the update can use.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from rlxir.dtypes import DType
from rlxir.errors import RlxError
from rlxir.ir.graph import Graph
from rlxir.types import TensorType

OPTIMIZERS = ("sgd", "momentum", "adam", "adamw")
"""The optimizers whose update a training step can hold; `none` keeps the gradients as outputs."""

DEFAULT_OPTIMIZER = "adamw"

DEFAULT_WEIGHT_DECAY = {"sgd": 0.0, "momentum": 0.0, "adam": 0.0, "adamw": 0.01}
"""PyTorch's defaults: no decay, except AdamW's 0.01."""

LOW_PRECISION = (DType.f16, DType.bf16)
STATE_PREFIX = "opt."
UPDATED_PREFIX = "next."
GRADIENT_PREFIX = "grad."


@attrs.frozen
class Optimizer:
    """An optimizer and its hyper-parameters (PyTorch's names and defaults; `weight_decay`
    None means the optimizer's own default, `DEFAULT_WEIGHT_DECAY`)."""

    kind: str = DEFAULT_OPTIMIZER
    lr: float = 1e-3
    momentum: float = 0.9
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float | None = None

    def __attrs_post_init__(self) -> None:
        if self.kind not in OPTIMIZERS:
            raise RlxError(f"unknown optimizer {self.kind!r}", expected="one of: " + ", ".join(OPTIMIZERS))
        for name in ("lr", "eps"):
            if not getattr(self, name) > 0:
                raise RlxError(f"optimizer {name} {getattr(self, name)} is not positive", expected="a number > 0")
        for name in ("momentum", "beta1", "beta2"):
            if not 0 <= getattr(self, name) < 1:
                raise RlxError(f"optimizer {name} {getattr(self, name)} is outside [0, 1)",
                               expected="a number in [0, 1)")
        if self.weight_decay is not None and not self.weight_decay >= 0:
            raise RlxError(f"optimizer weight decay {self.weight_decay} is negative", expected="a number >= 0")

    @property
    def decay(self) -> float:
        """The weight decay in effect (the given one, or the optimizer's default)."""
        return DEFAULT_WEIGHT_DECAY[self.kind] if self.weight_decay is None else self.weight_decay

    @property
    def uses_step(self) -> bool:
        return self.kind in ("adam", "adamw")

    def state_kinds(self) -> tuple[str, ...]:
        """The per-param state an update keeps, in the order its params are added."""
        return {"sgd": (), "momentum": ("momentum",), "adam": ("m", "v"), "adamw": ("m", "v")}[self.kind]

    def to_json(self) -> dict:
        data = {"optimizer": self.kind, "lr": self.lr, "weight_decay": self.decay}
        if self.kind == "momentum":
            data["momentum"] = self.momentum
        if self.uses_step:
            data.update(beta1=self.beta1, beta2=self.beta2, eps=self.eps)
        return data

    def describe(self) -> str:
        """One line for a report: the optimizer and its hyper-parameters."""
        return self.kind + " (" + ", ".join(f"{key} {value:g}" for key, value in self.to_json().items()
                                           if key != "optimizer") + ")"


def optimizer_from(kind: str | Optimizer | None, options: Mapping[str, float | None] | None = None) -> Optimizer | None:
    """An `Optimizer` from a name and hyper-parameter options (None values are defaults);
    None or "none" means no optimizer (the step ends at the gradients)."""
    if isinstance(kind, Optimizer):
        return kind
    given = {key: value for key, value in (options or {}).items() if value is not None}
    if kind is None or kind == "none":
        if given:
            raise RlxError(f"optimizer options {', '.join(sorted(given))} given without an optimizer",
                           expected="--optimizer " + "|".join(OPTIMIZERS))
        return None
    unknown = sorted(set(given) - {field.name for field in attrs.fields(Optimizer)} - {"kind"})
    if unknown:
        raise RlxError(f"unknown optimizer option {unknown[0]!r}",
                       expected="lr, momentum, beta1, beta2, eps or weight_decay")
    return Optimizer(kind, **{key: float(value) for key, value in given.items()})


def state_dtype(weight: DType) -> DType:
    """The dtype an update computes in and keeps its state in: f64 beside f64, else f32."""
    return DType.f64 if weight is DType.f64 else DType.f32


def add_optimizer_update(backward: Graph, optimizer: Optimizer) -> Graph:
    """The training step: `backward` followed by `optimizer`'s update (module docstring)."""
    weights = _differentiated_params(backward)
    _check_free_names(backward)
    step = backward.copy()
    step.name = f"{backward.name}.{optimizer.kind}"
    builder = _UpdateBuilder(step, optimizer)
    if optimizer.uses_step:
        builder.step_count(DType.f32)
    updated = [builder.update(weight) for weight in weights]
    state = [name for name in step.params() if name not in backward]
    step.set_outputs([backward.outputs[0], *updated, *(UPDATED_PREFIX + name for name in state)])
    return step


def _differentiated_params(backward: Graph) -> list[str]:
    """The params `backward`'s gradient outputs belong to, in output order."""
    if len(backward.outputs) < 2:
        raise RlxError(f"graph {backward.name} has no gradient outputs for an optimizer to apply",
                       backward.output_loc, "outputs loss, grad.<param>... as rlxir.grad makes them")
    weights = []
    for output in backward.outputs[1:]:
        name = output.removeprefix(GRADIENT_PREFIX)
        if not output.startswith(GRADIENT_PREFIX) or name not in backward or backward.kind(name) != "param":
            raise RlxError(f"output %{output} of {backward.name} is not the gradient of a param",
                           backward.output_loc, "outputs loss, grad.<param>... as rlxir.grad makes them")
        weights.append(name)
    return weights


def _check_free_names(backward: Graph) -> None:
    """The step names its state ``opt.*`` and its updates ``next.*``: a graph's own value
    with such a name would be taken for one of them."""
    for name in backward:
        if name.startswith((STATE_PREFIX, UPDATED_PREFIX)):
            raise RlxError(f"%{name} has a name the optimizer's update keeps for its state and updated values",
                           backward.location(name), "a name that does not start with opt. or next.")


class _UpdateBuilder:
    """Appends one optimizer's update nodes, and its state params, to a training graph."""

    def __init__(self, graph: Graph, optimizer: Optimizer):
        self.graph = graph
        self.optimizer = optimizer
        self.constants: dict = {}
        self.first_op = next((name for name in graph.schedule() if graph.kind(name) not in ("input", "param")), None)
        self.corrections: dict = {}
        self.step: str | None = None

    # --- helpers ----------------------------------------------------------------------
    def state_param(self, name: str, type_: TensorType, positive: bool = False) -> str:
        """A new param of optimizer state, placed before the first op (after the others)."""
        attrs_ = {"fill_sign": "positive"} if positive else {}
        return self.graph.add_param(name, type_, attrs=attrs_, before=self.first_op)

    def scalar(self, value: float, dtype: DType) -> str:
        key = (float(value).hex(), dtype)
        if key not in self.constants:
            self.constants[key] = self.graph.add_const(self.graph.fresh_name("opt.const"), TensorType(dtype, ()),
                                                       float(value))
        return self.constants[key]

    def op(self, op: str, *operands: str, name: str | None = None, **attributes: object) -> str:
        return self.graph.add_op(op, operands, attributes, name=name or self.graph.fresh_name("opt.update"))

    def output(self, state: str, value: str) -> str:
        """Name `value` ``next.<state>``: the updated state, an output of the step."""
        name = UPDATED_PREFIX + state
        self.rename(value, name)
        return name

    def rename(self, value: str, name: str) -> None:
        """Call `value`, made by this builder, `name`. No lowered view can name a value
        made here, so no scan of the graph's views follows (one per rename made the
        update quadratic in the number of params)."""
        self.graph.rename(value, name, views=False)

    def step_count(self, dtype: DType) -> str:
        """``t = opt.step + 1`` (made once), and ``next.opt.step`` = t."""
        if self.step is None:
            count = self.state_param(STATE_PREFIX + "step", TensorType(DType.f32, ()), positive=True)
            self.step = self.output(count, self.op("add", count, self.scalar(1.0, DType.f32)))
        return self.step if dtype is DType.f32 else self.op("cast", self.step, to=dtype)

    def correction(self, beta: float, dtype: DType) -> str:
        """``1 - beta^t``, Adam's bias correction at this step (made once per beta and dtype)."""
        key = (beta, dtype)
        if key not in self.corrections:
            power = self.op("pow", self.scalar(beta, dtype), self.step_count(dtype))
            self.corrections[key] = self.op("sub", self.scalar(1.0, dtype), power)
        return self.corrections[key]

    # --- one param ----------------------------------------------------------------------
    def update(self, weight: str) -> str:
        """Append `weight`'s update; returns ``next.<weight>``."""
        graph, optimizer = self.graph, self.optimizer
        weight_type = graph.type(weight)
        dtype = state_dtype(weight_type.dtype)
        state_type = weight_type.with_dtype(dtype)
        current = weight
        if weight_type.dtype in LOW_PRECISION:
            current = self.state_param(f"{STATE_PREFIX}master.{weight}", state_type)
        gradient = GRADIENT_PREFIX + weight
        if graph.type(gradient).dtype is not dtype:
            gradient = self.op("cast", gradient, to=dtype)
        rule = {"sgd": self.sgd, "momentum": self.momentum, "adam": self.adam, "adamw": self.adam}[optimizer.kind]
        new = rule(weight, current, gradient, state_type)
        if current != weight:
            self.output(current, new)
            new = self.op("cast", UPDATED_PREFIX + current, to=weight_type.dtype)
        name = UPDATED_PREFIX + weight
        self.rename(new, name)
        return name

    def decayed(self, current: str, gradient: str, dtype: DType) -> str:
        """``g + wd w`` (the coupled weight decay of SGD, momentum and Adam)."""
        if not self.optimizer.decay:
            return gradient
        return self.op("add", gradient, self.op("mul", self.scalar(self.optimizer.decay, dtype), current))

    def descend(self, current: str, direction: str, dtype: DType) -> str:
        return self.op("sub", current, self.op("mul", self.scalar(self.optimizer.lr, dtype), direction))

    def sgd(self, weight: str, current: str, gradient: str, state_type: TensorType) -> str:
        dtype = state_type.dtype
        return self.descend(current, self.decayed(current, gradient, dtype), dtype)

    def momentum(self, weight: str, current: str, gradient: str, state_type: TensorType) -> str:
        dtype = state_type.dtype
        buffer = self.state_param(f"{STATE_PREFIX}momentum.{weight}", state_type)
        kept = self.op("mul", self.scalar(self.optimizer.momentum, dtype), buffer)
        new_buffer = self.output(buffer, self.op("add", kept, self.decayed(current, gradient, dtype)))
        return self.descend(current, new_buffer, dtype)

    def adam(self, weight: str, current: str, gradient: str, state_type: TensorType) -> str:
        optimizer, dtype = self.optimizer, state_type.dtype
        first = self.state_param(f"{STATE_PREFIX}m.{weight}", state_type)
        second = self.state_param(f"{STATE_PREFIX}v.{weight}", state_type, positive=True)
        if optimizer.kind == "adam":
            gradient = self.decayed(current, gradient, dtype)
        new_first = self.output(first, self.moving_average(first, gradient, optimizer.beta1, dtype))
        squared = self.op("mul", gradient, gradient)
        new_second = self.output(second, self.moving_average(second, squared, optimizer.beta2, dtype))
        first_hat = self.op("div", new_first, self.correction(optimizer.beta1, dtype))
        second_hat = self.op("div", new_second, self.correction(optimizer.beta2, dtype))
        denominator = self.op("add", self.op("sqrt", second_hat), self.scalar(optimizer.eps, dtype))
        direction = self.op("div", first_hat, denominator)
        if optimizer.kind == "adamw" and optimizer.decay:
            current = self.op("mul", current, self.scalar(1.0 - optimizer.lr * optimizer.decay, dtype))
        return self.descend(current, direction, dtype)

    def moving_average(self, state: str, value: str, beta: float, dtype: DType) -> str:
        """``beta s + (1 - beta) value``."""
        kept = self.op("mul", self.scalar(beta, dtype), state)
        return self.op("add", kept, self.op("mul", self.scalar(1.0 - beta, dtype), value))
