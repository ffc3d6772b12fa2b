"""ONNX TensorScatter (opset 24, a KV cache's update) against the pseudocode of its
specification: each sample's rows written from its own index, wrapped round the cache in
circular mode, with and without write indices, over a symbolic batch, and refused with a
reason where the importer cannot express it."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import_ops import make_model, ops_of  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def reference(past: np.ndarray, update: np.ndarray, writes: np.ndarray | None, axis: int, mode: str) -> np.ndarray:
    """The specification's loop, as written there."""
    axis = axis % past.ndim
    present = past.copy()
    longest = past.shape[axis]
    for prefix in np.ndindex(past.shape[:axis]):
        start = 0 if writes is None else int(writes[prefix[0]])
        for step in range(update.shape[axis]):
            at = start + step
            if mode == "circular":
                at %= longest
            present[(*prefix, at)] = update[(*prefix, step)]
    return present


def run(past, update, writes=None, bindings=None, **attributes):
    inputs = [("past", F, list(past.shape)), ("update", F, list(update.shape))]
    names = ["past", "update"]
    if writes is not None:
        inputs.append(("writes", I64, [len(writes)]))
        names.append("writes")
    node = helper.make_node("TensorScatter", names, ["present"], **attributes)
    model = make_model([node], inputs, [("present", F, list(past.shape))], opset=24)
    imported = import_onnx(model)
    feeds = {imported.inputs["past"]: past, imported.inputs["update"]: update}
    if writes is not None:
        feeds[imported.inputs["writes"]] = writes
    got = interpret(imported.graph, feeds, bindings=bindings)[imported.outputs["present"]]
    return imported, got


def arrays(cache_shape, steps, axis, seed=0):
    rng = np.random.default_rng(seed)
    update_shape = list(cache_shape)
    update_shape[axis] = steps
    past = rng.standard_normal(cache_shape).astype(np.float32)
    return past, rng.standard_normal(update_shape).astype(np.float32)


def test_each_sample_written_from_its_own_index_along_the_default_axis():
    past, update = arrays((3, 2, 6, 4), 2, 2)
    writes = np.array([0, 3, 4], np.int64)
    imported, got = run(past, update, writes)
    np.testing.assert_array_equal(got, reference(past, update, writes, -2, "linear"))
    assert ops_of(imported)[-1] == "scatter_elements"


def test_circular_mode_wraps_round_the_cache():
    past, update = arrays((2, 6, 3), 3, 1)
    writes = np.array([5, 1], np.int64)
    _, got = run(past, update, writes, axis=1, mode="circular")
    want = reference(past, update, writes, 1, "circular")
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got[0, [5, 0, 1]], update[0])  # sample 0 went past the end


def test_without_write_indices_every_sample_starts_at_zero():
    past, update = arrays((2, 5, 3), 2, 1)
    _, got = run(past, update, axis=-2)
    np.testing.assert_array_equal(got, reference(past, update, None, 1, "linear"))
    np.testing.assert_array_equal(got[:, 2:], past[:, 2:])


def test_a_symbolic_batch():
    past, update = arrays((3, 4, 2), 1, 1)
    writes = np.array([3, 0, 2], np.int64)
    node = helper.make_node("TensorScatter", ["past", "update", "writes"], ["present"], axis=1, mode="circular")
    model = make_model([node], [("past", F, ["N", 4, 2]), ("update", F, ["N", 1, 2]), ("writes", I64, ["N"])],
                       [("present", F, ["N", 4, 2])], opset=24)
    imported = import_onnx(model)
    assert imported.graph.symbols  # the batch stayed a symbol
    feeds = {imported.inputs["past"]: past, imported.inputs["update"]: update, imported.inputs["writes"]: writes}
    got = interpret(imported.graph, feeds, bindings={name: 3 for name in imported.graph.symbols})
    np.testing.assert_array_equal(got[imported.outputs["present"]], reference(past, update, writes, 1, "circular"))


def test_a_linear_write_past_the_end_fails_when_the_graph_runs():
    past, update = arrays((1, 4, 2), 2, 1)
    with pytest.raises(Exception, match="scatter_elements index 4 is out of range"):
        run(past, update, np.array([3], np.int64), axis=1)


@pytest.mark.parametrize(("attributes", "reason"), [({"mode": "ring"}, "mode 'ring'"),
                                                    ({"axis": 0}, "axis 0")])
def test_refused_with_a_reason(attributes, reason):
    node = helper.make_node("TensorScatter", ["past", "update"], ["present"], **attributes)
    model = make_model([node], [("past", F, [2, 4, 3]), ("update", F, [2, 1, 3])], [("present", F, [2, 4, 3])],
                       opset=24)
    with pytest.raises(UnsupportedModel, match=reason):
        import_onnx(model)
