"""Hypothesis strategies for buffer lists."""

from __future__ import annotations

import random

from hypothesis import strategies as st

from rlxir.planning import Buffer, aligned_size

ALIGNMENTS = st.sampled_from([1, 4, 16])


@st.composite
def buffer_lists(draw, max_buffers: int = 30, with_fixed: bool = False, alignment: int = 1) -> list[Buffer]:
    """Up to `max_buffers` buffers over a short schedule, sizes 0..200 bytes.

    With `with_fixed`, some buffers get an imposed offset; those offsets stack the fixed
    buffers on top of each other (each past the previous one's aligned end), so the
    imposed part is always valid.
    """
    count = draw(st.integers(0, max_buffers))
    buffers = []
    fixed_cursor = 0
    for index in range(count):
        start = draw(st.integers(0, 24))
        end = start + draw(st.integers(1, 12))
        size = draw(st.integers(0, 200))
        fixed = None
        if with_fixed and draw(st.integers(0, 3)) == 0:
            fixed = fixed_cursor
            fixed_cursor += aligned_size(size, alignment) + alignment * draw(st.integers(0, 2))
        buffers.append(Buffer(f"b{index}", start, end, size, fixed_offset=fixed))
    return buffers


def crowded_buffers(count: int, seed: int, longest: int = 5000, shortest_span: int = 64,
                    largest: int = 4000) -> list[Buffer]:
    """`count` buffers, one starting per step, a fifth of them live for 65-`longest` steps
    and the rest for 1-`shortest_span`: hundreds are live at once (bench/synth.py's crowded
    recipe, smaller)."""
    rng = random.Random(seed)
    buffers = []
    for step in range(count):
        life = rng.randint(65, longest) if rng.random() < 0.2 else rng.randint(1, shortest_span)
        buffers.append(Buffer(f"t{step}", step, step + life, 64 * rng.randint(1, largest)))
    return buffers
