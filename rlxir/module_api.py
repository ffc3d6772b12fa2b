"""A PyTorch `nn.Module` in one call: `fit_module` and `compile_module`.

Both import the module with `rlxir.importers.torch.import_torch` on the example inputs,
with axis 0 of every tensor input symbolic as ``B`` (the batch `fit_module` searches), and
then do exactly what the CLI does with the imported graph, returning the objects its
reports are made from:

- `compile_module(...)` is ``rlxir compile``: a `CompileResult`, or with ``training=True``
  ``rlxir compile --training``: a `TrainingResult` (its `summary()` is the JSON report's
  numbers, `breakdown` the arena by part);
- `fit_module(...)` is ``rlxir fit``: a `FitResult` (its `to_json()` is the JSON report).

With ``training=True`` the module's output must be the scalar loss (wrap the model and its
loss in one module), and the step ends with `optimizer`'s update (`rlxir.autodiff.optimizers`;
AdamW unless told otherwise). torch.export specialises a dimension of size 1, so the
example inputs need a batch of at least 2 for ``B`` to stay symbolic.

torch is imported when a function is called, not when `rlxir` is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from rlxir.compiler.compile import CompileOptions, CompileResult, compile as compile_graph
from rlxir.errors import RlxError
from rlxir.compiler.budget import DEFAULT_HEADROOM
from rlxir.compiler.fit import FitResult, fit_batch
from rlxir.ir.graph import Graph
from rlxir.autodiff.optimizers import DEFAULT_OPTIMIZER, Optimizer, optimizer_from
from rlxir.autodiff.training import TrainingResult, compile_training, plan_training_arena_bytes, training_graph
from rlxir.compiler.workers import available_cores

BATCH = "B"
OPTIMIZER_OPTIONS = frozenset(field.name for field in attrs.fields(Optimizer)) - {"kind"}
COMPILE_OPTIONS = frozenset(("planner", "alignment", "sizing", "time_budget"))


def compile_module(module: Any, example_inputs: Sequence, target: str = "cuda", training: bool = False,
                   optimizer: str | Optimizer | None = DEFAULT_OPTIMIZER, batch: int | None = None,
                   bindings: Mapping[str, int] | None = None, **options: Any) -> CompileResult | TrainingResult:
    """Compile `module` for `target` at `batch` (default: the example inputs' batch), as
    ``rlxir compile`` does; with `training`, its training step with `optimizer`'s update.
    `options` are optimizer hyper-parameters (lr, momentum, beta1, beta2, eps, weight_decay)
    and planner options (planner, alignment, sizing, time_budget). Raises `RlxError` for a
    module that cannot be imported, a bad option, or an arena past the target's ceiling."""
    graph, example_batch = _imported(module, example_inputs)
    compile_options, chosen = _split_options(options, training, optimizer)
    bound = {**(bindings or {}), BATCH: batch or example_batch}
    if training:
        return compile_training(graph, target, bound, compile_options, optimizer=chosen)
    # The graph was imported for this compile alone: bound and transformed itself, not a copy.
    return compile_graph(graph, target, bound, attrs.evolve(compile_options, reuse_graph=True))


def fit_module(module: Any, example_inputs: Sequence, target: str = "cuda", vram: int | None = None,
               training: bool = False, optimizer: str | Optimizer | None = DEFAULT_OPTIMIZER, max_batch: int = 1024,
               headroom: float = DEFAULT_HEADROOM, bindings: Mapping[str, int] | None = None, jobs: int | None = None,
               **options: Any) -> FitResult:
    """The largest batch in 1..`max_batch` whose compiled arena for `target` fits `vram`
    bytes (default: the device probe) x `headroom`, as ``rlxir fit`` finds it; with
    `training`, of the training step with `optimizer`'s update. `options` as for
    `compile_module`."""
    graph, _ = _imported(module, example_inputs)
    compile_options, chosen = _split_options(options, training, optimizer)
    others = dict(bindings or {})

    def bind(batch: int) -> Graph:
        return graph.bind({BATCH: batch})

    build: Any = bind
    if training:
        step = training_graph(graph, optimizer=chosen)

        def build(batch: int) -> int:
            return plan_training_arena_bytes(graph, target, {**others, BATCH: batch}, compile_options, step, chosen)

    # Each batch's graph is bound afresh and compiled once: handed over, not copied again.
    options_for_fit = compile_options if training else attrs.evolve(compile_options, reuse_graph=True)
    return fit_batch(target, max_batch, headroom, build, vram=vram, options=options_for_fit, bindings=others,
                     jobs=jobs or available_cores())


def _imported(module: Any, example_inputs: Sequence) -> tuple[Graph, int]:
    """The module's graph, batch symbolic, and the example inputs' batch."""
    from rlxir.importers.torch import import_torch

    inputs = tuple(example_inputs) if isinstance(example_inputs, (list, tuple)) else (example_inputs,)
    batches = {int(value.shape[0]) for value in inputs if hasattr(value, "shape") and len(value.shape)}
    if len(batches) != 1:
        raise RlxError(f"the example inputs have batch sizes {sorted(batches) or 'none'}",
                       expected="tensors that share their first dimension, the batch")
    if min(batches) < 2:
        raise RlxError("the example inputs have a batch of 1, which torch.export keeps fixed",
                       expected="example inputs with a batch of at least 2, so the batch B stays symbolic")
    graph = import_torch(module, inputs, batch_dim=BATCH).graph
    if BATCH not in graph.symbols:
        raise RlxError(f"{type(module).__name__} imported with a fixed batch (torch.export kept axis 0 static)",
                       expected="example inputs with a batch of at least 2, and a module that does not fix it")
    return graph, batches.pop()


def _split_options(options: Mapping[str, Any], training: bool,
                   optimizer: str | Optimizer | None) -> tuple[CompileOptions, Optimizer | None]:
    """CompileOptions and the optimizer from the keyword options (unknown ones refused)."""
    unknown = sorted(set(options) - OPTIMIZER_OPTIONS - COMPILE_OPTIONS)
    if unknown:
        raise RlxError(f"unknown option {unknown[0]!r}",
                       expected="one of: " + ", ".join(sorted(OPTIMIZER_OPTIONS | COMPILE_OPTIONS)))
    hyper = {key: value for key, value in options.items() if key in OPTIMIZER_OPTIONS}
    if hyper and not training:
        raise RlxError(f"optimizer option {sorted(hyper)[0]!r} given without training=True")
    planner = {key: value for key, value in options.items() if key in COMPILE_OPTIONS}
    return CompileOptions(**planner), optimizer_from(optimizer, hyper) if training else None
