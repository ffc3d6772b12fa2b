"""ONNX RotaryEmbedding, SwiGLU, CausalConvWithState and LinearAttention: imported onto core
ops and run against onnxruntime (RotaryEmbedding) or, for the ops onnxruntime does not run
yet, against the onnx package's reference evaluator; refused where the model asks for what
ONNX does not define."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from test_onnx_import_ops import check, make_model, ops_of  # noqa: E402

from rlxir.compiler.compile import compile  # noqa: E402
from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64
TARGETS = ("cpu", "cuda", "rocm", "metal", "gpu", "vulkan")


def single_node(op, inputs, outputs, opset, initializers=(), **attributes):
    """One `op` node; `inputs` and `outputs` are (name, type, shape), "" for a skipped one."""
    node = helper.make_node(op, [name for name, _, _ in inputs], [name for name, _, _ in outputs], **attributes)
    given = {name for name, _ in initializers}
    return make_model([node], [entry for entry in inputs if entry[0] and entry[0] not in given],
                      [entry for entry in outputs if entry[0]], initializers, opset=opset)


def against_reference(model, feeds: dict, bindings: dict, rtol=1e-5, atol=1e-5):
    """The interpreter's outputs against onnx's ReferenceEvaluator on `feeds`."""
    imported = import_onnx(model)
    got = interpret(imported.graph, {imported.inputs[name]: array for name, array in feeds.items()},
                    dict(imported.params), bindings)
    expected = ReferenceEvaluator(model).run(None, feeds)
    for (onnx_name, value), want in zip(imported.outputs.items(), expected):
        np.testing.assert_allclose(got[value], want, rtol=rtol, atol=atol, err_msg=onnx_name)
    return imported


def random(*shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


# --- RotaryEmbedding -------------------------------------------------------------------
@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_on_3d_input_with_position_ids_and_a_partial_rotation(interleaved):
    angles = np.arange(8)[:, None] * np.array([1.0, 0.1])[None, :]
    model = single_node("RotaryEmbedding", [("x", F, [2, 3, 16]), ("cos", F, [8, 2]), ("sin", F, [8, 2]),
                                            ("pos", I64, [2, 3])], [("y", F, [2, 3, 16])], 23,
                        [("cos", np.cos(angles).astype(np.float32)), ("sin", np.sin(angles).astype(np.float32))],
                        num_heads=2, rotary_embedding_dim=4, interleaved=interleaved)
    imported = check(model, {"B": 2})
    assert "gather" in ops_of(imported)


def test_rotary_on_4d_input_with_per_position_rows():
    model = single_node("RotaryEmbedding", [("x", F, [2, 4, 3, 8]), ("cos", F, [2, 3, 4]), ("sin", F, [2, 3, 4])],
                        [("y", F, [2, 4, 3, 8])], 23)
    check(model, {"B": 2})


# --- SwiGLU ----------------------------------------------------------------------------
@pytest.mark.parametrize("alpha", [1.0, 1.702])
def test_swiglu(alpha):
    model = single_node("SwiGLU", [("a", F, [2, 6]), ("b", F, [2, 6])], [("y", F, [2, 6])], 28, alpha=alpha)
    imported = against_reference(model, {"a": random(2, 6), "b": random(2, 6, seed=1)}, {"B": 2})
    assert ("silu" in ops_of(imported)) == (alpha == 1.0)


# --- CausalConvWithState ---------------------------------------------------------------
def test_causal_conv_with_past_bias_and_silu_compiles_everywhere():
    model = single_node("CausalConvWithState", [("x", F, [2, 4, 6]), ("w", F, [4, 1, 3]), ("bias", F, [4]),
                                                ("past", F, [2, 4, 2])],
                        [("y", F, [2, 4, 6]), ("present", F, [2, 4, 2])], 27,
                        [("w", random(4, 1, 3, seed=1)), ("bias", random(4, seed=2))], activation="silu")
    imported = against_reference(model, {"x": random(2, 4, 6), "past": random(2, 4, 2, seed=3)}, {"B": 2})
    assert "conv2d" in ops_of(imported)
    for target in TARGETS:
        assert compile(imported.graph, target, {"B": 2}).arena_bytes > 0, target


def test_causal_conv_without_past_starts_from_zeros():
    model = single_node("CausalConvWithState", [("x", F, [2, 3, 2]), ("w", F, [3, 1, 4])],
                        [("y", F, [2, 3, 2]), ("present", F, [2, 3, 3])], 27, [("w", random(3, 1, 4, seed=1))])
    against_reference(model, {"x": random(2, 3, 2)}, {"B": 2})


def test_causal_conv_with_another_activation_is_refused():
    model = single_node("CausalConvWithState", [("x", F, [2, 3, 5]), ("w", F, [3, 1, 2])], [("y", F, [2, 3, 5])], 27,
                        [("w", random(3, 1, 2))], activation="gelu")
    with pytest.raises(UnsupportedModel, match="activation 'gelu'"):
        import_onnx(model)


# --- LinearAttention -------------------------------------------------------------------
@pytest.mark.parametrize(("rule", "decay_width", "chunk"), [
    ("linear", 0, 2), ("linear", 0, 64), ("gated", 8, 2), ("gated", 2, 2), ("gated", 8, 64), ("delta", 0, 2),
    ("delta", 0, 64), ("gated_delta", 8, 3), ("gated_delta", 2, 64), ("gated_delta", 8, 64)])
def test_linear_attention_rules_with_gqa_and_past_state(rule, decay_width, chunk):
    """4 query heads over 2 key heads of 4 features, 5 positions, a past state, in chunks of
    `chunk` positions (the delta rules' triangular systems of 1 to 5 rows, padded to powers
    of two); the decay per key feature (width 8) or per head (width 2)."""
    batch, steps = 2, 5
    inputs = [("q", F, [batch, steps, 16]), ("k", F, [batch, steps, 8]), ("v", F, [batch, steps, 6]),
              ("past", F, [batch, 2, 4, 3])]
    feeds = {"q": random(batch, steps, 16), "k": random(batch, steps, 8, seed=1, scale=0.5),
             "v": random(batch, steps, 6, seed=2), "past": random(batch, 2, 4, 3, seed=3)}
    inputs.append(("decay", F, [batch, steps, decay_width]) if decay_width else ("", F, None))
    if decay_width:
        feeds["decay"] = -np.abs(random(batch, steps, decay_width, seed=4))
    if "delta" in rule:
        inputs.append(("beta", F, [batch, steps, 2]))
        feeds["beta"] = np.abs(random(batch, steps, 2, seed=5)) / 2
    model = single_node("LinearAttention", inputs, [("y", F, [batch, steps, 12]), ("state", F, [batch, 2, 4, 3])],
                        27, q_num_heads=4, kv_num_heads=2, update_rule=rule, scale=0.4, chunk_size=chunk)
    imported = against_reference(model, feeds, {"B": batch})
    chunks = [name for name in imported.graph.ops() if name.endswith(".from_chunk")]
    assert len(chunks) == -(-steps // chunk)
    if rule == "gated_delta" and chunk == 3:
        for target in TARGETS:
            assert compile(imported.graph, target, {"B": batch}).arena_bytes > 0, target


def test_linear_attention_gated_without_decay_is_refused():
    model = single_node("LinearAttention", [("q", F, [2, 3, 8]), ("k", F, [2, 3, 8]), ("v", F, [2, 3, 8])],
                        [("y", F, [2, 3, 8])], 27, q_num_heads=2, kv_num_heads=2, update_rule="gated")
    with pytest.raises(UnsupportedModel, match="without a decay input"):
        import_onnx(model)
