"""What an arena may use on a device: the ABI ceiling, the probed (or given) capacity, the
headroom and the side buffers outside the arena.

- `device_arena_limit(target)`: the ABI ceiling (None: unlimited).
- `device_capacity_bytes(target, which)`: the capacity probe's answer (or None).
- `arena_budget(target, headroom, vram)`: what the arena may use: the capacity times the
  headroom less the side buffers, and never past the ceiling (`Budget`, with its reasons).

The public functions take a target name or a `Target` and resolve it here, once;
`budget_for` and `device_capacity` take the resolved `Target`.
"""

from __future__ import annotations

import attrs

from rlxir.targets.devices import Capacity, ProbeMiss, Sources, format_bytes, probe_capacity
from rlxir.targets.target import Target, get_target

DEFAULT_HEADROOM = 0.6
"""Share of device memory the arena and its side buffers may use unless told otherwise."""


def device_arena_limit(target: str | Target) -> int | None:
    """The largest arena the target's ABI can address, or None when unlimited."""
    return get_target(target).arena_ceiling


def device_capacity(target: Target, sources: Sources | None = None) -> Capacity | ProbeMiss:
    return probe_capacity(target.probe, sources)


def device_capacity_bytes(target: str | Target, which: str = "total",
                          sources: Sources | None = None) -> int | None:
    """Device memory the target's probe finds (`which`: "total" or "free"), or None."""
    found = device_capacity(get_target(target), sources)
    return found.bytes(which) if isinstance(found, Capacity) else None


@attrs.frozen
class Budget:
    """What the arena may use, and how that was decided."""

    bytes: int | None  # None: unconstrained (no capacity known and no ceiling)
    capacity_bytes: int | None
    ceiling_bytes: int | None
    fixed_side_bytes: int
    shadow_fraction: float
    headroom: float
    source: str

    def explain(self) -> str:
        if self.bytes is None:
            return f"no budget: {self.source}"
        head = f"{self.bytes} B ({format_bytes(self.bytes)})"
        if self.capacity_bytes is None:
            return f"{head}: the ABI ceiling alone ({self.source})"
        parts = [f"{head} = {format_bytes(self.capacity_bytes)} ({self.source}) x {self.headroom:g} headroom"]
        if self.fixed_side_bytes:
            parts.append(f"- {format_bytes(self.fixed_side_bytes)} side buffers")
        if self.shadow_fraction:
            parts.append(f"/ (1 + {self.shadow_fraction:g}) for the arena's f16 shadow")
        text = " ".join(parts)
        if self.ceiling_bytes is not None and self.bytes == self.ceiling_bytes:
            text += ", capped at the ABI ceiling"
        return text


RUNTIME_RESERVE = {"nvml": 3 << 28, "nvidia-smi": 3 << 28}
"""Device bytes a process that runs a plan holds besides its arena, by probe (0.75 GiB): its
CUDA context (on an idle H200, NVML counts 139.80 GiB free and a process that has opened its
context can allocate 139.29 GiB) and room for the kernels' temporaries outside the arena
(36 MiB for gpt2_small at batch 128). A probed capacity is counted less this, since memory
the runtime holds cannot go to the arena; a capacity given with --vram is taken as is."""


def arena_budget(target: str | Target, headroom: float = DEFAULT_HEADROOM, vram: int | None = None,
                 which: str = "total", sources: Sources | None = None) -> Budget:
    """min(ceiling, capacity x headroom) less the side buffers outside the arena.

    `vram` overrides the probe. Side buffers are fixed (BLAS/DNN workspaces) or a fraction
    of the arena (gpu's f16 shadow): an arena A needs A x (1 + fraction) + fixed bytes.
    With no capacity known the budget is the ceiling alone, or None where there is none.
    """
    return budget_for(get_target(target), headroom, vram, which, sources)


def budget_for(target: Target, headroom: float = DEFAULT_HEADROOM, vram: int | None = None,
               which: str = "total", sources: Sources | None = None) -> Budget:
    """`arena_budget` for a target already resolved (what the fit driver calls)."""
    if not 0 < headroom <= 1:
        raise ValueError(f"headroom must be in (0, 1], got {headroom}")
    fixed = sum(size for _, size in target.side_buffers)
    fraction = target.shadow_f16_fraction
    ceiling = target.arena_ceiling
    capacity: int | None
    if vram is not None:
        capacity, source = vram, "given with --vram"
    else:
        found = device_capacity(target, sources)
        capacity = found.bytes(which) if isinstance(found, Capacity) else None
        source = f"{found.source}: {found.device}" if isinstance(found, Capacity) else found.explain()
        reserve = RUNTIME_RESERVE.get(found.source, 0) if isinstance(found, Capacity) else 0
        if capacity is not None and reserve:
            capacity = max(capacity - reserve, 0)
            source += f", less {format_bytes(reserve)} the runtime holds"
    if capacity is None:
        budget = ceiling
    else:
        budget = max(int((capacity * headroom - fixed) / (1 + fraction)), 0)
        budget = min(budget, ceiling) if ceiling is not None else budget
    return Budget(budget, capacity, ceiling, fixed, fraction, headroom, source)
