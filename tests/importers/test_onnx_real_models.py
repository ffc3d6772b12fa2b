"""The onnx wheel's real-architecture test models (onnx/backend/test/data/light, opset 9,
weights stored as ConstantOfShape): each imports, compiles on all six targets, and a few
match onnxruntime once their weights are made random."""

from __future__ import annotations

import pytest

onnx = pytest.importorskip("onnx")
from onnx_models import LIGHT_MODELS, compare_with_onnxruntime, light_model_path, with_random_weights  # noqa: E402

from rlxir.compiler.compile import compile  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402

TARGETS = ("cpu", "cuda", "rocm", "metal", "gpu", "vulkan")


def light(name: str):
    path = light_model_path(name)
    if not path.exists():
        pytest.skip(f"this onnx wheel does not ship {path.name}")
    return onnx.load(str(path))


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_imports_and_compiles_on_every_target(name):
    imported = import_onnx(light(name))
    graph = imported.graph
    assert graph.symbols == {"B": 1}
    assert graph.params() and set(imported.params) == set(graph.params())
    for target in TARGETS:
        result = compile(graph, target, {"B": 1})
        assert result.arena_bytes >= result.lower_bound_bytes > 0


def test_a_larger_batch_binds_through_the_flattening_reshape():
    graph = import_onnx(light("resnet50")).graph
    one = compile(graph, "rocm", {"B": 1}).arena_bytes
    four = compile(graph, "rocm", {"B": 4}).arena_bytes
    assert four > one
    assert str(graph.bind(B=4).type(graph.outputs[0])) == "f32[4, 1000]"


@pytest.mark.parametrize("name", ["squeezenet", "shufflenet", "inception_v1"])
def test_matches_onnxruntime_with_random_weights(name):
    pytest.importorskip("onnxruntime")
    model = with_random_weights(light(name))
    compare_with_onnxruntime(model, import_onnx(model), rtol=1e-3, atol=1e-6)
