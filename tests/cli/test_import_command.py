"""`rlxir import`: ONNX to rlx text, options, weights, refusals and exit codes."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from rlxir.cli import main
from rlxir.ir.parser import parse_file

from in_process_cli import run


def test_without_the_onnx_package_it_says_what_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    monkeypatch.delitem(sys.modules, "rlxir.importers.onnx", raising=False)
    code, out, err = run(["import", tmp_path / "m.onnx"], capsys)
    assert code == 1 and out == ""
    assert "needs the onnx package" in err and "pip install 'rlxir[onnx]'" in err


@pytest.fixture
def model_file(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    weight = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    nodes = [helper.make_node("Gemm", ["x", "w"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["y"])]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
                              [numpy_helper.from_array(weight, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / "tiny.onnx"
    onnx.save(model, str(path))
    return path


def test_prints_the_graph(model_file, capsys):
    code, out, err = run(["import", model_file], capsys)
    assert code == 0 and err == ""
    assert out.startswith("graph tiny(B) {\n  input %x : f32[B, 4]\n  param %w : f32[4, 3]\n")
    assert "%h = linear(%x, %w) : f32[B, 3]" in out


def test_writes_a_file_that_parses_and_compiles(model_file, tmp_path, capsys):
    out_file = tmp_path / "tiny.rlx"
    code, out, err = run(["import", model_file, "-o", out_file, "--batch-dim", "N", "--name", "mlp"], capsys)
    assert code == 0, err
    assert out.startswith(f"wrote {out_file}: graph mlp(N), 4 values (2 ops, 1 params of 48 bytes)")
    graph = parse_file(str(out_file)).main
    assert graph.symbols == {"N": None}
    code, out, err = run(["compile", out_file, "--target", "cpu", "--batch", "2", "--batch-dim", "N"], capsys)
    assert code == 0, err


def test_batch_size_fixes_the_batch(model_file, capsys):
    code, out, _ = run(["import", model_file, "--batch-size", "5"], capsys)
    assert code == 0 and out.startswith("graph tiny {\n  input %x : f32[5, 4]")


def test_weights_feed_rlxir_run(model_file, tmp_path, capsys):
    out_file, weights = tmp_path / "tiny.rlx", tmp_path / "weights"
    assert run(["import", model_file, "-o", out_file, "--weights", weights], capsys)[0] == 0
    np.testing.assert_array_equal(np.load(weights / "w.npy"), np.arange(12, dtype=np.float32).reshape(3, 4).T / 10)
    np.save(tmp_path / "x.npy", np.ones((2, 4), np.float32))
    code, out, err = run(["run", out_file, "--batch", "2", "-i", f"x={tmp_path / 'x.npy'}",
                          "-i", f"w={weights / 'w.npy'}", "-o", tmp_path / "out"], capsys)
    assert code == 0, err
    np.testing.assert_allclose(np.load(tmp_path / "out" / "y.npy"), np.ones((2, 4)) @ (np.arange(12).reshape(3, 4).T / 10),
                               rtol=1e-6)


def test_unsupported_ops_exit_1_with_one_listing(tmp_path, capsys):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Blur", ["x"], ["r"], domain="com.example"),
             helper.make_node("Blur", ["r"], ["y"], domain="com.example"),
             helper.make_node("Warp", ["y"], ["d"], domain="com.example")]
    graph = helper.make_graph(nodes, "up", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
                              [helper.make_tensor_value_info("d", TensorProto.FLOAT, None)])
    path = tmp_path / "up.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    code, out, err = run(["import", path], capsys)
    assert code == 1 and out == ""
    assert f"cannot import {path}: 2 ONNX op types have no rlx mapping: com.example.Blur x2, com.example.Warp x1" in err
    assert "Traceback" not in err


def test_unreadable_files_exit_1(tmp_path, capsys):
    pytest.importorskip("onnx")
    code, _, err = run(["import", tmp_path / "missing.onnx"], capsys)
    assert code == 1 and "no such file" in err
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x00\xffnot a model")
    code, _, err = run(["import", garbage], capsys)
    assert code == 1 and "as an ONNX model" in err


def test_bad_options(model_file, capsys):
    assert run(["import", model_file, "--batch-dim", "2x"], capsys)[0] == 1
    with pytest.raises(SystemExit) as exit_info:
        main(["import", str(model_file), "--batch-size", "0"])
    assert exit_info.value.code == 2
