"""Files and streams a user gets wrong, second round: bytes that are not UTF-8, standard
streams that are full or closed, outputs that would replace an input or go through a
link, directories that do not exist, `-` as a stream, params that are not there, and
.npy headers that lie. Each is one explained error (exit 1) or the documented behaviour."""

from __future__ import annotations

import os
import subprocess
import sys

from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

CSV = "id,lower,upper,size\nb0,0,10,8\n"


def rlxir_process(*args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, **options):
    """Run the installed CLI in a fresh interpreter (for real standard streams)."""
    return subprocess.run([sys.executable, "-m", "rlxir", *map(str, args)], stdin=stdin, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=120, **options)


# plan-csv: encodings and standard input

def test_plan_csv_with_bytes_that_are_not_utf8_is_located(cli, tmp_path):
    csv = tmp_path / "bad.csv"
    csv.write_bytes(b"id,lower,upper,size\nb\xff0,0,10,8\n")
    code, _, err = cli("plan-csv", csv)
    assert code == 1 and f"{csv}:2:2: error: byte 0xff is not UTF-8" in err


def test_plan_csv_drops_a_byte_order_mark(cli, tmp_path):
    csv = tmp_path / "bom.csv"
    csv.write_bytes(b"\xef\xbb\xbf" + CSV.encode())
    code, out, err = cli("plan-csv", csv)
    assert code == 0 and "1 buffers" in out, err


def test_plan_csv_reads_standard_input():
    result = rlxir_process("plan-csv", "-", stdin=None, input=CSV)
    assert result.returncode == 0 and "1 buffers" in result.stdout, result.stderr


def test_plan_csv_from_a_closed_standard_input():
    result = rlxir_process("plan-csv", "-", stdin=None, preexec_fn=lambda: os.close(0))
    assert result.returncode == 1 and "standard input is closed" in result.stderr
    assert "internal error" not in result.stderr


# standard streams

@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("example", ["mlp.rlx", "resnet.rlx"])  # less and more than one buffer of output
def test_print_to_a_full_standard_output(example):
    with open("/dev/full", "w") as full:
        result = rlxir_process("print", EXAMPLES / example, stdout=full)
    assert result.returncode == 1 and "cannot write standard output: No space left on device" in result.stderr
    assert "internal error" not in result.stderr and "Exception ignored" not in result.stderr


def test_print_with_standard_output_closed():
    result = rlxir_process("print", EXAMPLES / "mlp.rlx", stdout=None, preexec_fn=lambda: os.close(1))
    assert result.returncode == 0 and "internal error" not in result.stderr, result.stderr


def test_check_with_standard_input_closed():
    result = rlxir_process("check", "-", stdin=None, preexec_fn=lambda: os.close(0))
    assert result.returncode == 1 and "cannot read standard input: it is closed" in result.stderr


# run -o: never over an input, never through a link, never a new tree

def test_run_output_never_replaces_its_own_input(cli, tmp_path):
    folder = tmp_path / "io"
    folder.mkdir()
    feed = folder / "probs.npy"  # the output of examples/mlp.rlx is %probs
    np.save(feed, np.ones((2, 784), np.float32))
    before = feed.read_bytes()
    code, _, err = cli("run", EXAMPLES / "mlp.rlx", "--batch", "2", "-i", f"x={feed}", "-o", folder)
    assert code == 1 and "is the input file" in err and feed.read_bytes() == before


def test_run_output_never_writes_through_a_link(cli, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "probs.npy").symlink_to(victim)
    code, _, err = cli("run", EXAMPLES / "mlp.rlx", "--batch", "2", "-o", folder)
    assert code == 1 and "is a symbolic link" in err and victim.read_text() == "keep"


def test_run_output_into_a_missing_parent_directory(cli, tmp_path):
    code, _, err = cli("run", EXAMPLES / "mlp.rlx", "--batch", "2", "-o", tmp_path / "no" / "out")
    assert code == 1 and "does not exist" in err and not (tmp_path / "no").exists()


def test_run_output_directory_itself_is_created(cli, tmp_path):
    code, _, err = cli("run", EXAMPLES / "mlp.rlx", "--batch", "2", "-o", tmp_path / "out")
    assert code == 0 and (tmp_path / "out" / "probs.npy").is_file(), err


def test_dump_dir_with_missing_parents(cli, mlp, tmp_path):
    code, _, err = cli("opt", mlp, "-p", "dce", "--dump-dir", tmp_path / "a" / "b" / "c")
    assert code == 1 and "--dump-dir" in err and "does not exist" in err and not (tmp_path / "a").exists()


def test_output_file_named_like_a_directory(cli, mlp, tmp_path):
    code, _, err = cli("print", mlp, "-o", f"{tmp_path / 'newdir'}/")
    assert code == 1 and "names a directory" in err and not (tmp_path / "newdir").exists()


def test_output_dash_is_standard_output(cli, mlp, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli("print", mlp, "-o", "-")
    assert code == 0 and out.startswith("graph mlp") and not (tmp_path / "-").exists()


def test_output_directory_dash_is_refused(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("run", EXAMPLES / "mlp.rlx", "--batch", "2", "-o", "-")
    assert code == 1 and "standard output cannot hold a directory" in err and not (tmp_path / "-").exists()


# --params: what is missing is said, or refused

def test_params_missing_from_the_directory_are_named(cli, tmp_path):
    folder = tmp_path / "weights"
    folder.mkdir()
    code, _, err = cli("run", EXAMPLES / "mlp.rlx", "--batch", "2", "--params", folder)
    assert code == 0 and "filled from --seed" in err and "%fc1.weight" in err


def test_params_missing_are_refused_with_strict_params(cli, tmp_path):
    folder = tmp_path / "weights"
    folder.mkdir()
    code, _, err = cli("run", EXAMPLES / "mlp.rlx", "--batch", "2", "--params", folder, "--strict-params")
    assert code == 1 and "--strict-params" in err and "%fc1.weight" in err


def test_params_file_that_is_a_directory(cli, tmp_path):
    folder = tmp_path / "weights"
    (folder / "fc1.weight.npy").mkdir(parents=True)
    code, _, err = cli("run", EXAMPLES / "mlp.rlx", "--batch", "2", "--params", folder)
    assert code == 1 and "fc1.weight.npy is a directory" in err


# .npy headers and --vram

def test_npy_header_claiming_more_than_the_file_holds(cli, tmp_path):
    huge = tmp_path / "huge.npy"
    with open(huge, "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, {"descr": "<f4", "fortran_order": False,
                                                      "shape": (10**12, 784)})
    code, _, err = cli("run", EXAMPLES / "mlp.rlx", "--batch", "2", "-i", f"x={huge}")
    assert code == 1 and str(huge) in err and "claims" in err and "out of memory" not in err


def test_fit_with_no_device_memory_says_why(cli):
    code, _, err = cli("fit", EXAMPLES / "mlp.rlx", "--target", "cpu", "--vram", "0")
    assert code == 1 and "--vram 0" in err


# import: standard input, and --weights that never destroy the model

def external_data_model(folder):
    """A model whose initializer `w` keeps its data in the file `w.npy` beside it."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])
    weight = numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x], [y], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = folder / "m.onnx"
    onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True, location="w.npy",
              size_threshold=0)
    return path


def test_import_weights_never_replace_the_external_data(cli, tmp_path):
    model = external_data_model(tmp_path)
    data = (tmp_path / "w.npy").read_bytes()
    code, _, err = cli("import", model, "--weights", tmp_path, "-o", tmp_path / "m.rlx")
    assert code == 1 and "w.npy exists and is not a .npy array" in err
    assert (tmp_path / "w.npy").read_bytes() == data


def test_import_weights_never_write_through_a_link(cli, tmp_path):
    model = external_data_model(tmp_path)
    weights = tmp_path / "weights"
    weights.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    (weights / "w.npy").symlink_to(victim)
    code, _, err = cli("import", model, "--weights", weights, "-o", tmp_path / "m.rlx")
    assert code == 1 and "is a symbolic link" in err and victim.read_text() == "keep"


def test_import_weights_rewrite_their_own_npy_files(cli, tmp_path):
    model = external_data_model(tmp_path)
    weights = tmp_path / "weights"
    for _ in range(2):
        code, _, err = cli("import", model, "--weights", weights, "-o", tmp_path / "m.rlx")
        assert code == 0, err
    assert np.load(weights / "w.npy").tolist() == [0.0, 1.0, 2.0, 3.0]


def test_import_reads_standard_input(tmp_path):
    pytest.importorskip("onnx")
    model = external_data_model(tmp_path)
    with open(model, "rb") as handle:
        result = rlxir_process("import", "-", stdin=handle, cwd=tmp_path)
    assert result.returncode == 0 and "graph g(" in result.stdout, result.stderr


@pytest.mark.parametrize("command", [["print"], ["opt", "--pipeline", "dce"], ["plan", "--target", "cpu", "--batch", "2"]])
def test_a_single_output_file_is_never_written_through_a_link(cli, tmp_path, command):
    """-o and --html refuse a symbolic link as their output: the file behind it stays as it was."""
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("keep me")
    link = tmp_path / "out"
    link.symlink_to(elsewhere)
    flag = "--html" if command[0] == "plan" else "-o"
    code, _, err = cli(command[0], EXAMPLES / "mlp.rlx", *command[1:], flag, link)
    assert code == 1 and "symbolic link" in err
    assert elsewhere.read_text() == "keep me"
