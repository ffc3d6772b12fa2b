"""examples/imported/: every file parses, verifies and compiles (or is refused for its
arena) on every target at B=1; re-importing gives the committed bytes where the extras
are installed (examples/imported/import_models.py writes them)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import rlxir
from rlxir.compiler.compile import ArenaTooLarge, compile

FOLDER = Path(__file__).resolve().parents[2] / "examples" / "imported"
FILES = sorted(FOLDER.glob("*.rlx"))
TARGETS = ("cpu", "cuda", "rocm", "metal", "gpu", "vulkan")


def script():
    spec = importlib.util.spec_from_file_location("import_models", FOLDER / "import_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_promised_architectures_are_there():
    names = {path.stem for path in FILES}
    assert {"resnet50", "gpt2_small_hf", "llama_1b_hf", "mamba_130m_hf"} <= names
    assert set(script().ONNX_MODELS) <= names
    assert all(path.stat().st_size < 2 * 1024 * 1024 for path in FILES)


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_parses_and_compiles_on_every_target(path):
    graph = rlxir.parse_file(path).main
    rlxir.verify(graph)
    assert "B" in graph.symbols
    for target in TARGETS:
        try:
            assert compile(graph, target, {"B": 1}).arena_bytes > 0
        except ArenaTooLarge as refusal:  # the answer for a 1B-parameter model on a u32 arena
            assert refusal.arena_bytes > refusal.ceiling


@pytest.mark.parametrize("name", ["resnet50", "inception_v2", "shufflenet"])
def test_onnx_reimport_gives_the_committed_text(name):
    pytest.importorskip("onnx")
    assert script().import_onnx_model(name) == (FOLDER / f"{name}.rlx").read_text(encoding="utf-8")


def test_transformer_reimport_gives_the_committed_text():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    assert script().import_transformer("gpt2_small_hf") == (FOLDER / "gpt2_small_hf.rlx").read_text(encoding="utf-8")
