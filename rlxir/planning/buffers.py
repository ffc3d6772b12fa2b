"""What a planner places (`Buffer`) and what it returns (`PlanResult`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

ProgressSink = Callable[[str], None]


def placed_share(placed: int, total: int) -> str:
    """How far a placement pass is, as its progress lines say it: ``40% of 1000 buffers``."""
    return f"{placed * 100 // max(total, 1)}% of {total} buffers"
"""Where a planner sends a one-line status now and then during long work (the CLI shows
it on a terminal)."""


def aligned_size(size: int, alignment: int) -> int:
    """`size` rounded up to a multiple of `alignment` (exact for any Python int)."""
    if alignment < 1:
        raise ValueError(f"alignment must be a positive integer, got {alignment}")
    return -(-size // alignment) * alignment


def _check_interval(buffer: Buffer, attribute: attrs.Attribute, end: int) -> None:
    if end <= buffer.start:
        raise ValueError(
            f"buffer {buffer.name!r}: live interval [{buffer.start}, {end}) is empty; "
            "a buffer must be live for at least one step"
        )


def _check_non_negative(buffer: Buffer, attribute: attrs.Attribute, value: int | None) -> None:
    if value is not None and value < 0:
        raise ValueError(f"buffer {buffer.name!r}: {attribute.name} must be >= 0, got {value}")


@attrs.frozen(slots=True)
class Buffer:
    """One block of memory the planner must place, live over the steps ``[start, end)``.

    Two buffers conflict (may not share addresses) when their live intervals intersect:
    ``a.start < b.end and b.start < a.end``. Views are not buffers: the caller resolves a
    view (a reshape, a same-dtype cast, an axis-0 slice) to its root before planning and
    simply does not pass it.

    `size` is in bytes, before alignment; planners reserve ``aligned_size(size,
    alignment)``. `fixed_offset`, when set, is imposed on the planner (for example a weight
    bound to the forward layout when planning a backward graph); it must be a multiple of
    the alignment the plan uses.
    """

    name: str
    start: int
    end: int = attrs.field(validator=_check_interval)
    size: int = attrs.field(validator=_check_non_negative)
    fixed_offset: int | None = attrs.field(default=None, validator=_check_non_negative)

    @property
    def lifetime(self) -> int:
        """Number of steps the buffer is live."""
        return self.end - self.start


@attrs.frozen(slots=True)
class PlanResult:
    """A placement of a buffer list in one arena, with the numbers that judge it.

    - `offsets`: byte offset of every buffer, by name, in the order the buffers were given.
    - `arena_bytes`: max over buffers of offset + aligned size (0 for no buffers).
    - `lower_bound_bytes`: peak over time of the aligned sizes live together; no plan of
      these buffers can use less (see `lower_bound`).
    - `unshared_bytes`: the sum of aligned sizes, what a plan without any reuse needs.
    - `alignment`, `planner` (registry name) and `seconds` (wall time of the plan call).
    """

    offsets: Mapping[str, int] = attrs.field(repr=False)
    arena_bytes: int
    lower_bound_bytes: int
    unshared_bytes: int
    alignment: int
    planner: str
    seconds: float

    @property
    def ratio(self) -> float:
        """Arena over lower bound (1.0 is optimal; 1.0 as well when both are 0)."""
        if self.lower_bound_bytes == 0:
            return 1.0
        return self.arena_bytes / self.lower_bound_bytes
