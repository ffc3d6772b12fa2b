"""Params from a directory of <name>.npy files: `rlxir.load_params` and `rlxir run --params`."""

from __future__ import annotations

import io
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

import rlxir
from rlxir.cli.import_commands import write_weights
from rlxir.cli.main import main
from rlxir.interpreter import random_feeds

MLP = Path(__file__).resolve().parents[1] / "examples" / "mlp.rlx"


def _mlp() -> rlxir.Graph:
    return rlxir.parse_file(MLP).main.bind({"B": 2})


def _weights(graph: rlxir.Graph, folder: Path, seed: int = 5) -> dict:
    """Params other than the default fill, written as `rlxir import --weights` writes them."""
    _, params = random_feeds(graph, seed=seed)
    write_weights(params, folder)
    return params


def _cli(arguments: list[str]) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        code = main(arguments)
    return code or 0, stdout.getvalue(), stderr.getvalue()


def test_load_params_feeds_interpret(tmp_path):
    graph = _mlp()
    params = _weights(graph, tmp_path)
    (tmp_path / "README.txt").write_text("weights of the mlp example\n", encoding="utf-8")
    loaded = rlxir.load_params(tmp_path)
    assert sorted(loaded) == sorted(graph.params())
    expected = rlxir.interpret(graph, params=params)
    actual = rlxir.interpret(graph, params=rlxir.load_params(tmp_path, graph))
    assert not np.array_equal(expected["probs"], rlxir.interpret(graph)["probs"])  # not the default fill
    np.testing.assert_array_equal(actual["probs"], expected["probs"])


def test_run_params_matches_one_input_flag_per_weight(tmp_path):
    graph = _mlp()
    _weights(graph, tmp_path / "w")
    flags = [arg for name in graph.params() for arg in ("-i", f"{name}={tmp_path / 'w' / (name + '.npy')}")]
    with_dir = _cli(["run", str(MLP), "--batch", "2", "--params", str(tmp_path / "w")])
    with_flags = _cli(["run", str(MLP), "--batch", "2", *flags])
    assert with_dir[0] == 0 and with_dir == with_flags


def test_an_input_flag_wins_over_the_params_directory(tmp_path):
    graph = _mlp()
    _weights(graph, tmp_path / "w")
    _weights(graph, tmp_path / "other", seed=9)
    bias = str(tmp_path / "other" / "fc3.bias.npy")
    both = _cli(["run", str(MLP), "--batch", "2", "--params", str(tmp_path / "w"), "-i", f"fc3.bias={bias}"])
    directory_only = _cli(["run", str(MLP), "--batch", "2", "--params", str(tmp_path / "w")])
    assert both[0] == 0 and both[1] != directory_only[1]


def _write(folder: Path, name: str, array) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / f"{name}.npy", array)


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda folder: None, "params directory .* does not exist"),
        (lambda folder: _write(folder, "fc1.bias", np.zeros(3, np.float32)), r"holds float32\[3\], but param %fc1.bias"),
        (lambda folder: _write(folder, "fc1.bias", np.zeros(512, np.int32)), r"holds int32\[512\], but param %fc1.bias"),
        (lambda folder: _write(folder, "fc9.bias", np.zeros(512, np.float32)), "has no param %fc9.bias"),
        (lambda folder: _write(folder, "x", np.zeros((2, 784), np.float32)), "has no param %x"),
        (lambda folder: (folder.mkdir(), (folder / "w.npy").write_text("not numpy")), "is not a .npy file"),
    ],
    ids=["missing", "shape", "dtype", "unknown", "an-input", "not-npy"],
)
def test_bad_params_directories_are_explained_errors(tmp_path, make, words):
    folder = tmp_path / "weights"
    make(folder)
    with pytest.raises(rlxir.RlxError, match=words):
        rlxir.load_params(folder, _mlp())
    code, out, err = _cli(["run", str(MLP), "--batch", "2", "--params", str(folder)])
    assert code == 1 and out == ""
    assert "Traceback" not in err and "internal error" not in err
    assert re.search(words, err)


def test_a_mismatched_file_is_located_at_the_param(tmp_path):
    _write(tmp_path, "fc2.weight", np.zeros((2, 2), np.float32))
    with pytest.raises(rlxir.RlxError) as caught:
        rlxir.load_params(tmp_path, rlxir.parse_file(MLP).main)
    assert caught.value.file == str(MLP) and caught.value.line == 7


def test_a_params_path_that_is_a_file_is_refused(tmp_path):
    path = tmp_path / "weights.npy"
    np.save(path, np.zeros(2))
    with pytest.raises(rlxir.RlxError, match="is not a directory"):
        rlxir.load_params(path)
