"""Run compiled graphs inside their planned arenas (docs/execution.md).

- `execute(result, inputs, params, seed, device)` -> the outputs, by output name
- `run_in_arena(...)` -> `ArenaRun`: the outputs and what the run measured
- `check_execution(graph, result, ...)` -> `ExecutionCheck`: the run next to the reference
- `reference_run(graph, ...)` -> `ReferenceRun`: the interpreter's run, to share across targets
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from rlxir.executor.arena import ExecutionError
from rlxir.executor.check import ExecutionCheck, OutputCheck, ReferenceRun, check_execution, reference_run
from rlxir.executor.runner import ArenaRun, run_in_arena
from rlxir.executor.storage import StorageLoss

if TYPE_CHECKING:
    from rlxir.compiler.compile import CompileResult
    from rlxir.autodiff.training import TrainingResult


def execute(result: CompileResult | TrainingResult, inputs: Mapping | None = None, params: Mapping | None = None,
            seed: int = 0, device: str = "cpu") -> dict:
    """Run a `CompileResult` (or a `TrainingResult`'s step) in one arena of exactly its
    `arena_bytes`; returns its outputs keyed by the compiled graph's output names."""
    return run_in_arena(result, inputs, params, seed, device).outputs


__all__ = ["ArenaRun", "ExecutionCheck", "ExecutionError", "OutputCheck", "ReferenceRun", "StorageLoss",
           "check_execution", "execute", "reference_run", "run_in_arena"]
