"""Equal types are one object where the graph stores them (`rlxir.types.canonical_type`):
dict lookups keyed by types then compare by identity. Equality itself never depends on it."""

from __future__ import annotations

import rlxir
import rlxir.types
from rlxir.dtypes import DType
from rlxir.types import TensorType, canonical_type

TEXT = """graph g(B=2) {
  input %x : f32[B, 8]
  param %w : f32[8, 8]
  %a = matmul(%x, %w) : f32[B, 8]
  %b = relu(%a)
  %c = add(%b, %x)
  output %c
}
"""


def test_parsed_inferred_and_bound_types_are_one_object_per_distinct_type():
    graph = rlxir.parse(TEXT).main
    types = [graph.type(name) for name in ("x", "a", "b", "c")]
    assert all(type_ is types[0] for type_ in types)
    bound = graph.bind(B=3)
    assert all(bound.type(name) is bound.type("x") for name in ("a", "b", "c"))
    assert bound.type("x") == TensorType(DType.f32, (3, 8)) and bound.type("x") is not graph.type("x")
    added = graph.add_op("neg", ["c"])
    assert graph.type(added) is types[0]


def test_canonical_type_keeps_equality_and_a_bounded_table(monkeypatch):
    monkeypatch.setattr(rlxir.types, "_CANONICAL", {})
    monkeypatch.setattr(rlxir.types, "_CANONICAL_LIMIT", 3)
    first = canonical_type(TensorType(DType.f32, (1, 2)))
    assert canonical_type(TensorType(DType.f32, (1, 2))) is first
    assert canonical_type(TensorType(DType.f16, (1, 2))) is not first  # dtype is part of the type
    for size in range(3, 8):
        canonical_type(TensorType(DType.f32, (size,)))
    assert len(rlxir.types._CANONICAL) <= 3  # the table is cleared when full, not grown
    again = canonical_type(TensorType(DType.f32, (1, 2)))
    assert again == first and hash(again) == hash(first)


def test_a_dtype_is_its_own_key_in_this_process_and_after_a_pickle():
    import pickle

    members = list(DType)
    table = {dtype: dtype.value for dtype in members}
    assert all(table[DType(dtype.value)] == dtype.value for dtype in members)
    assert {pickle.loads(pickle.dumps(dtype)) for dtype in members} == set(members)
    assert len({hash(dtype) for dtype in members}) == len(members)
    assert DType.f32 != "f32" and "f32" not in table  # a dtype is not its spelling
