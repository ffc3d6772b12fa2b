"""The discrete Fourier transform as core ops, shared by the ONNX and PyTorch routes.

A signal is real ([..., 1]) or complex ([..., 2]: real and imaginary parts) in its last
dim. The transform along a static axis of n points is a ``matmul`` of each part, the axis
moved last, by constant cos/sin matrices (computed in f64 while importing, stored in the
signal's dtype): the forward X[k] = sum_t x[t] e^(-2 pi i k t / n), the inverse the same
with +i. A signal longer than n is cropped (a cropped position simply has no row);
``onesided`` keeps the n // 2 + 1 first frequencies (forward) or reads them as a Hermitian
spectrum whose real signal of n points it returns (inverse), as NumPy's rfft and irfft do.
"""

from __future__ import annotations

import numpy as np

from rlxir.importers.builder import GraphBuilder, UnsupportedModel

MATRIX_LIMIT = 1 << 22
"""The most elements one transform matrix may hold (a 2048-point transform's): a longer
signal is refused rather than unrolled into matrices of hundreds of megabytes."""


def transform_matrices(rows: int, n: int, inverse: bool, onesided: bool, scale: float | None = None) -> list[np.ndarray]:
    """[rows, K] f64 matrices that map the parts of a signal (real, then imaginary) to the
    parts of its transform: four for a complex result (re->re, im->re, re->im, im->im),
    two (re->out, im->out) for the real one of an inverse onesided transform. Every entry
    is multiplied by `scale` (by default 1 forward, 1 / n inverse)."""
    scale = (1.0 / n if inverse else 1.0) if scale is None else scale
    if inverse and onesided:
        bins = np.arange(rows)[:, None]
        weight = np.where((bins == 0) | (2 * bins == n), 1.0, 2.0) * (bins <= n // 2)
        angle = 2 * np.pi * bins * np.arange(n)[None, :] / n
        return [weight * np.cos(angle) * scale, -weight * np.sin(angle) * scale]
    columns = n // 2 + 1 if onesided else n
    positions = np.arange(rows)[:, None]
    kept = (positions < n).astype(np.float64)  # a signal longer than n is cropped
    angle = 2 * np.pi * positions * np.arange(columns)[None, :] / n
    sign = 1.0 if inverse else -1.0
    cosine, sine = kept * np.cos(angle) * scale, kept * np.sin(angle) * scale * sign
    return [cosine, -sine, sine, cosine]


def fourier(builder: GraphBuilder, value: str, axis: int, n: int, inverse: bool, onesided: bool, name: str,
            scale: float | None = None) -> str:
    """The transform of `value` ([..., 1 or 2]) along `axis` (not the last); `scale` as in
    `transform_matrices`."""
    type_ = builder.type(value)
    rank, rows = type_.rank, type_.shape[axis]
    if not isinstance(rows, int):
        raise UnsupportedModel(f"a DFT along the symbolic dim {rows}", expected="a static signal axis")
    columns = n if inverse and onesided else (n // 2 + 1 if onesided else n)
    if rows * columns > MATRIX_LIMIT:
        raise UnsupportedModel(f"a DFT of {n} points over {rows} (its {rows} x {columns} matrices are too large to "
                               f"unroll)", expected=f"transform matrices of at most {MATRIX_LIMIT} elements")
    perm = tuple(index for index in range(rank - 1) if index != axis) + (axis,)
    back = tuple(int(np.argsort(perm)[index]) for index in range(rank - 1))
    parts = []
    for index in range(type_.shape[-1]):
        part = builder.op("slice", [value], {"axis": rank - 1, "start": index, "len": 1}, hint=f"{name}.part{index}")
        part = builder.op("reshape", [part], {"shape": tuple(type_.shape[:-1])}, hint=f"{name}.flat{index}")
        parts.append(part if axis == rank - 2 else builder.op("transpose", [part], {"perm": perm},
                                                              hint=f"{name}.moved{index}"))
    matrices = transform_matrices(rows, n, inverse, onesided, scale)
    outputs = 1 if inverse and onesided else 2
    results = []
    for output in range(outputs):
        total = None
        for index, part in enumerate(parts):
            matrix = builder.tensor(f"{name}.basis{output}{index}", matrices[output * len(matrices) // outputs + index]
                                    .astype(type_.dtype.numpy), dtype=type_.dtype)
            term = builder.op("matmul", [part, matrix], hint=f"{name}.term{output}{index}")
            total = term if total is None else builder.op("add", [total, term], hint=f"{name}.sum{output}")
        if axis != rank - 2:
            total = builder.op("transpose", [total], {"perm": back}, hint=f"{name}.back{output}")
        shape = tuple(builder.type(total).shape) + (1,)
        results.append(builder.op("reshape", [total], {"shape": shape},
                                  hint=name if outputs == 1 else f"{name}.out{output}"))
    return results[0] if outputs == 1 else builder.op("concat", results, {"axis": rank - 1}, hint=name)
