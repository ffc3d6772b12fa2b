"""ONNX RNN, GRU and LSTM unrolled over a static sequence length, against onnxruntime: every
direction and layout, initial states, biases, sequence_lens (static and fed at run time),
activations with their alpha/beta, clip, LSTM peepholes and input_forget, GRU
linear_before_reset; refusals name what the IR cannot express."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import_ops import make_model, weights  # noqa: E402
from test_onnx_import_scatter import check_everywhere  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402

F, I32 = TensorProto.FLOAT, TensorProto.INT32
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
STEPS, BATCH, INPUT, HIDDEN = 4, 3, 5, 6


def _model(op, *, layout=0, direction="forward", lengths=None, lengths_fed=False, initial=True, outputs=None,
           steps=STEPS, opset=17, **attributes):
    """One `op` node with random W, R, B (and P for LSTM) as initializers; X, and the initial
    states when `initial`, are inputs. `lengths`: sequence_lens (an initializer, or an input
    when `lengths_fed`)."""
    directions = 2 if direction == "bidirectional" else 1
    width = GATES[op] * HIDDEN
    x_shape = [steps, BATCH, INPUT] if layout == 0 else [BATCH, steps, INPUT]
    state_shape = [directions, BATCH, HIDDEN] if layout == 0 else [BATCH, directions, HIDDEN]
    inputs = [("x", F, x_shape)]
    initializers = [("w", weights(directions, width, INPUT, seed=1)), ("r", weights(directions, width, HIDDEN, seed=2)),
                    ("b", weights(directions, 2 * width, seed=3))]
    names = ["x", "w", "r", "b", "", "", ""]
    if lengths is not None:
        names[4] = "lens"
        if lengths_fed:
            inputs.append(("lens", I32, [BATCH]))
        else:
            initializers.append(("lens", np.asarray(lengths, np.int32)))
    if initial:
        names[5] = "h0"
        inputs.append(("h0", F, state_shape))
        if op == "LSTM":
            names[6] = "c0"
            inputs.append(("c0", F, state_shape))
    if op == "LSTM" and attributes.pop("peepholes", False):
        names.append("p")
        initializers.append(("p", weights(directions, 3 * HIDDEN, seed=4)))
    while names and not names[-1]:
        names.pop()
    outputs = outputs or (["y", "y_h", "y_c"] if op == "LSTM" else ["y", "y_h"])
    node = helper.make_node(op, names, outputs, hidden_size=HIDDEN, direction=direction, name="cell",
                            **({"layout": layout} if layout else {}), **attributes)
    return make_model([node], inputs, [(name, F, None) for name in outputs if name], initializers, opset=opset)


def _check(op, layout=0, feeds=None, steps=STEPS, **arguments):
    """Import the `op` model of `arguments` (`_model`) in `layout` and compare it with
    onnxruntime, which runs only layout 0: a batch-major case is compared with its
    time-major twin on transposed feeds. In layout 0 the sequence axis leads, so the import
    fixes it to its size."""
    from onnx_models import run_onnxruntime

    from rlxir.interpreter import interpret

    model = _model(op, layout=layout, steps=steps, **arguments)
    imported = import_onnx(model, **({"batch_size": steps} if layout == 0 else {}))
    feeds = feeds or _random_feeds(model)
    to_time_major = {name: np.swapaxes(value, 0, 1) if layout == 1 and value.ndim == 3 else value
                     for name, value in feeds.items()}
    want = run_onnxruntime(_model(op, layout=0, steps=steps, **arguments), to_time_major)
    got = interpret(imported.graph, {imported.inputs[name]: value for name, value in feeds.items()},
                    dict(imported.params))
    for (onnx_name, value), expected in zip(imported.outputs.items(), want):
        if layout == 1:
            expected = np.transpose(expected, (2, 0, 1, 3) if expected.ndim == 4 else (1, 0, 2))
        np.testing.assert_allclose(got[value], expected, rtol=1e-4, atol=1e-5, err_msg=onnx_name)
    return imported


def _random_feeds(model) -> dict:
    rng = np.random.default_rng(7)
    shapes = {info.name: [dim.dim_value for dim in info.type.tensor_type.shape.dim] for info in model.graph.input}
    return {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout", [0, 1])
def test_every_direction_and_layout(op, direction, layout):
    _check(op, layout, direction=direction)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_sequence_lens_fed_at_run_time_masks_each_entry(op):
    """Entries of lengths 4, 2, 1: past its end an entry keeps its state and outputs zeros;
    the reverse direction starts at each entry's own last step."""
    rng = np.random.default_rng(5)
    feeds = {"x": rng.standard_normal((BATCH, STEPS, INPUT)).astype(np.float32),
             "lens": np.array([4, 2, 1], np.int32),
             "h0": rng.standard_normal((BATCH, 2, HIDDEN)).astype(np.float32)}
    if op == "LSTM":
        feeds["c0"] = rng.standard_normal((BATCH, 2, HIDDEN)).astype(np.float32)
    _check(op, 1, feeds, direction="bidirectional", lengths=[0] * BATCH, lengths_fed=True)


def test_static_full_sequence_lens_masks_nothing():
    imported = _check("GRU", lengths=[STEPS] * BATCH)
    assert "where" not in {imported.graph.op(name) for name in imported.graph.ops()}


def test_lstm_peepholes_clip_and_input_forget():
    _check("LSTM", direction="bidirectional", peepholes=True, clip=0.5, input_forget=1)


@pytest.mark.parametrize("linear_before_reset", [0, 1])
def test_gru_linear_before_reset(linear_before_reset):
    _check("GRU", direction="reverse", linear_before_reset=linear_before_reset)


@pytest.mark.parametrize("op", ["RNN", "GRU"])
def test_clip_bounds_every_gate_input(op):
    _check(op, direction="bidirectional", clip=0.3)


@pytest.mark.parametrize("op, activations, alpha, beta", [
    ("RNN", ["LeakyRelu", "Affine"], [0.3, 0.7], [0.2]),
    ("RNN", ["Relu", "ThresholdedRelu"], [0.1], []),
    ("GRU", ["HardSigmoid", "Elu", "Sigmoid", "Softsign"], [0.3, 0.5], [0.4]),
    ("LSTM", ["Sigmoid", "ScaledTanh", "Softplus", "HardSigmoid", "Tanh", "Tanh"], [0.9, 0.25], [1.1, 0.6]),
])
def test_activations_take_their_alpha_and_beta_in_order(op, activations, alpha, beta):
    """Alphas and betas are consumed, in order, by the functions that take them."""
    extra = {"activation_alpha": alpha, **({"activation_beta": beta} if beta else {})}
    _check(op, direction="bidirectional", activations=activations, **extra)


def test_only_the_read_outputs_are_built_and_no_initial_state():
    imported = _check("LSTM", outputs=["", "y_h"], initial=False)
    assert list(imported.outputs) == ["y_h"]


def test_an_unrolled_lstm_compiles_on_every_target():
    check_everywhere(_model("LSTM", steps=2), batch_size=2)


def test_a_symbolic_sequence_length_is_a_located_error():
    node = helper.make_node("RNN", ["x", "w", "r"], ["y"], hidden_size=HIDDEN, layout=1, name="cell")
    model = make_model([node], [("x", F, ["N", "T", INPUT])], [("y", F, None)],
                       [("w", weights(1, HIDDEN, INPUT)), ("r", weights(1, HIDDEN, HIDDEN))])
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'cell' \(RNN\): a sequence length of T"):
        import_onnx(model)


def test_an_unknown_activation_is_a_located_error():
    model = _model("RNN", activations=["Gelu"])
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'cell' \(RNN\): activation 'gelu'"):
        import_onnx(model, batch_size=STEPS)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
def test_a_torch_export_of_a_stacked_bidirectional_batch_first_network_matches_torch(kind):
    """torch.onnx.export of two bidirectional layers, batch first with a dynamic batch: the
    sequence axis is static after the exporter's transpose."""
    import io

    torch = pytest.importorskip("torch")
    from rlxir.interpreter import interpret

    torch.manual_seed(0)
    network = getattr(torch.nn, kind)(INPUT, HIDDEN, num_layers=2, batch_first=True, bidirectional=True).eval()
    x = torch.randn(BATCH, STEPS, INPUT)
    buffer = io.BytesIO()
    torch.onnx.export(network, (x,), buffer, opset_version=17, dynamo=False, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "batch"}})
    imported = import_onnx(onnx.load_from_string(buffer.getvalue()))
    got = interpret(imported.graph, {imported.inputs["x"]: x.numpy()}, dict(imported.params), {"B": BATCH})
    with torch.no_grad():
        want = network(x)[0].numpy()
    np.testing.assert_allclose(got[imported.outputs["y"]], want, rtol=1e-4, atol=1e-5)
