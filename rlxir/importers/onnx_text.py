"""ONNX op -> core ops: TfIdfVectorizer over integer tokens.

The pool of n-grams is constant, so each n-gram length n and skip s (0 to max_skip_count;
a unigram has no skip) is one comparison: the n token slices x[i + j (s + 1)] (j < n) of
each row, compared with the pool's j-th tokens of every n-gram of that length, ANDed over j
(``minimum`` of the matches) and summed over the positions i. The counts of every pooled
n-gram land in their output columns (``ngram_indexes``) by a matmul with a constant 0/1
matrix, then the mode weighs them: TF the counts, IDF the weight where a count is not 0,
TFIDF the count times the weight. Strings have no IR type and are refused.
"""

from __future__ import annotations

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_ops import Arith, hint
from rlxir.importers.onnx_registry import register
from rlxir.types import TensorType

MODES = ("TF", "IDF", "TFIDF")


def pooled_ngrams(attrs) -> dict[int, np.ndarray]:
    """n -> the [count, n] pooled n-grams of that length (``ngram_counts`` gives where each
    length starts in ``pool_int64s``)."""
    pool = np.asarray(attrs.get("pool_int64s", []), dtype=np.int64)
    starts = [int(start) for start in attrs.get("ngram_counts", [])] + [pool.size]
    grams = {}
    for length, (start, end) in enumerate(zip(starts, starts[1:]), start=1):
        if (end - start) % length:
            raise UnsupportedModel(f"TfIdfVectorizer pool of {end - start} tokens for {length}-grams",
                                   expected="a multiple of the n-gram length")
        grams[length] = pool[start:end].reshape(-1, length)
    return grams


def convert_tfidf(ctx, node, attrs):
    mode = attrs.get("mode", "")
    if mode not in MODES:
        raise UnsupportedModel(f"TfIdfVectorizer mode {mode!r}", expected="one of " + ", ".join(MODES))
    if "pool_strings" in attrs:
        raise UnsupportedModel("TfIdfVectorizer over strings", expected="integer tokens (pool_int64s)")
    x = ctx.value(node.input[0])
    type_ = ctx.builder.type(x)
    if not type_.dtype.is_integer or type_.rank not in (1, 2) or not isinstance(type_.shape[-1], int):
        raise UnsupportedModel(f"TfIdfVectorizer of a {type_}", expected="integer tokens [C] or [N, C], C static")
    grams = pooled_ngrams(attrs)
    low, high = int(attrs.get("min_gram_length", 1)), int(attrs.get("max_gram_length", 1))
    skips = int(attrs.get("max_skip_count", 0))
    columns = [int(index) for index in attrs.get("ngram_indexes", [])]
    vocabulary = max(columns) + 1 if columns else 0
    name = hint(node)
    f = Arith(ctx, DType.f32, name)
    counts, offset = [], 0
    for length, pooled in grams.items():
        if low <= length <= high and pooled.size:
            counts.append((_count(ctx, f, x, pooled, length, skips), offset))
        offset += len(pooled)
    pooled_count = sum(len(pooled) for pooled in grams.values())
    if not vocabulary or len(columns) != pooled_count or min(columns) < 0:
        raise UnsupportedModel(f"TfIdfVectorizer with {len(columns)} ngram_indexes for {pooled_count} pooled n-grams",
                               expected="one non-negative output column per pooled n-gram")
    rows = type_.shape[:-1]
    total = None
    for count, first in counts:
        placement = np.zeros((ctx.builder.type(count).shape[-1], vocabulary), np.float32)
        for row in range(placement.shape[0]):
            placement[row, columns[first + row]] = 1.0
        placed = f("matmul", count, ctx.builder.tensor(f"{name}.columns", placement), tag="placed")
        total = placed if total is None else f("add", total, placed, tag="counts")
    if total is None:
        total = _zeros(f, tuple(rows), vocabulary)
    weights = attrs.get("weights")
    weight = ctx.builder.tensor(f"{name}.weights", np.asarray(weights, np.float32)) if weights else None
    if mode == "IDF":
        total = f("minimum", total, 1.0, tag="present")
    return [total if weight is None or mode == "TF" else f("mul", total, weight, final=True)]


def _zeros(f: Arith, rows: tuple, columns: int) -> str:
    return f.builder.splat(f"{f.name}.zeros", 0.0, TensorType(DType.f32, (*rows, columns)))


def _count(ctx, f: Arith, x: str, pooled: np.ndarray, length: int, skips: int) -> str:
    """[..., len(pooled)] f32 counts of the pooled `length`-grams in each row of `x`, over
    every skip from 0 to `skips` (a unigram once)."""
    type_ = ctx.builder.type(x)
    last, size = type_.rank - 1, type_.shape[-1]
    total = None
    for skip in range(skips + 1 if length > 1 else 1):
        span = (length - 1) * (skip + 1)
        if span >= size:
            break
        windows = size - span
        matched = None
        for position in range(length):
            tokens = ctx.builder.op("slice", [x], {"axis": last, "start": position * (skip + 1), "len": windows},
                                    hint=f"{f.name}.g{length}s{skip}t{position}")
            tokens = ctx.builder.op("reshape", [tokens], {"shape": (*type_.shape[:-1], windows, 1)},
                                    hint=f"{f.name}.g{length}s{skip}c{position}")
            wanted = ctx.builder.literal(f"{f.name}.g{length}p{position}", pooled[:, position].astype(type_.dtype.numpy),
                                         type_.dtype)
            hit = ctx.builder.op("eq", [tokens, wanted], hint=f"{f.name}.g{length}s{skip}h{position}")
            matched = hit if matched is None else ctx.builder.op("minimum", [matched, hit],
                                                                  hint=f"{f.name}.g{length}s{skip}m")
        number = f("cast", matched, attrs={"to": DType.f32}, tag="matches")
        found = f("reduce_sum", number, attrs={"axes": (last,), "keepdims": False}, tag=f"g{length}s{skip}")
        total = found if total is None else f("add", total, found, tag=f"g{length}")
    return _zeros(f, tuple(type_.shape[:-1]), len(pooled)) if total is None else total


register({"TfIdfVectorizer": convert_tfidf})
