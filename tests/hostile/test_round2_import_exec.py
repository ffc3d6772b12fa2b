"""Importers and executor under hostile input: initializers whose dims disagree with their data,
batch sizes past 64-bit arithmetic, bf16 scalar results in arena runs, and the documented
storage loss of a target told apart from a defect."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")
import numpy as np  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

from rlxir.testing.fuzz_hostile import initializer_models, run_initializers  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2] / "examples" / "corpus"


def matmul_model(path: Path, weight: onnx.TensorProto) -> Path:
    """A model computing x @ w with `weight` as the initializer w."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g", [x], [y], [weight])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def short_weight() -> onnx.TensorProto:
    """An initializer that declares dims [8, 8] but holds 16 values."""
    weight = helper.make_tensor("w", TensorProto.FLOAT, [4, 4], np.ones(16, np.float32).tolist())
    weight.dims[:] = [8, 8]
    return weight


def dataless_weight() -> onnx.TensorProto:
    """An initializer that declares dims [8, 8] and holds no data at all."""
    weight = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT)
    weight.dims.extend([8, 8])
    return weight


@pytest.mark.parametrize("make_weight", [short_weight, dataless_weight])
def test_an_initializer_whose_data_does_not_fill_its_dims_is_a_located_error(cli, tmp_path, make_weight):
    model = matmul_model(tmp_path / "short.onnx", make_weight())
    code, out, err = cli("import", model, "-o", tmp_path / "out.rlx")
    assert code == 1 and out == "" and not (tmp_path / "out.rlx").exists()
    assert "short.onnx: ONNX initializer 'w' declares dims [8, 8]" in err and "64 values" in err


@pytest.mark.parametrize("model", ["bert", "gpt2"])
@pytest.mark.parametrize("batch_size", ["9223372036854775807", "4611686018427387904"])
def test_a_batch_size_past_64_bit_arithmetic_is_a_located_error(cli, tmp_path, model, batch_size):
    path = CORPUS / f"{model}.onnx"
    if not path.exists():
        pytest.skip(f"{path} is not built")
    code, out, err = cli("import", path, "--batch-size", batch_size, "-o", tmp_path / "out.rlx")
    assert code == 1 and out == "" and f"{model}.onnx: ONNX node" in err and "--batch-size" in err


BF16_SCALAR = """graph g {{
  input %x : bf16[4, 8]
  %y = {op}(%x) {{axes = [0, 1]}} : bf16[]
  output %y
}}
"""


@pytest.mark.parametrize("target", ["cpu", "metal"])
@pytest.mark.parametrize("op", ["reduce_mean", "reduce_sum", "reduce_max"])
def test_a_bf16_scalar_result_runs_in_the_arena(cli, tmp_path, target, op):
    graph = tmp_path / "scalar.rlx"
    graph.write_text(BF16_SCALAR.format(op=op))
    code, out, err = cli("run", graph, "-t", target)
    assert code == 0, err
    assert "%y  bf16[]" in out and "check     ran, matched" in out


@settings(max_examples=25, deadline=None, database=None)
@given(model=initializer_models())
def test_fuzzed_initializers_whose_dims_disagree_with_their_data_never_crash(model):
    run = run_initializers(model)
    assert not run.crashed and run.code in (0, 1), run.output


def test_a_c64_cast_to_a_real_dtype_keeps_the_real_part_without_a_numpy_warning(cli, tmp_path):
    graph = tmp_path / "cast.rlx"
    graph.write_text("graph g {\n  input %x : c64[4]\n  %y = cast(%x) {to = f32} : f32[4]\n  output %y\n}\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ComplexWarning would reach the user's stderr
        code, out, err = cli("run", graph, "-t", "cpu")
    assert code == 0 and "ComplexWarning" not in err and "check     ran, matched" in out
