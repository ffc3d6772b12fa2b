"""rlxir.fit_module / rlxir.compile_module: a PyTorch module in one call, with the answers
the CLI gives for its imported graph."""

from __future__ import annotations

import subprocess
import sys

import pytest

import rlxir
from rlxir.errors import RlxError
from rlxir.compiler.fit import fit_batch
from rlxir.autodiff.training import TrainingResult, plan_training_arena_bytes

torch = pytest.importorskip("torch")
from rlxir.importers.torch import import_torch  # noqa: E402  (needs torch)


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = torch.nn.Linear(32, 64)
        self.head = torch.nn.Linear(64, 10)

    def forward(self, x):
        return self.head(torch.relu(self.hidden(x)))


class ClassifierLoss(torch.nn.Module):
    """The classifier and a scalar loss: what a training step differentiates."""

    def __init__(self):
        super().__init__()
        self.model = Classifier()

    def forward(self, x):
        return self.model(x).square().mean()


EXAMPLE = (torch.randn(4, 32),)


def test_import_rlxir_does_not_import_torch():
    code = "import sys, rlxir; rlxir.fit_module; print('torch' in sys.modules)"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "False"


def test_compile_module_is_compile_on_the_imported_graph():
    result = rlxir.compile_module(Classifier(), EXAMPLE, target="cuda")
    graph = import_torch(Classifier(), EXAMPLE).graph
    assert result.bindings["B"] == 4
    assert result.arena_bytes == rlxir.compile(graph, "cuda", {"B": 4}).arena_bytes
    assert rlxir.compile_module(Classifier(), EXAMPLE, target="cuda", batch=64).arena_bytes > result.arena_bytes


def test_compile_module_training_sizes_the_optimizer():
    result = rlxir.compile_module(ClassifierLoss(), EXAMPLE, target="cpu", training=True, optimizer="adam", lr=0.01)
    assert isinstance(result, TrainingResult) and result.optimizer == rlxir.autodiff.optimizers.Optimizer("adam", lr=0.01)
    assert sum(result.breakdown.values()) == result.arena_bytes
    state = sum(size for name, size in _param_sizes(result).items() if name.startswith("opt."))
    assert state >= 2 * result.weight_bytes  # Adam's m and v
    sgd = rlxir.compile_module(ClassifierLoss(), EXAMPLE, target="cpu", training=True, optimizer="sgd")
    assert sgd.arena_bytes < result.arena_bytes


def _param_sizes(result):
    return {buffer.value: buffer.size for buffer in result.backward.plan.buffers if buffer.kind == "param"}


def test_fit_module_is_fit_on_the_imported_graph():
    found = rlxir.fit_module(Classifier(), EXAMPLE, target="cuda", vram=64 << 20, max_batch=1 << 16, jobs=1)
    graph = import_torch(Classifier(), EXAMPLE).graph
    expected = fit_batch("cuda", 1 << 16, 0.6, lambda batch: graph.bind({"B": batch}), vram=64 << 20)
    assert found.fits is True and found.batch == expected.batch and found.arena_bytes == expected.arena_bytes


def test_fit_module_training_fits_the_step_with_adamw():
    found = rlxir.fit_module(ClassifierLoss(), EXAMPLE, target="cuda", vram=64 << 20, training=True,
                             max_batch=1 << 16, jobs=1)
    graph = import_torch(ClassifierLoss(), EXAMPLE).graph
    assert found.fits is True
    assert found.arena_bytes == plan_training_arena_bytes(graph, "cuda", {"B": found.batch})
    assert plan_training_arena_bytes(graph, "cuda", {"B": found.batch + 1}) > found.budget.bytes


def test_bad_options_are_clear_errors():
    with pytest.raises(RlxError, match="unknown option 'learning_rate'"):
        rlxir.compile_module(Classifier(), EXAMPLE, learning_rate=0.1)
    with pytest.raises(RlxError, match="given without training=True"):
        rlxir.compile_module(Classifier(), EXAMPLE, lr=0.1)
    with pytest.raises(RlxError, match="batch of 1, which torch.export keeps fixed"):
        rlxir.compile_module(Classifier(), (torch.randn(1, 32),))
