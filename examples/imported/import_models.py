"""Write the imported real architectures in this folder.

    python examples/imported/import_models.py [OUT_DIR]     (default: this script's folder)

Needs the extras: ``pip install -e ".[onnx,torch]" transformers``.

- From ONNX: the nine real-architecture models the ``onnx`` wheel ships as backend test
  data (``onnx/backend/test/data/light``, opset 9: AlexNet, DenseNet-121, Inception v1/v2,
  ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512), each as ``<name>.rlx`` with
  ``rlxir.importers.onnx.import_onnx`` (batch symbol B, default 1).
- From PyTorch: transformers language models at their published sizes, built from a
  config under ``FakeTensorMode`` (no weights are allocated or downloaded) and imported
  with ``rlxir.importers.torch.import_torch`` (batch symbol B; the sequence length is
  fixed at export): GPT-2 small at 1024 tokens, a Llama-3.2-1B-shaped model at 2048
  tokens, and Mamba-130m at 16 tokens (transformers' reference path unrolls the scan
  over the sequence, so its graph grows with the length).

Only graphs are written (weights are params). tests/importers/test_imported_examples.py
checks that every file here parses and compiles, and that re-importing gives the same
bytes where the extras are installed.
"""

from __future__ import annotations

import sys
from pathlib import Path

ONNX_MODELS = ("bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet", "squeezenet",
               "vgg19", "zfnet512")

TRANSFORMERS = {
    # name: (family, config, sequence length)
    "gpt2_small_hf": ("gpt2", dict(n_layer=12, n_embd=768, n_head=12, vocab_size=50257, n_positions=1024), 1024),
    "llama_1b_hf": ("llama", dict(num_hidden_layers=16, hidden_size=2048, num_attention_heads=32, num_key_value_heads=8,
                                  intermediate_size=8192, vocab_size=128256, max_position_embeddings=2048,
                                  tie_word_embeddings=True, head_dim=64), 2048),
    "mamba_130m_hf": ("mamba", dict(num_hidden_layers=24, hidden_size=768, state_size=16, vocab_size=50280, expand=2,
                                    conv_kernel=4), 16),
}


def onnx_model_path(name: str) -> Path:
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"light_{name}.onnx"


def import_onnx_model(name: str) -> str:
    from rlxir.importers.onnx import import_onnx
    from rlxir.ir.printer import print_graph

    return print_graph(import_onnx(onnx_model_path(name), name=name).graph)


def import_transformer(name: str) -> str:
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from rlxir.importers.hf import causal_lm
    from rlxir.importers.torch import import_torch
    from rlxir.ir.printer import print_graph

    family, config, length = TRANSFORMERS[name]
    with FakeTensorMode(allow_non_fake_inputs=True):
        model = causal_lm(family, **config)
        tokens = torch.zeros((2, length), dtype=torch.int64)
        imported = import_torch(model, (tokens,), name=name)
    return print_graph(imported.graph)


def write_all(out_dir: Path) -> list[Path]:
    written = []
    for name in ONNX_MODELS:
        written.append(_write(out_dir / f"{name}.rlx", import_onnx_model(name)))
    for name in TRANSFORMERS:
        written.append(_write(out_dir / f"{name}.rlx", import_transformer(name)))
    return written


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path} ({len(text.encode()) // 1024} KiB, {text.count(chr(10))} lines)")
    return path


if __name__ == "__main__":
    write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent)
