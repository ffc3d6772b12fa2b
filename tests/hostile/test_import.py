"""`rlxir import` writes only text rlxir reads back; names and dims it cannot carry are errors."""

from __future__ import annotations

import pytest

from rlxir.ir.parser import parse_file
from rlxir.testing.fuzz import write_input

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402


def relu_model(path, dims, name="g"):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], name, [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--name", "123", "--name '123' is not a name"),
    ("--name", "my graph", "--name 'my graph' is not a name"),
    ("--batch-dim", "f32", "--batch-dim 'f32' is a dtype name"),
    ("--batch-dim", "B.x", "--batch-dim 'B.x' is not a name"),
])
def test_names_the_text_cannot_carry_are_refused(cli, tmp_path, flag, value, message):
    model = relu_model(tmp_path / "m.onnx", ["N", 4])
    code, out, err = cli("import", model, flag, value, "-o", tmp_path / "out.rlx")
    assert code == 1 and message in err and not (tmp_path / "out.rlx").exists()


def test_a_dim_param_named_like_a_dtype_becomes_a_valid_symbol(cli, tmp_path):
    model = relu_model(tmp_path / "m.onnx", ["N", "f32"])
    code, _, _ = cli("import", model, "-o", tmp_path / "out.rlx")
    graph = parse_file(tmp_path / "out.rlx").main
    assert code == 0 and set(graph.symbols) == {"B", "f32_"}


def test_a_model_name_that_is_no_name_is_made_valid(cli, tmp_path):
    model = relu_model(tmp_path / "m.onnx", ["N", 4], name="123 bad name")
    code, _, _ = cli("import", model, "-o", tmp_path / "out.rlx")
    assert code == 0 and parse_file(tmp_path / "out.rlx").main.name == "v123_bad_name"


@pytest.mark.parametrize(("dims", "message"), [([-3, 4], "static dim 0 of -3"), ([2, -1], "static dim 1 of -1"),
                                               ([0, 4], "static dim 0 of 0")])
def test_a_negative_or_zero_batch_dim_is_a_located_error(cli, tmp_path, dims, message):
    model = relu_model(tmp_path / "neg.onnx", dims, name="neg")
    code, out, err = cli("import", model)
    assert code == 1 and out == "" and f"neg.onnx: ONNX input 'x' has a {message}" in err


def test_a_zero_byte_model(cli, tmp_path):
    model = write_input(tmp_path, "zero.onnx", b"")
    code, _, err = cli("import", model)
    assert code == 1 and "zero.onnx is empty (0 bytes), not an ONNX model" in err and "no outputs" not in err


def test_the_written_text_parses_back(cli, tmp_path):
    model = relu_model(tmp_path / "m.onnx", ["batch", "seq"])
    code, _, _ = cli("import", model, "-o", tmp_path / "out.rlx")
    assert code == 0 and parse_file(tmp_path / "out.rlx").main.outputs == ["y"]
