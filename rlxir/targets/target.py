"""What a backend is: a declaration read by the passes, the planner and the fit driver.

Each of the six targets is one `Target` value in ``backends/<name>.py``. A user defines a
new target by deriving from an existing one with `Target.derive` (for example "rocm with
the liveness planner") and registering it.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import attrs

from rlxir.dtypes import DType
from rlxir.errors import RlxError, close_names

UNARY = frozenset({"neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "silu", "sin", "cos",
                   "erf", "gelu", "cast", "floor", "ceil"})
BINARY = frozenset({"add", "sub", "mul", "div", "pow", "maximum", "minimum", "mod", "fmod"})
COMPARE = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "where"})
REDUCE = frozenset({"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"})
LAYOUT = frozenset({"reshape", "transpose", "expand", "concat", "slice", "gather", "gather_elements",
                    "scatter_elements"})
PRIMITIVES = UNARY | BINARY | COMPARE | REDUCE | LAYOUT | frozenset(
    {"matmul", "cumsum", "softmax", "conv2d", "max_pool2d", "avg_pool2d", "topk"})
"""Ops every target runs natively (reductions and softmax on the last axis at least)."""

FUSED_KERNELS = frozenset({"fused_matmul_bias_act", "fused_residual_layernorm", "fused_residual_rmsnorm",
                           "fused_elementwise", "layernorm", "rmsnorm"})
"""The kernels `fuse` produces, plus the norms every backend has a kernel for."""

ALL_DTYPES = frozenset(DType)


@attrs.frozen
class Target:
    """A backend's declaration. All fields are data; see docs/backends.md for each target.

    - `pipeline`: the pass pipeline (text) its compile runs before planning.
    - `claimed_ops`: ops it runs natively; `legalize-or-rewrite` rewrites everything else.
    - `last_axis_reductions`: reductions/softmax/cumsum run only on the last axis.
    - `dtypes`: element types its kernels take.
    - `planner`, `alignment`, `sizing` ("dtype": the dtype's bytes; "f32": 4 per element).
    - `arena_ceiling`: the ABI's largest arena in bytes (None: unlimited, 64-bit).
    - `probe`: name of the capacity probe (rlxir.targets.devices) or None.
    - `fuse_patterns`: the fusion list `fuse` uses for this target.
    - `region_max_steps`, `region_max_inputs`: caps on fused elementwise regions.
    - `side_buffers`: fixed side buffers outside the arena, name -> bytes.
    - `shadow_f16_fraction`: an f16 shadow of this fraction of the arena, outside it.
    - `conv_im2col`: conv2d lowers through an im2col workspace in the arena (docs/lir.md).
    """

    name: str
    pipeline: str
    claimed_ops: frozenset
    planner: str
    alignment: int
    sizing: str
    arena_ceiling: int | None
    probe: str | None
    dtypes: frozenset = ALL_DTYPES
    last_axis_reductions: bool = True
    fuse_patterns: tuple = ("bias_act", "residual_norm", "shared_input_matmul", "regions")
    region_max_steps: int = 32
    region_max_inputs: int = 16
    side_buffers: tuple = ()
    shadow_f16_fraction: float = 0.0
    conv_im2col: bool = False
    description: str = ""

    def claims(self, op: str) -> bool:
        """Whether the target runs `op` natively: it is claimed, or it is the backward
        kernel of a claimed op (`register_backward_kernel`)."""
        return op in self.claimed_ops or _BACKWARD_KERNELS.get(op) in self.claimed_ops

    def derive(self, name: str, **changes: Any) -> Target:
        """A new target like this one with some fields changed (a new `name` is required)."""
        return attrs.evolve(self, name=name, **changes)

    def side_buffer_bytes(self, arena_bytes: int = 0) -> dict[str, int]:
        """Side buffers outside the arena for a given arena size."""
        buffers = dict(self.side_buffers)
        if self.shadow_f16_fraction:
            buffers["f16_shadow"] = int(arena_bytes * self.shadow_f16_fraction)
        return buffers


_BACKWARD_KERNELS: dict[str, str] = {}


def register_backward_kernel(op: str, forward_op: str) -> None:
    """Declare `op` a backward kernel of `forward_op` (conv2d_grad_input of conv2d, ...):
    every target that claims `forward_op` claims `op` too, as a backend with a kernel for an
    op has its gradient kernels. Used by `rlxir.autodiff.backward_ops`."""
    _BACKWARD_KERNELS[op] = forward_op


_TARGETS: dict[str, Target] = {}
_SCANNED = [False]


def register_target(target: Target, replace: bool = False) -> Target:
    """Make `target` findable by its name (every command's `--target`); a name already
    registered is refused unless `replace`. Returns the target (docs/backends.md)."""
    if target.name in _TARGETS and not replace:
        raise ValueError(f"a target named {target.name!r} is already registered")
    _TARGETS[target.name] = target
    return target


def unregister_target(name: str) -> None:
    """Remove a registered target (one a program derived and no longer wants)."""
    _TARGETS.pop(name, None)


def _scan() -> None:
    if _SCANNED[0]:
        return
    import rlxir.backends as package

    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"rlxir.backends.{info.name}")
    _SCANNED[0] = True


def get_target(target: str | Target) -> Target:
    """The target named `target` (a `Target` passes through)."""
    if isinstance(target, Target):
        return target
    _scan()
    found = _TARGETS.get(target)
    if found is None:
        close = close_names(target, _TARGETS)
        raise RlxError(f"unknown target {target!r}",
                       expected=f"did you mean {close[0]}?" if close else "one of: " + ", ".join(sorted(_TARGETS)))
    return found


def available_targets() -> dict[str, Target]:
    _scan()
    return dict(_TARGETS)
