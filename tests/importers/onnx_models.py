"""Helpers for the ONNX importer tests: the onnx wheel's real models, random weights,
and running a model with onnxruntime next to the interpreter."""

from __future__ import annotations

from pathlib import Path

import numpy as np

onnx = __import__("pytest").importorskip("onnx")
from onnx import numpy_helper  # noqa: E402

LIGHT_MODELS = ("bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet",
                "squeezenet", "vgg19", "zfnet512")


def light_model_path(name: str) -> Path:
    """The onnx wheel's light model `name` (onnx/backend/test/data/light)."""
    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"light_{name}.onnx"


def with_random_weights(model: "onnx.ModelProto", seed: int = 0, scale: float = 0.1) -> "onnx.ModelProto":
    """`model` with every static-shape ConstantOfShape (the light models' weights, all
    0.02) replaced by a random float32 initializer of the same name, and every float
    initializer of more than one element made random too: a real check of semantics."""
    rng = np.random.default_rng(seed)
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    initializers = {tensor.name: numpy_helper.to_array(tensor) for tensor in graph.initializer}
    kept, made = [], []
    for node in graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in initializers:
            shape = tuple(int(dim) for dim in initializers[node.input[0]])
            made.append(numpy_helper.from_array(_random(rng, shape, node.output[0], scale), node.output[0]))
            continue
        kept.append(node)
    del graph.node[:]
    graph.node.extend(kept)
    for index, tensor in enumerate(graph.initializer):
        array = numpy_helper.to_array(tensor)
        if array.dtype == np.float32 and array.size > 1:
            graph.initializer[index].CopyFrom(numpy_helper.from_array(_random(rng, array.shape, tensor.name, scale),
                                                                      tensor.name))
    graph.initializer.extend(made)
    return model


def _random(rng, shape, name: str, scale: float) -> np.ndarray:
    # Variances and scales must stay positive; everything else is centred.
    if any(key in name for key in ("var", "riv", "_s_", "scale")):
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    return (rng.standard_normal(shape) * (scale if len(shape) < 2 else 1 / np.sqrt(fan_in))).astype(np.float32)


def run_onnxruntime(model: "onnx.ModelProto", feeds: dict) -> list[np.ndarray]:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 2
    options.log_severity_level = 3
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def random_inputs(model: "onnx.ModelProto", imported, seed: int = 1, bindings=None) -> dict[str, np.ndarray]:
    """Random feeds for every graph input, shaped as the imported graph binds them."""
    from rlxir.interpreter import bind_for_run

    bound = bind_for_run(imported.graph, bindings)
    rng = np.random.default_rng(seed)
    feeds = {}
    for onnx_name, value in imported.inputs.items():
        type_ = bound.type(value)
        shape = type_.static_shape()
        if type_.dtype.is_float:
            feeds[onnx_name] = rng.standard_normal(shape).astype(type_.dtype.numpy)
        else:
            feeds[onnx_name] = rng.integers(0, 4, shape).astype(type_.dtype.numpy)
    return feeds


def compare_with_onnxruntime(model: "onnx.ModelProto", imported, rtol=1e-4, atol=1e-5, bindings=None) -> float:
    """Run both on the same random inputs; assert the outputs match; return the largest
    absolute difference."""
    from rlxir.interpreter import interpret

    feeds = random_inputs(model, imported, bindings=bindings)
    expected = run_onnxruntime(model, feeds)
    inputs = {imported.inputs[name]: array for name, array in feeds.items()}
    got = interpret(imported.graph, inputs, dict(imported.params), bindings)
    worst = 0.0
    for (onnx_name, value), want in zip(imported.outputs.items(), expected):
        have = got[value]
        assert have.shape == want.shape, (onnx_name, have.shape, want.shape)
        np.testing.assert_allclose(have, want, rtol=rtol, atol=atol, err_msg=onnx_name)
        if have.size:
            worst = max(worst, float(np.max(np.abs(have.astype(np.float64) - want))))
    return worst
