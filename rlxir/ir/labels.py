"""Schedule labels: the integers `Graph` keeps increasing along its schedule's linked list,
so "which comes first" is one comparison, without renumbering on every insert.

A node inserted between two others takes the midpoint of their labels. One inserted right
after the previously inserted node (a decomposition adding its nodes before its anchor, a
chain of after= inserts) takes a small step instead: halving would use the gap up every
~32 inserts. When a gap is used up, the stretch around it is relabelled, widened until its
labels leave `ROOM` between neighbours (the local relabelling of an order-maintenance
list); only a stretch reaching an end of the schedule relabels all of it. Relabelling the
whole schedule at every used-up gap made inserts that keep returning to one place (an
optimizer's state params, all put before the first op) quadratic in the graph's size.

The functions take the graph's dicts: `label` (name -> label), `previous` and `following`
(the links, with `SCHEDULE_END` as the sentinel of the circular list).
"""

from __future__ import annotations

from rlxir.ir.graph_reading import SCHEDULE_END

SPACING = 1 << 32
"""The step between neighbours when labels are given afresh (appending, relabelling all)."""
SEQUENTIAL_SHIFT = 12
"""A sequential insert takes 1/2^12 of the gap left after the previous one."""
ROOM = 1 << 20
"""The least step a local relabelling leaves between neighbours."""


def label_between(label: dict[str, int], previous: dict[str, str], following: dict[str, str], before: str,
                  after: str, last_inserted: str | None) -> int:
    """A label for a node about to go between neighbours `before` and `after` (either may
    be the sentinel), relabelling first when their gap is used up."""
    if after == SCHEDULE_END:
        return (label[before] if before != SCHEDULE_END else 0) + SPACING
    low = label[before] if before != SCHEDULE_END else label[after] - 2 * SPACING
    gap = label[after] - low
    if gap >= 2:
        sequential = before != SCHEDULE_END and before == last_inserted
        return low + (max(gap >> SEQUENTIAL_SHIFT, 1) if sequential else gap // 2)
    if not relabel_around(label, previous, following, before, after):
        relabel_all(label, following)
    return label_between(label, previous, following, before, after, last_inserted)


def relabel_around(label: dict[str, int], previous: dict[str, str], following: dict[str, str], before: str,
                   after: str) -> bool:
    """Spread evenly the labels of a stretch holding `before` and `after` (neighbours whose
    gap is used up) between the labels of the nodes just outside it, widening it by 1, 2,
    4, ... nodes a side until that leaves `ROOM` a step. False when it would reach an end
    of the schedule, where nothing bounds it."""
    left, right, inside, widen = previous[before], following[after], 2, 1
    while left != SCHEDULE_END and right != SCHEDULE_END:
        step = (label[right] - label[left]) // (inside + 1)
        if step >= ROOM:
            cursor, value = following[left], label[left]
            while cursor != right:
                value += step
                label[cursor] = value
                cursor = following[cursor]
            return True
        for _ in range(widen):
            if left == SCHEDULE_END or right == SCHEDULE_END:
                return False
            left, right, inside = previous[left], following[right], inside + 2
        widen *= 2
    return False


def relabel_all(label: dict[str, int], following: dict[str, str]) -> None:
    """Every node's label afresh: `SPACING`, 2 `SPACING`, ... along the schedule."""
    cursor, value = following[SCHEDULE_END], 0
    while cursor != SCHEDULE_END:
        value += SPACING
        label[cursor] = value
        cursor = following[cursor]
