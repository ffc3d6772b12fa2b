"""Pooling windows of the frameworks, in terms of the IR's pools.

The IR's ``max_pool2d`` / ``avg_pool2d`` use floor-mode windows over the input padded by
``padding`` (max pads with -inf; avg pads with zeros and always divides by the kernel's
area). PyTorch and ONNX also have ceil-mode windows and averages that count only some of
the cells. Both reduce to the IR's pools:

- a ceil-mode pool is a floor-mode one over extra padding at the bottom / right
  (`ceil_mode_padding`), the last window dropped when it would start in that padding;
- an average whose divisor is not the kernel's area is the IR's average times static
  factors (`average_factors`): kernel extent / counted cells, per spatial axis.

Both need the static size of a spatial dim they change; a symbolic one is an
`UnsupportedModel` error.
"""

from __future__ import annotations

import numpy as np

from rlxir.importers.builder import UnsupportedModel


def _static(size, what: str) -> int:
    if not isinstance(size, int):
        raise UnsupportedModel(f"{what} over the symbolic spatial dim {size}", expected="static spatial dims")
    return size


def ceil_mode_padding(spatial, kernel, stride, padding, what: str = "a ceil_mode pool") -> tuple[int, ...]:
    """`padding` ``(top, left, bottom, right)`` grown at the end so that floor-mode windows
    are the ceil-mode ones: ``ceil((size + begin + end - k) / s) + 1`` windows, less one
    when the last would start past the input and its begin padding (PyTorch and ONNX)."""
    padding = list(padding)
    for axis, (size, window, step) in enumerate(zip(spatial, kernel, stride)):
        size = _static(size, what)
        begin, end = padding[axis], padding[axis + 2]
        windows = -(-(size + begin + end - window) // step) + 1
        if (windows - 1) * step >= size + begin:
            windows -= 1
        padding[axis + 2] = max(end, (windows - 1) * step + window - size - begin)
    return tuple(padding)


def average_factors(spatial, kernel, stride, padding, counted, include_pad: bool,
                    divisor: int | None = None) -> list[np.ndarray]:
    """Factors that turn the IR's average over the windows of `padding` (divided by the
    kernel's area) into one divided by the cells of each window inside the input grown by
    `counted` ``(top, left, bottom, right)`` when `include_pad`, else inside the input
    itself; with `divisor`, divided by that. Each factor broadcasts over ``[OH, OW]``: a
    column ``[OH, 1]`` for the rows, a row ``[OW]`` for the columns (a window's cells are
    its rows times its columns), a scalar for a divisor. Empty when none is needed."""
    area = kernel[0] * kernel[1]
    if divisor is not None:  # one factor for every window: a scalar broadcasts over any dims
        return [] if divisor == area else [np.array(area / divisor)]
    factors = []
    for axis, (size, window, step) in enumerate(zip(spatial, kernel, stride)):
        begin, end = padding[axis], padding[axis + 2]
        if begin == end == 0 or include_pad and (begin, end) == (counted[axis], counted[axis + 2]):
            continue  # the IR's own windows: every cell counts
        size = _static(size, "an average pool that does not count all its padding")
        low, high = (-counted[axis], size + counted[axis + 2]) if include_pad else (0, size)
        starts = np.arange((size + begin + end - window) // step + 1) * step - begin
        cells = np.minimum(starts + window, high) - np.maximum(starts, low)
        factor = window / np.maximum(cells, 1)
        if np.any(factor != 1.0):
            factors.append(factor.reshape(-1, 1) if axis == 0 else factor)
    return factors


__all__ = ["average_factors", "ceil_mode_padding"]
