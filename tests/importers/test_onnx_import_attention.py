"""ONNX Attention: imported onto the core attention op (or its decomposition where ONNX
asks for more), run against onnxruntime, compiled on the six targets, and refused where
the model asks for what the IR cannot express."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx_models import run_onnxruntime  # noqa: E402
from test_onnx_import_ops import check, make_model, ops_of  # noqa: E402

from rlxir.compiler import compile  # noqa: E402
from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402

F, BOOL, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64
TARGETS = ("cpu", "cuda", "rocm", "metal", "gpu", "vulkan")


def attention_model(inputs, outputs, initializers=(), opset=23, **attributes):
    """One Attention node; `inputs` and `outputs` are (name, type, shape), "" for a skipped one."""
    node = helper.make_node("Attention", [name for name, _, _ in inputs], [name for name, _, _ in outputs],
                            **attributes)
    given = {name for name, _ in initializers}
    graph_inputs = [(name, kind, shape) for name, kind, shape in inputs if name and name not in given]
    graph_outputs = [(name, kind, shape) for name, kind, shape in outputs if name]
    return make_model([node], graph_inputs, graph_outputs, initializers, opset=opset)


def test_gqa_causal_runs_on_the_core_attention_op_everywhere():
    """8 query heads over 2 key heads, causal: one attention op on grouped [B, 2, 4, S, D]."""
    model = attention_model([("q", F, [2, 8, 5, 16]), ("k", F, [2, 2, 5, 16]), ("v", F, [2, 2, 5, 8])],
                            [("y", F, [2, 8, 5, 8])], is_causal=1)
    imported = check(model, {"B": 2})
    assert ops_of(imported).count("attention") == 1
    assert "softmax" not in ops_of(imported)
    for target in TARGETS:
        assert compile(imported.graph, target, {"B": 2}).arena_bytes > 0, target


def test_3d_inputs_with_past_bool_mask_and_present_outputs():
    """[B, S, H*D] split into heads; the cache joins K and V; a bool mask over all keys."""
    model = attention_model(
        [("q", F, [2, 3, 32]), ("k", F, [2, 3, 16]), ("v", F, [2, 3, 16]), ("mask", BOOL, [3, 7]),
         ("past_k", F, [2, 2, 4, 8]), ("past_v", F, [2, 2, 4, 8])],
        [("y", F, [2, 3, 32]), ("present_k", F, [2, 2, 7, 8]), ("present_v", F, [2, 2, 7, 8])],
        q_num_heads=4, kv_num_heads=2, is_causal=1)
    imported = check(model, {"B": 2})
    assert "attention" in ops_of(imported)


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_softcap_scale_and_qk_output_decompose(mode):
    """softcap and a read qk_matmul_output need the decomposition; the output is taken at the
    step its mode names (0: the scaled QK before the softcap, as the spec and onnxruntime
    say; 1: after it; 2: plus the bias; 3: the probabilities)."""
    model = attention_model([("q", F, [1, 2, 4, 8]), ("k", F, [1, 2, 6, 8]), ("v", F, [1, 2, 6, 8]),
                             ("mask", F, [4, 6]), ("", F, None), ("", F, None)],
                            [("y", F, [1, 2, 4, 8]), ("", F, None), ("", F, None), ("qk", F, [1, 2, 4, 6])],
                            softcap=2.0, scale=0.3, qk_matmul_output_mode=mode)
    imported = check(model, {"B": 1})
    assert "attention" not in ops_of(imported)
    assert "tanh" in ops_of(imported)


def test_fully_masked_rows_give_zero_rows():
    """A query that may read no key gives a zero row (the softmax alone would give NaN)."""
    mask = np.array([[True, False, True], [False, False, False]])
    model = attention_model([("q", F, [1, 1, 2, 4]), ("k", F, [1, 1, 3, 4]), ("v", F, [1, 1, 3, 4]),
                             ("mask", BOOL, [2, 3])], [("y", F, [1, 1, 2, 4])], [("mask", mask)])
    imported = import_onnx(model)
    rng = np.random.default_rng(0)
    feeds = {imported.inputs[name]: rng.standard_normal(shape).astype(np.float32)
             for name, shape in (("q", (1, 1, 2, 4)), ("k", (1, 1, 3, 4)), ("v", (1, 1, 3, 4)))}
    y = interpret(imported.graph, feeds, dict(imported.params))[imported.outputs["y"]]
    assert np.all(y[0, 0, 1] == 0) and np.all(np.isfinite(y))


def test_sliding_window_and_nonpad_lengths():
    """Opset 25's window and opset 24's per-batch key lengths become the bias."""
    model = attention_model([("q", F, [2, 2, 4, 8]), ("k", F, [2, 2, 6, 8]), ("v", F, [2, 2, 6, 8]),
                             ("", F, None), ("", F, None), ("", F, None), ("lengths", I64, [2])],
                            [("y", F, [2, 2, 4, 8])], opset=25, is_causal=1, left_window_size=2)
    check(model, {"B": 2})


def test_3d_inputs_without_head_counts_are_refused():
    model = attention_model([("q", F, [2, 3, 32]), ("k", F, [2, 3, 16]), ("v", F, [2, 3, 16])],
                            [("y", F, [2, 3, 32])])
    with pytest.raises(UnsupportedModel, match="q_num_heads and kv_num_heads"):
        import_onnx(model)


def test_causal_after_a_past_of_symbolic_length():
    """A decoder's cache: the past length P is a symbol, so the causal offset is computed when
    the graph runs; checked at P = 3 and P = 6 against onnxruntime."""
    model = attention_model([("q", F, ["B", 2, 2, 8]), ("k", F, ["B", 2, 2, 8]), ("v", F, ["B", 2, 2, 8]),
                             ("", F, None), ("past_k", F, ["B", 2, "P", 8]), ("past_v", F, ["B", 2, "P", 8])],
                            [("y", F, ["B", 2, 2, 8]), ("present_k", F, None), ("present_v", F, None)], is_causal=1)
    imported = import_onnx(model)
    rng = np.random.default_rng(0)
    for past in (3, 6):
        feeds = {name: rng.standard_normal(shape).astype(np.float32)
                 for name, shape in (("q", (1, 2, 2, 8)), ("k", (1, 2, 2, 8)), ("v", (1, 2, 2, 8)),
                                     ("past_k", (1, 2, past, 8)), ("past_v", (1, 2, past, 8)))}
        got = interpret(imported.graph, {imported.inputs[name]: array for name, array in feeds.items()},
                        dict(imported.params), {"B": 1, "P": past})
        for value, want in zip(imported.outputs.values(), run_onnxruntime(model, feeds)):
            np.testing.assert_allclose(got[value], want, rtol=1e-5, atol=1e-6)
