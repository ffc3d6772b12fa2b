"""A deliberately naive statement of the liveness placement rule, to test the fast one; and
the instances small enough for a unit test, for the tests that run every one of them."""

from __future__ import annotations

from rlxir.planning import Buffer, aligned_size

CHALLENGING = [f"minimalloc/challenging/{letter}.1048576.csv" for letter in "ABCDEFGHIJK"]
"""MiniMalloc's challenging set, kept in tests/data/planning (the `planning_data` fixture)."""
REAL_WORKLOADS = ["idealloc/somas_tensors/resnet50.csv", "idealloc/iopddl/G_1.csv"]
"""idealloc's real-workload instances small enough for a test, in ../shared/data (`shared_data`)."""
UNIT_INSTANCES = [("planning_data", path) for path in CHALLENGING] + [("shared_data", path) for path in REAL_WORKLOADS]
"""(the fixture giving its folder, relative path) of each: `request.getfixturevalue(folder) / path`."""


def naive_best_fit(buffers: list[Buffer], alignment: int, order: list[int]) -> list[int]:
    """Offsets from placing `order` one by one, each into the smallest gap that holds it.

    Gaps are computed from scratch among the placed buffers whose lifetimes overlap; the
    lowest such gap wins ties; with no gap large enough, the buffer goes on top of all of
    them; an empty buffer gets 0. Buffers with a fixed offset are placed first. O(n^2 log n).
    """
    sizes = [aligned_size(b.size, alignment) for b in buffers]
    offsets: list[int | None] = [b.fixed_offset for b in buffers]
    for index in order:
        size = sizes[index]
        if size == 0:
            offsets[index] = 0
            continue
        taken = sorted(
            (offsets[j], offsets[j] + sizes[j])
            for j, other in enumerate(buffers)
            if offsets[j] is not None and sizes[j] and other.start < buffers[index].end and buffers[index].start < other.end
        )
        best_gap = None
        best_offset = None
        covered_to = 0
        for start, end in taken:
            gap = start - covered_to
            if gap >= size and (best_gap is None or gap < best_gap):
                best_gap, best_offset = gap, covered_to
            covered_to = max(covered_to, end)
        offsets[index] = covered_to if best_offset is None else best_offset
    return offsets
