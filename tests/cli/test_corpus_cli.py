"""The real-model corpus through the command line, as a user runs it: for every model,
``rlxir import MODEL.onnx --weights DIR -o M.rlx``, ``rlxir compare M.rlx --batch 2`` (exit 0,
one row per target) and ``rlxir run M.rlx --params DIR -i NAME=input.npy -o OUT`` against the
stored onnxruntime output (rtol 1e-3, atol 1e-4); and broken copies of the corpus files.

The commands run in a separate process: every model's commands through one driver
(`cli_batch.py`, rlxir's own entry point in a loop), and one model's through the console
script itself, so the whole corpus costs two interpreter starts, not a hundred. compare
runs with --jobs 1 (its output is the same with workers; forking them costs CPU here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
from rlxir.importers.builder import sanitize_name  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2] / "examples" / "corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())["models"]
DRIVER = Path(__file__).with_name("cli_batch.py")
TARGETS = ("cpu", "cuda", "rocm", "metal", "gpu", "vulkan")


def input_feeds(name: str, folder: Path, batch: int = 2) -> list[str]:
    """The stored batch-2 inputs as .npy files in `folder` (rows repeated in turn up to
    `batch`), as -i options for rlxir run."""
    folder.mkdir()
    stored = np.load(CORPUS / f"{name}.npz")
    feeds = []
    for key in stored.files:
        if key.startswith("input."):
            onnx_name = key[len("input."):]
            rows = np.arange(batch) % stored[key].shape[0]
            np.save(folder / f"{onnx_name}.npy", stored[key][rows])
            feeds += ["-i", f"{sanitize_name(onnx_name)}={folder / f'{onnx_name}.npy'}"]
    return feeds


def commands_for(name: str, work: Path) -> list[list[str]]:
    """import, compare and run of one corpus model, its files under work/name."""
    folder = work / name
    feeds = input_feeds(name, folder)
    graph, weights, out = str(folder / "m.rlx"), str(folder / "weights"), str(folder / "out")
    return [["import", str(CORPUS / f"{name}.onnx"), "--weights", weights, "-o", graph],
            ["compare", graph, "--batch", "2", "--jobs", "1"],
            ["run", graph, "--batch", "2", "--params", weights, *feeds, "-o", out]]


def compare_rows(text: str) -> list[str]:
    """The target of each row of compare's table (the lines under the dashes)."""
    lines = text.splitlines()
    rule = next(index for index, line in enumerate(lines) if line and set(line) == {"-"})
    return [line.split()[0] for line in lines[rule + 1:] if line.strip()]


def check_model(name: str, results: list[dict], work: Path) -> None:
    imported, compared, ran = results
    assert imported["code"] == 0, f"{name}: rlxir import: {imported['err']}"
    assert compared["code"] == 0, f"{name}: rlxir compare: {compared['err']}"
    assert sorted(compare_rows(compared["out"])) == sorted(TARGETS), f"{name}: {compared['out']}"
    assert ran["code"] == 0, f"{name}: rlxir run: {ran['err']}"
    stored = np.load(CORPUS / f"{name}.npz")
    for key in stored.files:
        if key.startswith("output."):
            onnx_name = key[len("output."):]
            got = np.load(work / name / "out" / f"{sanitize_name(onnx_name)}.npy")
            np.testing.assert_allclose(got, stored[key], rtol=1e-3, atol=1e-4, err_msg=f"{name}: {onnx_name}")


def test_every_corpus_model_through_import_compare_and_run(tmp_path):
    names = [entry["name"] for entry in MANIFEST]
    commands = [command for name in names for command in commands_for(name, tmp_path)]
    process = subprocess.run([sys.executable, str(DRIVER)], input=json.dumps(commands), capture_output=True,
                             text=True, timeout=900)
    assert process.returncode == 0, process.stderr
    results = json.loads(process.stdout)
    assert len(results) == 3 * len(names)
    failures = []
    for index, name in enumerate(names):
        try:
            check_model(name, results[3 * index:3 * index + 3], tmp_path)
        except AssertionError as error:
            failures.append(str(error))
    assert not failures, "\n\n".join(failures)


def test_one_model_through_the_console_script(tmp_path):
    script = Path(sys.executable).with_name("rlxir")
    if not script.exists():
        pytest.skip("the rlxir console script is not installed beside this Python")
    results = []
    for argv in commands_for("squeezenet", tmp_path):
        process = subprocess.run([str(script), *argv], capture_output=True, text=True, timeout=300)
        results.append({"code": process.returncode, "out": process.stdout, "err": process.stderr})
    check_model("squeezenet", results, tmp_path)


def odd_copies(name: str, work: Path) -> list[Path]:
    """Broken copies of a corpus model: its bytes cut in half, and its first half of nodes
    dropped (later nodes then read values nothing defines)."""
    import onnx

    data = (CORPUS / f"{name}.onnx").read_bytes()
    cut = work / f"{name}.cut.onnx"
    cut.write_bytes(data[:len(data) // 2])
    model = onnx.load_from_string(data)
    del model.graph.node[:len(model.graph.node) // 2]
    headless = work / f"{name}.headless.onnx"
    headless.write_bytes(model.SerializeToString())
    return [cut, headless]


def onnxruntime_outputs(name: str, folder: Path) -> dict[str, np.ndarray]:
    import onnxruntime

    session = onnxruntime.InferenceSession(str(CORPUS / f"{name}.onnx"), providers=["CPUExecutionProvider"])
    feeds = {item.name: np.load(folder / f"{item.name}.npy") for item in session.get_inputs()}
    return dict(zip([item.name for item in session.get_outputs()], session.run(None, feeds)))


def test_odd_corpus_inputs_are_results_or_located_errors(tmp_path):
    """No corpus-adjacent input makes `rlxir import` fail with an internal error: broken
    copies of every model are explained errors (exit 1) naming the file, --batch-size 0 is
    a usage error (exit 2), and --batch-size 3 gives, for one model of each family, a graph
    that `rlxir run` computes onnxruntime's batch-3 answer with."""
    pytest.importorskip("onnxruntime")
    names = [entry["name"] for entry in MANIFEST]
    one_per_family = sorted({entry["family"]: entry["name"] for entry in reversed(MANIFEST)}.values())
    commands = []
    for name in names:
        commands += [["import", str(path), "-o", str(tmp_path / "broken.rlx")] for path in odd_copies(name, tmp_path)]
        commands.append(["import", str(CORPUS / f"{name}.onnx"), "--batch-size", "0", "-o", str(tmp_path / "zero.rlx")])
    for name in one_per_family:
        folder = tmp_path / name
        feeds = input_feeds(name, folder, batch=3)
        commands.append(["import", str(CORPUS / f"{name}.onnx"), "--batch-size", "3", "--weights", str(folder / "w"),
                         "-o", str(folder / "m.rlx")])
        commands.append(["run", str(folder / "m.rlx"), "--params", str(folder / "w"), *feeds,
                         "-o", str(folder / "out")])
    process = subprocess.run([sys.executable, str(DRIVER)], input=json.dumps(commands), capture_output=True,
                             text=True, timeout=900)
    assert process.returncode == 0, process.stderr
    for result in json.loads(process.stdout):
        argv, code, err = result["argv"], result["code"], result["err"]
        assert "internal error" not in err, (argv, err)
        if argv[0] == "run" or "3" in argv:
            assert code == 0, (argv, err)
        elif "--batch-size" in argv:
            assert code == 2 and "--batch-size: expected a positive integer, got 0" in err, (argv, err)
        else:
            assert code == 1 and err.startswith("error: ") and argv[1] in err, (argv, err)
    for name in one_per_family:
        for onnx_name, want in onnxruntime_outputs(name, tmp_path / name).items():
            got = np.load(tmp_path / name / "out" / f"{sanitize_name(onnx_name)}.npy")
            assert got.shape[0] == 3, name
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4, err_msg=f"{name}: {onnx_name}")
