"""ONNX optimizer updates (ai.onnx.preview.training Adagrad, Adam, Momentum): imported as
elementwise formulas and run against the onnx reference evaluator, at the first step and a
later one, for one and two optimized tensors."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import_math import run_imported  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402

STATES = {"Adagrad": ["H"], "Momentum": ["V"], "Adam": ["V", "H"]}
ATTRIBUTES = {
    "Adagrad": {"decay_factor": 0.1, "epsilon": 1e-5, "norm_coefficient": 0.001},
    "Momentum": {"alpha": 0.9, "beta": 0.1, "mode": "standard", "norm_coefficient": 0.01},
    "Nesterov": {"alpha": 0.9, "beta": 0.1, "mode": "nesterov", "norm_coefficient": 0.01},
    "Adam": {"alpha": 0.9, "beta": 0.85, "epsilon": 1e-3, "norm_coefficient": 0.01, "norm_coefficient_post": 0.02},
}


def optimizer_model(op: str, shapes: list[tuple], attributes: dict):
    kinds = ["X", "G"] + STATES[op]
    inputs = ["R", "T"] + [f"{kind}{index}" for kind in kinds for index in range(len(shapes))]
    outputs = [f"{kind}{index}_new" for kind in ["X"] + STATES[op] for index in range(len(shapes))]
    node = helper.make_node(op, inputs, outputs, domain="ai.onnx.preview.training", **attributes)
    declared = [helper.make_tensor_value_info("R", TensorProto.FLOAT, []),
                helper.make_tensor_value_info("T", TensorProto.INT64, [])]
    declared += [helper.make_tensor_value_info(f"{kind}{index}", TensorProto.FLOAT, list(shape))
                 for kind in kinds for index, shape in enumerate(shapes)]
    graph = helper.make_graph([node], "t", declared, [helper.make_tensor_value_info(name, TensorProto.FLOAT, None)
                                                      for name in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("ai.onnx.preview.training", 1),
                                                    helper.make_opsetid("", 17)])
    return model, inputs


@pytest.mark.parametrize("step", [0, 3])
@pytest.mark.parametrize("shapes", [[(4,)], [(3,), (2, 2)]])
@pytest.mark.parametrize("variant", ["Adagrad", "Momentum", "Nesterov", "Adam"])
def test_optimizer_updates_match_the_reference(variant, shapes, step):
    from onnx.reference import ReferenceEvaluator

    op = "Momentum" if variant == "Nesterov" else variant
    model, inputs = optimizer_model(op, shapes, ATTRIBUTES[variant])
    rng = np.random.default_rng(step)
    feeds = {"R": np.array(0.1, np.float32), "T": np.array(step, np.int64)}
    for name in inputs[2:]:
        shape = shapes[int(name[1:])]
        feeds[name] = (rng.uniform(0.1, 2.0, shape) if name[0] == "H" else rng.standard_normal(shape)).astype(np.float32)
    got = run_imported(model, feeds, {"B": shapes[0][0]})
    want = ReferenceEvaluator(model).run(None, feeds)
    for have, expected in zip(got, want):
        np.testing.assert_allclose(have, expected, rtol=1e-5, atol=1e-6)


def test_momentum_of_an_unknown_mode_is_refused():
    model, _ = optimizer_model("Momentum", [(3,)], ATTRIBUTES["Momentum"] | {"mode": "heavy"})
    with pytest.raises(UnsupportedModel, match="Momentum mode 'heavy'"):
        import_onnx(model)
