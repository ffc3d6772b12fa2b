"""A ``transformers`` model from its ``config.json`` alone, imported without weights.

`import_config(config, source)` builds the model the config describes with transformers'
own classes (the class its ``architectures`` names, else the causal-LM Auto class, else
the bare ``AutoModel``) under ``FakeTensorMode``, so no weight is allocated and nothing is
downloaded, and imports it through the PyTorch route (`import_torch`). The graph reads
``input_ids`` of shape ``[B, S]``, both symbols (`batch_dim`, `sequence_dim`); its output
is the model's first output (the logits of a causal LM: its head is included). With
``training=True`` (a causal LM only) the graph is the training step's forward half instead:
it also reads ``labels`` ``[B, S]`` (the target token at each position) and its one output is
the mean token cross-entropy in f32, a scalar loss ``rlxir.grad`` differentiates. Weights
have the dtype the config records (``dtype`` or ``torch_dtype``; float32 when it records
none), as a checkpoint of that config would load them.

Attention goes through the ``rlx_causal`` implementation of `rlxir.importers.hf` where the
architecture accepts an attention implementation (one SDPA per layer), else through the
model's own default.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import torch

from rlxir.importers.builder import ImportedGraph, UnsupportedModel
from rlxir.importers.hf import ATTENTION, register_causal_attention
from rlxir.importers.torch import import_torch

EXAMPLE_SEQUENCE = 16
"""The example sequence length the export traces with (the graph keeps S symbolic)."""

_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}


class FirstOutput(torch.nn.Module):
    """``forward(input_ids)`` -> the model's first output tensor, without a cache."""

    def __init__(self, model: torch.nn.Module, takes_cache: bool):
        super().__init__()
        self.model = model
        self.takes_cache = takes_cache

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        options = {"use_cache": False} if self.takes_cache else {}
        output = self.model(input_ids=input_ids, return_dict=True, **options)
        return next(value for value in output.values() if isinstance(value, torch.Tensor))


class TokenLoss(torch.nn.Module):
    """``forward(input_ids, labels)`` -> the mean cross-entropy of a causal LM's logits
    against `labels`, in f32. Each position's log-probability is picked from the flattened
    log-softmax by position (a ``gather`` with a gradient), not per row."""

    def __init__(self, model: torch.nn.Module, takes_cache: bool):
        super().__init__()
        self.logits = FirstOutput(model, takes_cache)

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits = self.logits(input_ids)
        log_probs = torch.log_softmax(logits.float(), dim=-1).reshape(-1)
        targets = labels.reshape(-1)
        positions = torch.arange(targets.shape[0], device=targets.device) * logits.shape[-1] + targets
        return -log_probs[positions].mean()


def import_config(config: Mapping, source: str, *, batch_dim: str = "B", sequence_dim: str = "S",
                  name: str | None = None, training: bool = False) -> ImportedGraph:
    """The rlx graph of the model `config` (a parsed config.json, read from `source`) describes.

    Raises `UnsupportedModel` for a config transformers cannot build, an architecture with
    no Auto class for token ids, or a model the PyTorch route cannot import."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with _transformers_quiet():
        model_class, model_config = _model_class_and_config(dict(config), source)
    if training and not _is_causal_lm(model_class):
        raise UnsupportedModel(f"{source}: --training needs a causal LM (a loss over its logits); "
                               f"{model_class.__name__} is not one",
                               expected="a config whose architecture is a ...ForCausalLM, or an .rlx graph with a "
                                        "scalar loss")
    dtype = _weight_dtype(config, source)
    register_causal_attention()
    with FakeTensorMode(allow_non_fake_inputs=True):
        with _transformers_quiet():
            model = _built_model(model_class, model_config, dtype, source)
        takes_cache = "use_cache" in model_config.to_dict()
        wrapped = TokenLoss(model.eval(), takes_cache) if training else FirstOutput(model.eval(), takes_cache)
        longest = getattr(model_config, "max_position_embeddings", None) or getattr(model_config, "n_positions", None)
        example = min(EXAMPLE_SEQUENCE, longest) if longest else EXAMPLE_SEQUENCE
        sequence = torch.export.Dim(sequence_dim, min=2, max=longest) if longest else torch.export.Dim(sequence_dim)
        token_ids = torch.zeros(2, example, dtype=torch.int64)
        arguments = (token_ids, torch.zeros_like(token_ids)) if training else (token_ids,)
        return import_torch(wrapped, arguments, dims=[{0: batch_dim, 1: sequence}] * len(arguments),
                            batch_dim=batch_dim, name=name or type(model).__name__)


def _model_class_and_config(config: dict, source: str):
    """The class that builds the model, and its configuration object."""
    import transformers

    architectures = config.get("architectures") or []
    named = getattr(transformers, architectures[0], None) if architectures and isinstance(architectures[0], str) else None
    model_type = config.pop("model_type", None)
    if model_type is None and named is None:
        raise UnsupportedModel(f"{source} names no model_type and no architecture transformers has",
                               expected='a transformers config.json with "model_type" (e.g. "llama")')
    try:
        model_config = (transformers.AutoConfig.for_model(model_type, **config) if model_type
                        else named.config_class(**config))
    except Exception as error:  # noqa: BLE001 - whatever transformers' validators raise, the config is at fault
        raise UnsupportedModel(f"{source}: transformers {transformers.__version__} cannot read this config: "
                               f"{_first_line(error)}",
                               expected="a config.json of an architecture this transformers version knows") from None
    if named is not None:
        return named, model_config
    for auto_class in (transformers.AutoModelForCausalLM, transformers.AutoModel):
        mapped = auto_class._model_mapping.get(type(model_config), None)
        if mapped is not None:
            return mapped, model_config
    raise UnsupportedModel(f"{source}: transformers has no model for model_type {model_type!r} that reads token ids",
                           expected="a config of a language model (a causal LM, an encoder, an encoder-decoder)")


def _is_causal_lm(model_class) -> bool:
    import transformers

    return model_class in transformers.AutoModelForCausalLM._model_mapping.values()


def _weight_dtype(config: Mapping, source: str) -> torch.dtype:
    recorded = config.get("dtype") or config.get("torch_dtype") or "float32"
    if recorded not in _DTYPES:
        raise UnsupportedModel(f"{source}: weight dtype {recorded!r}", expected="one of " + ", ".join(_DTYPES))
    return _DTYPES[recorded]


def _built_model(model_class, model_config, dtype: torch.dtype, source: str) -> torch.nn.Module:
    """The model with the rlx_causal attention, or its default where it takes no implementation."""
    built, failure = _first_built(model_class, model_config, dtype)
    if built is None:
        raise UnsupportedModel(f"{source}: transformers cannot build {model_class.__name__}: {failure}",
                               expected="a config of an architecture transformers builds from its config alone")
    return built


@contextmanager
def _transformers_quiet() -> Iterator[None]:
    """transformers' warnings about a config held back: the one diagnostic says what failed."""
    import transformers

    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    try:
        yield
    finally:
        transformers.logging.set_verbosity(verbosity)


def _first_built(model_class, model_config, dtype: torch.dtype) -> tuple[torch.nn.Module | None, str]:
    """(the model, "") from the first attention choice that builds; else (None, the last reason)."""
    failure = ""
    for attention in (ATTENTION, None):
        options = {"attn_implementation": attention} if attention else {}
        try:
            with _weights_left_uninitialised():
                return model_class._from_config(model_config, dtype=dtype, **options), ""
        except (ValueError, TypeError, NotImplementedError, ImportError, RuntimeError, AssertionError) as error:
            failure = _first_line(error)
    return None, failure


def _weights_left_uninitialised():
    """transformers' own switch that skips initialising weights: fake weights hold no values
    to draw, and some initialisers read values (truncated normals), which fake tensors refuse."""
    try:
        from transformers.initialization import no_init_weights
    except ImportError:  # older transformers keep it in modeling_utils
        from transformers.modeling_utils import no_init_weights
    return no_init_weights()


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


__all__ = ["import_config", "FirstOutput", "TokenLoss", "EXAMPLE_SEQUENCE"]
