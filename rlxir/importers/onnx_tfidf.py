"""ONNX op -> core ops: TfIdfVectorizer on integer tokens (``pool_int64s``).

An n-gram of size n read with skip distance d starts at position i and holds tokens
``i, i + d, ..., i + (n - 1) d`` of a row. For every n-gram size in
``[min_gram_length, max_gram_length]`` that the pool holds and every distance (1 to
``max_skip_count + 1``; unigrams once, at distance 1, as ONNX's reference counts them),
one static ``gather`` per token position takes those tokens for every start, ``eq``
against the pool's n-grams of that size (a constant) says which match, ``minimum``
(logical and) over the positions and ``reduce_sum`` over the starts count them, and a
constant 0/1 matrix (``matmul``) adds each pool n-gram's count into its output column
(``ngram_indexes``). ``mode`` TF gives the counts, TFIDF the counts times ``weights``,
IDF the weight where the count is positive (a weight belongs to a pool n-gram and so to
its column, as the spec and onnxruntime read it; ONNX's reference reads it per column). The row length must be static (it fixes the
starts); the batch may be symbolic. A pool of strings is refused (the IR has no string
dtype).
"""

from __future__ import annotations

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_ops import hint
from rlxir.importers.onnx_registry import register
from rlxir.types import TensorType


def pool_ngrams(attrs) -> list[tuple[int, np.ndarray, list[int]]]:
    """(size, the pool's n-grams of that size [count, size], their pool positions) per size
    with at least one n-gram; positions count n-grams through the whole pool in order."""
    pool = np.asarray(attrs.get("pool_int64s", []), dtype=np.int64)
    starts = [int(start) for start in attrs.get("ngram_counts", [])]
    if any(start < 0 or start > pool.size for start in starts) or starts != sorted(starts):
        raise UnsupportedModel(f"TfIdfVectorizer ngram_counts {starts} for a pool of {pool.size} values",
                               expected="ascending offsets into the pool")
    groups, position = [], 0
    for size, start in enumerate(starts, start=1):
        end = starts[size] if size < len(starts) else pool.size
        count = (end - start) // size
        if count > 0:
            groups.append((size, pool[start:start + count * size].reshape(count, size),
                           list(range(position, position + count))))
        position += max(count, 0)
    return groups


def convert_tfidf(ctx, node, attrs):
    if attrs.get("pool_strings"):
        raise UnsupportedModel("TfIdfVectorizer over a pool of strings: the IR has no string dtype",
                               expected="a pool_int64s vocabulary of token ids")
    mode = attrs.get("mode", "TF")
    if mode not in ("TF", "IDF", "TFIDF"):
        raise UnsupportedModel(f"TfIdfVectorizer mode {mode!r}", expected="TF, IDF or TFIDF")
    low, high = int(attrs.get("min_gram_length", 1)), int(attrs.get("max_gram_length", 1))
    distances = int(attrs.get("max_skip_count", 0)) + 1
    indexes = [int(index) for index in attrs.get("ngram_indexes", [])]
    width = max(indexes) + 1 if indexes else 0
    x = ctx.value(node.input[0])
    x_type = ctx.builder.type(x)
    if x_type.dtype not in (DType.i64, DType.i32) or x_type.rank > 2:
        raise UnsupportedModel(f"TfIdfVectorizer of {x_type.dtype} data of rank {x_type.rank}",
                               expected="i64 or i32 tokens of shape [C] or [B, C]")
    length = x_type.shape[-1] if x_type.rank else 1
    if not isinstance(length, int):
        raise UnsupportedModel(f"TfIdfVectorizer over rows of symbolic length {length}",
                               expected="a static row length (it fixes where n-grams start)")
    rows = x if x_type.rank == 2 else ctx.builder.op("reshape", [x], {"shape": (1, length)}, hint=f"{hint(node)}.rows")
    groups = [group for group in pool_ngrams(attrs) if low <= group[0] <= high]
    if any(position >= len(indexes) for _, _, positions in groups for position in positions):
        raise UnsupportedModel("TfIdfVectorizer with fewer ngram_indexes than pool n-grams",
                               expected="one ngram_indexes entry per n-gram of the pool")
    total = None
    for size, grams, positions in groups:
        counts = _group_counts(ctx, node, rows, length, size, grams, distances)
        if counts is None:
            continue
        columns = np.zeros((len(positions), width), np.float32)
        for row, position in enumerate(positions):
            columns[row, indexes[position]] += 1
        spread = ctx.builder.op("matmul", [counts, ctx.builder.tensor(f"{hint(node)}.columns{size}", columns)],
                                hint=f"{hint(node)}.counts{size}")
        total = spread if total is None else ctx.builder.op("add", [total, spread], hint=f"{hint(node)}.counts")
    batch = ctx.builder.type(rows).shape[0]
    if total is None:
        total = ctx.builder.splat(f"{hint(node)}.counts", 0.0, TensorType(DType.f32, (batch, width)))
    result = _weighted(ctx, node, total, mode, list(attrs.get("weights", [])), indexes, width)
    if x_type.rank == 2:
        return [result]
    return [ctx.builder.op("reshape", [result], {"shape": (width,)}, hint=hint(node))]


def _group_counts(ctx, node, rows: str, length: int, size: int, grams: np.ndarray, distances: int) -> str | None:
    """[B, count] f32: how often each pool n-gram of `size` occurs in each row, over every
    skip distance (unigrams at distance 1 only); None when no n-gram of `size` fits."""
    dtype = ctx.builder.type(rows).dtype
    name = f"{hint(node)}.n{size}"
    total = None
    for distance in range(1, (distances if size > 1 else 1) + 1):
        starts = length - (size - 1) * distance
        if starts <= 0:
            break
        matched = None
        for offset in range(size):
            index = ctx.builder.tensor(f"{name}.d{distance}.at{offset}",
                                       np.arange(starts, dtype=np.int64) + offset * distance)
            tokens = ctx.builder.op("gather", [rows, index], {"axis": 1}, hint=f"{name}.tokens")
            tokens = ctx.builder.op("reshape", [tokens], {"shape": (*ctx.builder.type(tokens).shape, 1)},
                                    hint=f"{name}.column")
            wanted = ctx.builder.tensor(f"{name}.pool{offset}", grams[:, offset].astype(dtype.numpy), dtype=dtype)
            hit = ctx.builder.op("eq", [tokens, wanted], hint=f"{name}.hit")  # [B, starts, count]
            matched = hit if matched is None else ctx.builder.op("minimum", [matched, hit], hint=f"{name}.match")
        found = ctx.builder.op("cast", [matched], {"to": DType.f32}, hint=f"{name}.found")
        count = ctx.builder.op("reduce_sum", [found], {"axes": (1,), "keepdims": False}, hint=f"{name}.count")
        total = count if total is None else ctx.builder.op("add", [total, count], hint=f"{name}.total")
    return total


def _weighted(ctx, node, counts: str, mode: str, weights, indexes: list[int], width: int) -> str:
    """The counts under `mode`. ``weights[i]`` is the weight of the pool's i-th n-gram (the
    spec's reading, and onnxruntime's), so it weights that n-gram's output column; where
    two n-grams share a column the later one's weight holds, as onnxruntime places them."""
    name = hint(node)
    if mode == "TF" or (mode == "TFIDF" and not weights):
        return counts
    if weights and len(weights) != len(indexes):
        raise UnsupportedModel(f"TfIdfVectorizer with {len(weights)} weights for {len(indexes)} pool n-grams",
                               expected="one weight per ngram_indexes entry")
    column_weights = np.ones(width, np.float32)
    for position, column in enumerate(indexes if weights else ()):
        column_weights[column] = weights[position]
    scale = ctx.builder.tensor(f"{name}.weights", column_weights)
    if mode == "TFIDF":
        return ctx.builder.op("mul", [counts, scale], hint=name)
    present = ctx.builder.op("gt", [counts, ctx.builder.scalar(0.0, DType.f32)], hint=f"{name}.present")
    return ctx.builder.op("where", [present, scale, ctx.builder.scalar(0.0, DType.f32)], hint=name)


register({"TfIdfVectorizer": convert_tfidf})
