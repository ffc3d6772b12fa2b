"""The compiled loop of `validate_plan`'s overlap check (rlxir/planning/validate.py), behind
rlxir/planning/compiled.py's `overlap_found`, which says what it computes. Importing this
module imports Numba; the function is compiled on its first call and cached on disk."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def first_overlap(order: np.ndarray, slot_lo: np.ndarray, slot_hi: np.ndarray, offsets: np.ndarray,
                  sizes: np.ndarray, base: int, highest: np.ndarray, whole: np.ndarray) -> int:
    """The first position in `order` (buffers by offset, lowest first) whose buffer starts
    below the end of one placed before it and live in a common slot; -1 where none does.

    A segment tree over the slots (leaf ``base + s`` is slot s) holds, for each node, the
    highest end of the buffers placed so far that cover any of its slots (`highest`) and
    that cover all of them (`whole`). A buffer's slots split into the usual O(log N) nodes;
    the highest end among the placed buffers sharing a slot with it is the largest
    `highest` of those nodes and `whole` of their ancestors, which all lie on the paths up
    from its first and last slot's leaves. Both arrays start at zero (offsets are at least
    zero, checked before)."""
    for position in range(order.shape[0]):
        index = order[position]
        first = slot_lo[index] + base
        last = slot_hi[index] - 1 + base
        end_below = 0
        left = first >> 1
        right = last >> 1
        while left != right:  # the two paths up, until they meet
            end_below = max(end_below, whole[left], whole[right])
            left >>= 1
            right >>= 1
        while left:  # then their common part, once
            end_below = max(end_below, whole[left])
            left >>= 1
        left = first
        right = last + 1
        while left < right:
            if left & 1:
                end_below = max(end_below, highest[left])
                left += 1
            if right & 1:
                right -= 1
                end_below = max(end_below, highest[right])
            left >>= 1
            right >>= 1
        offset = offsets[index]
        if end_below > offset:
            return position
        end = offset + sizes[index]
        left = first
        right = last + 1
        while left < right:
            if left & 1:
                highest[left] = max(highest[left], end)
                whole[left] = max(whole[left], end)
                left += 1
            if right & 1:
                right -= 1
                highest[right] = max(highest[right], end)
                whole[right] = max(whole[right], end)
            left >>= 1
            right >>= 1
        left = first >> 1
        right = last >> 1
        while left != right:
            highest[left] = max(highest[left], end)
            highest[right] = max(highest[right], end)
            left >>= 1
            right >>= 1
        while left:
            highest[left] = max(highest[left], end)
            left >>= 1
    return -1
