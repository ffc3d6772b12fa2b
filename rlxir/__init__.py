"""rlxir: a graph-IR compiler pass framework that answers whether a model fits a device.

Public API (the CLI is a thin layer over it):

- `parse`, `parse_file` -> `Module`; `print_graph`, `print_module`; `verify`
- `Graph`, `Module`, `TensorType`, `DType`, the op registry (`register_op`, `OpDef`, ...)
- `RlxError` and its located subclasses
- `interpret` (the NumPy reference run), `load_params` (params from a directory of
  `<name>.npy` files, as `rlxir import --weights DIR` writes them)
- `grad` (the training graph of a loss), `compile_training`, `plan_training_arena_bytes`
- `compile`, `plan_compile` (the same without the ceiling's refusal), `plan_arena_bytes` (a
  graph's arena on a target), `CompileOptions`, `CompileResult`, `ArenaTooLarge`
- `fit_batch`, `arena_budget`, `device_arena_limit` (the largest batch that fits a device);
  `FitReport` (whether an arena fits a budget: the verdict every command reports)
- `parse_pipeline`, `run_pipeline`, `Pipeline`, `PipelineError` (pass pipelines from text)
- for pass authors: `Pass`, `PassContext`, `PassError`, `option`, `register_pass`,
  `Rule`, `rewrite_greedy`, the instruments `TimePasses`, `VerifyEach`, `PrintIR`; targets
  as data: `Target`, `get_target`, `register_target` (docs/passes.md, docs/backends.md)
- `execute`, `run_in_arena`, `check_execution`, `ArenaRun`, `ExecutionCheck`, `ExecutionError`
  (run a compiled graph inside its planned arena, on the CPU or a GPU, and check it)
- `fit_module`, `compile_module` (a PyTorch `nn.Module` in one call; loaded on first use,
  so `import rlxir` does not import torch)

`rlxir.compile` shadows the builtin only inside this namespace, as `torch.compile` does.
"""

from typing import TYPE_CHECKING

# What reading and checking a graph needs is imported here; the rest of the public API
# loads on first use (`__getattr__` below), so `rlxir check` does not import the compiler,
# the planners, autodiff or the executor. The gradient ops register with the op registry
# here, since a printed training graph holds them.
from rlxir.dtypes import DType
from rlxir.errors import IRTypeError, Location, ParseError, RlxError, UnboundSymbolError, VerifyError
from rlxir.ir.graph import Graph, GraphError, Module
from rlxir.ops import AttrSpec, OpDef, ShapeError, get_op, register_annotation, register_op, registered_ops
import rlxir.autodiff.backward_ops  # noqa: F401,E402  (registers the gradient ops)
from rlxir.ir.parser import parse, parse_file
from rlxir.ir.printer import print_graph, print_module
from rlxir.symbolic import Expr, format_dim, parse_dim
from rlxir.types import TensorType
from rlxir.ir.verifier import find_errors, verify

__version__ = "0.1.0"

_LAZY = {
    "interpret": "rlxir.interpreter",
    "load_params": "rlxir.compiler.params",
    "grad": "rlxir.autodiff.backward",
    **dict.fromkeys(("TrainingResult", "compile_training", "plan_training_arena_bytes"), "rlxir.autodiff.training"),
    **dict.fromkeys(("ArenaTooLarge", "CompileOptions", "CompileResult", "FitReport", "compile", "plan_arena_bytes",
                     "plan_compile"), "rlxir.compiler.compile"),
    **dict.fromkeys(("arena_budget", "device_arena_limit"), "rlxir.compiler.budget"),
    "fit_batch": "rlxir.compiler.fit",
    **dict.fromkeys(("Pipeline", "PipelineError", "parse_pipeline", "run_pipeline"), "rlxir.pass_machinery.pipeline"),
    **dict.fromkeys(("Pass", "PassContext", "PassError", "option", "register_pass"),
                    "rlxir.pass_machinery.pass_base"),
    **dict.fromkeys(("Rule", "rewrite_greedy"), "rlxir.pass_machinery.rewriter"),
    **dict.fromkeys(("PrintIR", "TimePasses", "VerifyEach"), "rlxir.pass_machinery.instruments"),
    **dict.fromkeys(("Target", "get_target", "register_target"), "rlxir.targets.target"),
    **dict.fromkeys(("ArenaRun", "ExecutionCheck", "ExecutionError", "check_execution", "execute", "reference_run",
                     "run_in_arena"), "rlxir.executor"),
    # These import torch when called.
    **dict.fromkeys(("fit_module", "compile_module"), "rlxir.module_api"),
}
"""Public names whose modules load on first use, and the module each comes from."""


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module 'rlxir' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


if TYPE_CHECKING:  # what the names above are, for type checkers and editors
    from rlxir.autodiff.backward import grad
    from rlxir.autodiff.training import TrainingResult, compile_training, plan_training_arena_bytes
    from rlxir.compiler.budget import arena_budget, device_arena_limit
    from rlxir.compiler.compile import (ArenaTooLarge, CompileOptions, CompileResult, FitReport, compile,
                                        plan_arena_bytes, plan_compile)
    from rlxir.compiler.fit import fit_batch
    from rlxir.compiler.params import load_params
    from rlxir.executor import (ArenaRun, ExecutionCheck, ExecutionError, check_execution, execute, reference_run,
                                run_in_arena)
    from rlxir.interpreter import interpret
    from rlxir.module_api import compile_module, fit_module
    from rlxir.pass_machinery.instruments import PrintIR, TimePasses, VerifyEach
    from rlxir.pass_machinery.pass_base import Pass, PassContext, PassError, option, register_pass
    from rlxir.pass_machinery.pipeline import Pipeline, PipelineError, parse_pipeline, run_pipeline
    from rlxir.pass_machinery.rewriter import Rule, rewrite_greedy
    from rlxir.targets.target import Target, get_target, register_target

__all__ = [
    "AttrSpec", "DType", "Expr", "Graph", "GraphError", "IRTypeError", "Location", "Module", "OpDef", "ParseError",
    "RlxError", "ShapeError", "TensorType", "TrainingResult", "UnboundSymbolError", "VerifyError", "__version__",
    "compile_training", "find_errors", "format_dim", "get_op", "grad", "interpret", "load_params", "parse",
    "parse_dim", "parse_file",
    "plan_training_arena_bytes", "print_graph", "print_module", "register_annotation", "register_op",
    "registered_ops", "verify",
    "ArenaTooLarge", "CompileOptions", "CompileResult", "FitReport", "compile", "plan_arena_bytes", "plan_compile",
    "arena_budget", "device_arena_limit", "fit_batch",
    "Pipeline", "PipelineError", "parse_pipeline", "run_pipeline",
    "Pass", "PassContext", "PassError", "option", "register_pass", "Rule", "rewrite_greedy",
    "PrintIR", "TimePasses", "VerifyEach", "Target", "get_target", "register_target",
    "ArenaRun", "ExecutionCheck", "ExecutionError", "check_execution", "execute", "reference_run", "run_in_arena",
    "fit_module", "compile_module",
]
