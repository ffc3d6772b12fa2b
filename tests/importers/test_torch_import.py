"""The PyTorch importer (torch.export): modules and transformers models built from small
configs with random weights; each imports, matches PyTorch on the interpreter, compiles."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rlxir.compiler.compile import compile  # noqa: E402
from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.torch import import_torch  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402
from torch import library as op_registry  # noqa: E402  (PyTorch's registry of custom ops)

TARGETS = ("cpu", "cuda", "rocm", "metal", "gpu", "vulkan")


@op_registry.custom_op("rlxtest::unmapped", mutates_args=())
def unmapped(x: torch.Tensor) -> torch.Tensor:
    """An op no converter maps (a test's own, so no new converter ever maps it)."""
    return x * 2


@op_registry.custom_op("rlxtest::unmapped_too", mutates_args=())
def unmapped_too(x: torch.Tensor) -> torch.Tensor:
    """A second op no converter maps."""
    return x * 3


unmapped.register_fake(lambda x: torch.empty_like(x))
unmapped_too.register_fake(lambda x: torch.empty_like(x))


def check(module, args, targets=("cpu", "rocm"), atol=1e-5, bindings=None, **options):
    """Import; the interpreter must compute what PyTorch does; compile at B=1."""
    imported = import_torch(module, args, **options)
    with torch.no_grad():
        expected = module(*args)
    expected = [expected] if isinstance(expected, torch.Tensor) else list(expected)
    feeds = {value: arg.numpy() for value, arg in zip(imported.inputs.values(), args)}
    results = interpret(imported.graph, feeds, dict(imported.params), bindings or {"B": args[0].shape[0]})
    for value, want in zip(imported.outputs.values(), expected):
        np.testing.assert_allclose(results[value], want.numpy(), rtol=1e-4, atol=atol)
    for target in targets:
        compile(imported.graph, target, {**(bindings or {}), "B": 1})
    return imported


def ops_of(imported) -> set[str]:
    return {imported.graph.op(name) for name in imported.graph.ops()}


def test_mlp_weights_are_params_stored_in_out():
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4), torch.nn.Softmax(-1)).eval()
    imported = check(mlp, (torch.randn(3, 8),), targets=TARGETS)
    graph = imported.graph
    assert graph.symbols == {"B": None}
    assert [graph.op(name) for name in graph.ops()] == ["linear", "gelu", "linear", "softmax"]
    assert str(graph.type("v0.weight")) == "f32[8, 16]"  # module "0": a value name starts with a letter
    np.testing.assert_array_equal(imported.params["v0.weight"], mlp[0].weight.detach().numpy().T)


def test_transformer_encoder_layer():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, batch_first=True,
                                             dropout=0.0).eval()
    imported = check(layer, (torch.randn(2, 5, 16),), targets=TARGETS)
    assert {"attention", "layernorm", "linear"} <= ops_of(imported)


def test_a_small_cnn_with_batchnorm_and_pools():
    torch.manual_seed(0)
    cnn = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.AvgPool2d(2, padding=1), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 5)).eval()
    with torch.no_grad():
        cnn[1].running_var.uniform_(0.5, 1.5)
        cnn[1].running_mean.normal_()
    imported = check(cnn, (torch.randn(2, 3, 16, 16),), targets=TARGETS)
    assert {"conv2d", "batchnorm", "max_pool2d", "avg_pool2d"} <= ops_of(imported)


def test_named_dims_and_symbolic_arange():
    class Positional(torch.nn.Module):
        def forward(self, x):
            positions = torch.arange(x.shape[1], dtype=torch.float32)
            return x * positions[None, :, None] + torch.zeros(x.shape[0], 1, 1)

    imported = check(Positional(), (torch.randn(2, 5, 3),), dims=[{0: "B", 1: "S"}], bindings={"B": 2, "S": 5})
    assert imported.graph.symbols == {"B": None, "S": None}
    assert "cumsum" in ops_of(imported)


def test_unsupported_ops_are_listed_with_counts():
    class Unmapped(torch.nn.Module):
        def forward(self, x):
            return unmapped(x) + unmapped(x * 2) + unmapped_too(x)

    sites = r" \(first at test_torch_import.py:\d+\)"
    with pytest.raises(UnsupportedModel, match=rf"2 PyTorch ops have no rlx mapping: rlxtest.unmapped x2{sites}, "
                                               rf"rlxtest.unmapped_too x1{sites}"):
        import_torch(Unmapped(), (torch.randn(2, 4),))


# --- transformers, from configs with random weights -----------------------------------
def causal_lm(family, **config):
    pytest.importorskip("transformers")
    from rlxir.importers.hf import causal_lm as build

    torch.manual_seed(0)
    return build(family, **config)


def token_ids(vocab=100, batch=2, length=8):
    return (torch.randint(0, vocab, (batch, length), generator=torch.Generator().manual_seed(1)),)


def test_gpt2():
    model = causal_lm("gpt2", n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=64)
    imported = check(model, token_ids())
    assert {"attention", "layernorm", "linear", "gather"} <= ops_of(imported)
    graph = imported.graph
    attention = next(name for name in graph.ops() if graph.op(name) == "attention")
    assert graph.full_attrs(attention)["causal"] is True


def test_llama_with_grouped_kv_heads():
    model = causal_lm("llama", num_hidden_layers=2, hidden_size=32, num_attention_heads=4, num_key_value_heads=2,
                      intermediate_size=64, vocab_size=100, max_position_embeddings=64)
    imported = check(model, token_ids())
    assert {"attention", "silu", "expand"} <= ops_of(imported)


def test_mamba_unrolled():
    model = causal_lm("mamba", num_hidden_layers=2, hidden_size=16, state_size=4, vocab_size=100, expand=2,
                      conv_kernel=4)
    imported = check(model, token_ids(length=6), atol=1e-4)
    assert {"conv2d", "exp", "matmul"} <= ops_of(imported)


def test_fake_tensor_mode_imports_shapes_without_weights():
    pytest.importorskip("transformers")
    from torch._subclasses.fake_tensor import FakeTensorMode

    config = dict(num_hidden_layers=1, hidden_size=32, num_attention_heads=4, num_key_value_heads=2,
                  intermediate_size=64, vocab_size=100)
    real = import_torch(causal_lm("llama", **config), token_ids())
    with FakeTensorMode(allow_non_fake_inputs=True):
        fake = import_torch(causal_lm("llama", **config), token_ids())
    assert fake.params == {}
    # Module weights match; tables the real import folds (rotary cos/sin) the fake one computes.
    weights = [name for name in real.graph.params() if name.startswith("model.")]
    assert len(weights) == 12
    for name in weights:
        assert fake.graph.type(name) == real.graph.type(name)
    assert compile(fake.graph, "cpu", {"B": 1}).arena_bytes > 0


class InPlaceBlock(torch.nn.Module):
    """In-place activations and an in-place residual add, as torchvision's CNNs write them."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(6, 6)
        self.acts = torch.nn.ModuleList([torch.nn.ReLU(inplace=True), torch.nn.ReLU6(inplace=True),
                                         torch.nn.Hardswish(inplace=True), torch.nn.Hardsigmoid(inplace=True),
                                         torch.nn.Dropout(0.3, inplace=True)])

    def forward(self, x):
        y = self.linear(x)
        for act in self.acts:
            y = act(y * 4)
        y += x
        return y


def test_in_place_ops_are_functionalized_and_hard_activations_import():
    torch.manual_seed(0)
    imported = check(InPlaceBlock().eval(), (torch.randn(3, 6),), targets=TARGETS)
    assert "linear" in ops_of(imported)


class DiffAndGather(torch.nn.Module):
    def forward(self, x, index):
        steps = torch.diff(x, dim=1, prepend=x[:, :1])
        return torch.gather(steps, 1, index) + torch.diff(x, n=2, dim=-1).sum(-1, keepdim=True)


def test_diff_with_prepend_and_gather_on_run_time_values():
    torch.manual_seed(0)
    x = torch.randn(2, 7)
    index = torch.tensor([[0, 6, 3], [5, 1, 1]])
    imported = check(DiffAndGather(), (x, index))
    assert {"gather_elements", "concat", "sub"} <= ops_of(imported)


class IndexRows(torch.nn.Module):
    """x[i, j] with run-time index tensors that broadcast (a mask looked up per position)."""

    def forward(self, x, rows, cols):
        return x[rows[:, None], cols[None, :]]


def test_advanced_index_with_run_time_tensors():
    x = torch.randn(2, 6, 3)
    rows, cols = torch.tensor([1, 0, 1]), torch.tensor([1, -1, 2, 2])  # -1 wraps on the static axis
    imported = check(IndexRows(), (x, rows, cols), dims=[{0: "B"}, None, None])
    assert "gather" in ops_of(imported)
