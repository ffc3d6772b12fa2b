"""The real-model corpus (examples/corpus): every ONNX file imports, matches onnxruntime's
stored output at batch 2, compiles on all six targets, and each target's compiled graph runs
inside its planned arena with onnxruntime's answer; where torch and the models extra are
installed, the same constructors go through import_torch and match eager PyTorch."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
from rlxir.compiler.compile import compile  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2] / "examples" / "corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())["models"]
TARGETS = ("cpu", "cuda", "rocm", "metal", "gpu", "vulkan")

# Models whose ONNX file does not import yet, with the first error seen.
ONNX_FAILURES: dict[str, str] = {}


# Models that import_torch does not import (or match) yet, with the first error seen.
TORCH_FAILURES: dict[str, str] = {}


def params_for(name: str, failures: dict[str, str]):
    reason = failures.get(name)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", [params_for(entry["name"], ONNX_FAILURES) for entry in MANIFEST])
def test_imports_matches_onnxruntime_and_compiles(name):
    imported = import_onnx(CORPUS / f"{name}.onnx")
    stored = np.load(CORPUS / f"{name}.npz")
    inputs = {imported.inputs[key[len("input."):]]: stored[key] for key in stored.files if key.startswith("input.")}
    got = interpret(imported.graph, inputs, dict(imported.params), {"B": 2})
    for onnx_name, value in imported.outputs.items():
        np.testing.assert_allclose(got[value], stored[f"output.{onnx_name}"], rtol=1e-3, atol=1e-4, err_msg=onnx_name)
    for target in TARGETS:
        result = compile(imported.graph, target, {"B": 2})
        assert result.arena_bytes >= result.lower_bound_bytes > 0


@pytest.mark.parametrize("name", [params_for(entry["name"], ONNX_FAILURES) for entry in MANIFEST])
def test_runs_in_every_targets_arena(name):
    import rlxir

    imported = import_onnx(CORPUS / f"{name}.onnx")
    stored = np.load(CORPUS / f"{name}.npz")
    inputs = {imported.inputs[key[len("input."):]]: stored[key] for key in stored.files if key.startswith("input.")}
    graph = imported.graph.bind({"B": 2})
    reference = rlxir.reference_run(graph, inputs=inputs, params=dict(imported.params))
    for target in TARGETS:
        check = rlxir.check_execution(graph, compile(graph, target), reference=reference)
        assert check.run.poisoned_reads == () and check.matched, (target, check.verdict)
        for position, onnx_name in enumerate(imported.outputs):
            np.testing.assert_allclose(list(check.run.outputs.values())[position], stored[f"output.{onnx_name}"],
                                       rtol=1e-3, atol=1e-4, err_msg=f"{onnx_name} on {target}")


def test_the_corpus_covers_every_family_and_both_exporters():
    families = {entry["family"] for entry in MANIFEST}
    assert families == {"cnn", "vision-transformer", "encoder", "decoder-llm", "state-space"}
    assert {entry["exporter"] for entry in MANIFEST} == {"torchscript", "dynamo"}
    assert len(MANIFEST) >= 31
    assert sum(entry["onnx_bytes"] + entry["npz_bytes"] for entry in MANIFEST) < 40 * 2**20


def _torch_stack():
    for module in ("torch", "torchvision", "timm", "transformers"):
        pytest.importorskip(module)
    sys.path.insert(0, str(CORPUS))
    import models

    return models


@pytest.mark.parametrize("name", [params_for(entry["name"], TORCH_FAILURES) for entry in MANIFEST])
def test_torch_route_matches_eager_pytorch(name):
    models = _torch_stack()
    import torch
    from rlxir.importers.torch import import_torch

    example = models.build(name)
    imported = import_torch(example.module, example.inputs, dims=[{0: "B"}] * len(example.inputs))
    with torch.no_grad():
        want = example.module(*example.inputs).numpy()
    inputs = {value: tensor.numpy() for value, tensor in zip(imported.inputs.values(), example.inputs)}
    got = interpret(imported.graph, inputs, dict(imported.params), {"B": 2})
    np.testing.assert_allclose(got[next(iter(imported.outputs.values()))], want, rtol=1e-3, atol=1e-4)
