"""ONNX Attention and FlexAttention: imported onto the core attention op (or its
decomposition where ONNX asks for more), run against onnxruntime (FlexAttention against the
onnx reference evaluator), compiled on the six targets, and refused where the model asks for
what the IR cannot express."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from onnx_models import run_onnxruntime  # noqa: E402
from test_onnx_import_ops import check, make_model, ops_of  # noqa: E402

from rlxir.compiler.compile import compile  # noqa: E402
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


# --- FlexAttention ---------------------------------------------------------------------
def flex_model(q_heads=4, kv_heads=2, dtype=F, **attributes):
    node = helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], domain="ai.onnx.preview", **attributes)
    graph = helper.make_graph([node], "flex", [helper.make_tensor_value_info("q", dtype, [2, q_heads, 5, 8]),
                                                helper.make_tensor_value_info("k", dtype, [2, kv_heads, 6, 8]),
                                                helper.make_tensor_value_info("v", dtype, [2, kv_heads, 6, 4])],
                              [helper.make_tensor_value_info("y", dtype, [2, q_heads, 5, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 26),
                                                    helper.make_opsetid("ai.onnx.preview", 1)])
    model.ir_version = 10
    return model


def against_reference(model, bindings, rtol=1e-5, atol=1e-6):
    """The interpreter against onnx's reference evaluator (onnxruntime lacks FlexAttention)."""
    imported = import_onnx(model)
    rng = np.random.default_rng(0)
    feeds = {value.name: rng.standard_normal([dim.dim_value for dim in value.type.tensor_type.shape.dim]).astype(
        helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)) for value in model.graph.input}
    got = interpret(imported.graph, {imported.inputs[name]: array for name, array in feeds.items()},
                    dict(imported.params), bindings)
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    np.testing.assert_allclose(got[imported.outputs["y"]], want, rtol=rtol, atol=atol)
    return imported


def causal_score_mod():
    """where(q_idx >= k_idx, scores, -inf), the positions made from Shape(scores)."""
    nodes = [helper.make_node("Shape", ["scores"], ["shape"]),
             helper.make_node("Gather", ["shape", "two"], ["rows"], axis=0),
             helper.make_node("Gather", ["shape", "three"], ["columns"], axis=0),
             helper.make_node("Range", ["zero", "rows", "one"], ["row_ids"]),
             helper.make_node("Unsqueeze", ["row_ids", "last"], ["row_column"]),
             helper.make_node("Range", ["zero", "columns", "one"], ["column_ids"]),
             helper.make_node("GreaterOrEqual", ["row_column", "column_ids"], ["keep"]),
             helper.make_node("Where", ["keep", "scores", "minus_inf"], ["scores_out"])]
    constants = [numpy_helper.from_array(np.array(value, dtype), name) for name, value, dtype in
                 (("two", 2, np.int64), ("three", 3, np.int64), ("zero", 0, np.int64), ("one", 1, np.int64),
                  ("last", [-1], np.int64), ("minus_inf", -np.inf, np.float32))]
    return helper.make_graph(nodes, "causal", [helper.make_tensor_value_info("scores", F, None)],
                             [helper.make_tensor_value_info("scores_out", F, None)], constants)


def test_flex_attention_without_mods_is_the_core_op():
    imported = against_reference(flex_model(scale=0.2), {"B": 2})
    assert ops_of(imported).count("attention") == 1


def test_flex_attention_score_and_prob_mods_are_converted_in_place():
    prob_mod = helper.make_graph([helper.make_node("Mul", ["p", "half"], ["p_out"])], "halve",
                                 [helper.make_tensor_value_info("p", F, None)],
                                 [helper.make_tensor_value_info("p_out", F, None)],
                                 [numpy_helper.from_array(np.array(0.5, np.float32), "half")])
    imported = against_reference(flex_model(score_mod=causal_score_mod(), prob_mod=prob_mod), {"B": 2})
    assert "attention" not in ops_of(imported) and "softmax" in ops_of(imported)


def test_flex_attention_of_f16_runs_the_softmax_in_f32():
    imported = against_reference(flex_model(dtype=TensorProto.FLOAT16), {"B": 2}, rtol=2e-3, atol=2e-3)
    graph = imported.graph
    assert any(graph.op(name) == "softmax" and graph.type(name).dtype.value == "f32" for name in graph.ops())


def test_flex_attention_mod_of_two_outputs_is_refused():
    bad = helper.make_graph([helper.make_node("Identity", ["s"], ["a"]), helper.make_node("Identity", ["s"], ["b"])],
                            "two", [helper.make_tensor_value_info("s", F, None)],
                            [helper.make_tensor_value_info("a", F, None), helper.make_tensor_value_info("b", F, None)])
    with pytest.raises(UnsupportedModel, match="score_mod of 1 inputs and 2 outputs"):
        import_onnx(flex_model(score_mod=bad))
