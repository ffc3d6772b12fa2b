"""ONNX Optional, OptionalHasElement and OptionalGetElement on tensors whose presence is
known while importing, against onnxruntime; reading an absent optional is refused."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import_control import compare_on  # noqa: E402
from test_onnx_import_ops import make_model, ops_of  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402

F, BOOL = TensorProto.FLOAT, TensorProto.BOOL
X = {"x": np.arange(6, dtype=np.float32).reshape(2, 3) - 2}
FLOAT_TENSOR = helper.make_tensor_type_proto(F, [2, 3])


def test_a_present_optional_has_its_element():
    nodes = [helper.make_node("Optional", ["x"], ["maybe"]),
             helper.make_node("OptionalHasElement", ["maybe"], ["has"]),
             helper.make_node("OptionalGetElement", ["maybe"], ["got"]),
             helper.make_node("Relu", ["got"], ["y"])]
    model = make_model(nodes, [("x", F, [2, 3])], [("has", BOOL, []), ("y", F, [2, 3])], opset=18)
    imported = compare_on(model, X, {"B": 2})
    assert ops_of(imported) == ["relu"]  # has is a literal True


def test_an_empty_optional_has_no_element():
    nodes = [helper.make_node("Optional", [], ["maybe"], type=FLOAT_TENSOR),
             helper.make_node("OptionalHasElement", ["maybe"], ["has"]),
             helper.make_node("Relu", ["x"], ["y"])]
    model = make_model(nodes, [("x", F, [2, 3])], [("has", BOOL, []), ("y", F, [2, 3])], opset=18)
    compare_on(model, X, {"B": 2})


@pytest.mark.parametrize("inputs", [[], [""]])
def test_has_element_of_a_missing_input_is_false(inputs):
    nodes = [helper.make_node("OptionalHasElement", inputs, ["has"]), helper.make_node("Relu", ["x"], ["y"])]
    model = make_model(nodes, [("x", F, [2, 3])], [("has", BOOL, []), ("y", F, [2, 3])], opset=18)
    compare_on(model, X, {"B": 2})


def test_get_element_of_a_plain_tensor_is_the_tensor():
    nodes = [helper.make_node("OptionalGetElement", ["x"], ["got"]), helper.make_node("Neg", ["got"], ["y"])]
    model = make_model(nodes, [("x", F, ["N", 3])], [("y", F, ["N", 3])], opset=18)
    assert ops_of(compare_on(model, X, {"B": 2})) == ["neg"]


def test_get_element_of_an_empty_optional_is_a_located_error():
    nodes = [helper.make_node("Optional", [], ["maybe"], type=FLOAT_TENSOR),
             helper.make_node("OptionalGetElement", ["maybe"], ["got"], name="get0"),
             helper.make_node("Add", ["got", "x"], ["y"])]
    model = make_model(nodes, [("x", F, [2, 3])], [("y", F, [2, 3])], opset=18)
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'get0' \(OptionalGetElement\): OptionalGetElement of an "
                                               r"absent optional"):
        import_onnx(model)
