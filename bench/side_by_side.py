"""rlxir's memory answer next to what users reach for today, for a CNN, an encoder and a
decoder LLM at one batch and sequence (docs/fit.md, "Side by side").

    python bench/side_by_side.py --torch-peaks peaks.json     # on a CUDA machine: PyTorch's peaks
    python bench/side_by_side.py --peaks bench/data/side_by_side_peaks.json   # the table

bench/data/side_by_side_peaks.json holds the peaks measured on an NVIDIA H200 (torch 2.11).

Columns, and what each counts:
- rlxir: the arena (and side buffers) the target's pipeline and planner compile for the step,
  inference or a training step with AdamW's update (weights, gradients, optimizer state,
  activations, workspace), for cuda (RLX's bump planner, no reuse) and cpu (liveness);
- accelerate: `accelerate estimate-memory`'s figures, computed with the functions the command
  calls (`calculate_maximum_sizes` on the model built empty from its config; the command
  itself needs the Hugging Face Hub): the weights' size for inference, 4x for training with
  Adam; no activations, no batch;
- weights+grads+state: the DeepSpeed-style count for float32 AdamW, 4 + 4 + 8 bytes a
  parameter (inference: 4); no activations;
- PyTorch: `torch.cuda.max_memory_allocated` over the same step on the GPU (inference under
  no_grad; training: forward, backward and `AdamW.step`, the second step, so the state is
  held), the weights and inputs included, as an arena holds them.
Needs torch, torchvision and transformers (and accelerate for its column).
"""

from __future__ import annotations

import argparse
import json
import sys

import torch
import torch.nn.functional as F

SEED = 0


class Classifier(torch.nn.Module):
    """A model's logits (inference) or its cross entropy on `labels` (training)."""

    def __init__(self, model, training: bool, kind: str):
        super().__init__()
        self.model, self.training_step, self.kind = model, training, kind

    def forward(self, x, labels):
        logits = self.model(x) if self.kind == "cnn" else self.model(input_ids=x).logits
        if not self.training_step:
            return logits
        if self.kind == "decoder":
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1))
        return F.cross_entropy(logits.float(), labels)


def build(name: str, attention: str = "sdpa"):
    """(module, example inputs, kind) with random weights: nothing is downloaded."""
    torch.manual_seed(SEED)
    if name == "resnet50":
        import torchvision

        batch = 32
        return (torchvision.models.resnet50(num_classes=1000), (torch.randn(batch, 3, 224, 224),
                torch.randint(0, 1000, (batch,))), "cnn")
    import transformers

    if name == "bert-base":
        batch, sequence = 8, 512
        config = transformers.BertConfig(num_labels=2, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        config._attn_implementation = attention
        model = transformers.BertForSequenceClassification(config)
        return model, (torch.randint(0, config.vocab_size, (batch, sequence)), torch.randint(0, 2, (batch,))), "encoder"
    batch, sequence = 8, 1024
    config = transformers.GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    config._attn_implementation = attention
    model = transformers.GPT2LMHeadModel(config)
    tokens = torch.randint(0, config.vocab_size, (batch, sequence))
    return model, (tokens, tokens), "decoder"


MODELS = ("resnet50", "bert-base", "gpt2")


def torch_peaks() -> dict:
    """PyTorch's own peaks on the GPU, per model: inference and a training step with AdamW
    (the transformers models with their default attention, sdpa, and with eager attention)."""
    found = {}
    for name in MODELS:
        for attention in ("sdpa",) if name == "resnet50" else ("sdpa", "eager"):
            key = name if attention == "sdpa" else f"{name}/eager"
            found[key] = one_peak(name, attention)
            print(key, found[key], file=sys.stderr, flush=True)
    return found


def one_peak(name: str, attention: str) -> dict:
    model, inputs, kind = build(name, attention)
    device = torch.device("cuda")
    model = model.to(device)
    inputs = tuple(item.to(device) for item in inputs)
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    with torch.no_grad():
        Classifier(model, False, kind).eval()(*inputs)
    torch.cuda.synchronize()
    inference = torch.cuda.max_memory_allocated()
    step = Classifier(model, True, kind).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(2):  # the second step holds the optimizer's state from the start
        torch.cuda.reset_peak_memory_stats()
        optimizer.zero_grad(set_to_none=True)
        step(*inputs).backward()
        optimizer.step()
        torch.cuda.synchronize()
    training = torch.cuda.max_memory_allocated()
    found = {"torch": torch.__version__, "device": torch.cuda.get_device_name(),
             "parameters": sum(p.numel() for p in model.parameters()), "inference": inference,
             "training": training, "weights_and_inputs": before}
    del model, optimizer, step, inputs
    torch.cuda.empty_cache()
    return found


def rlxir_bytes(name: str, target: str) -> dict:
    """rlxir's answer for the step: the target's arena plus its side buffers, inference and
    a training step with AdamW (torch's defaults: lr 1e-3, weight decay 0.01)."""
    import rlxir

    found = {}
    for training in (False, True):
        model, inputs, kind = build(name)
        step = Classifier(model, training, kind).eval()
        result = rlxir.compile_module(step, inputs, target=target, training=training,
                                      optimizer="adamw" if training else None)
        side = sum(result.side_buffers.values())
        key = "training" if training else "inference"
        found[key] = result.arena_bytes + side
        if training:
            found["breakdown"] = dict(result.breakdown)
        print(name, target, key, found[key], file=sys.stderr, flush=True)
    return found


def accelerate_bytes(name: str) -> dict:
    """`accelerate estimate-memory`'s float32 figures, from the functions the command calls."""
    from accelerate import init_empty_weights
    from accelerate.commands.estimate import estimate_training_usage
    from accelerate.utils import calculate_maximum_sizes

    with init_empty_weights():
        model, _, _ = build(name)
    total, _ = calculate_maximum_sizes(model)
    return {"inference": total, "training": max(estimate_training_usage(total, "float32").values())}


def gib(count: float) -> str:
    return f"{count / 2**30:.2f}"


def table(peaks: dict, targets: list[str]) -> str:
    rows = ["| model (batch, sequence) | params | | " + " | ".join(f"rlxir {target}" for target in targets)
            + " | accelerate | weights+grads+state | PyTorch peak (sdpa) | PyTorch peak (eager attention) |",
            "|---|---|---|" + "---|" * len(targets) + "---|---|---|---|"]
    shapes = {"resnet50": "ResNet-50 (32, 224x224)", "bert-base": "BERT-base (8, 512)", "gpt2": "GPT-2 small (8, 1024)"}
    for name in MODELS:
        ours = [rlxir_bytes(name, target) for target in targets]
        theirs, measured = accelerate_bytes(name), peaks[name]
        eager = peaks.get(f"{name}/eager")
        parameters = measured["parameters"]
        for key, per_parameter in (("inference", 4), ("training", 16)):
            first = key == "inference"
            rows.append(f"| {shapes[name] if first else ''} | {f'{parameters / 1e6:.1f} M' if first else ''} | {key} | "
                        + "".join(f"{gib(answer[key])} | " for answer in ours) +
                        f"{gib(theirs[key])} | {gib(per_parameter * parameters)} | "
                        f"{gib(measured[key])} | {gib(eager[key]) if eager else '-'} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--torch-peaks", metavar="JSON", help="measure PyTorch's peaks on this GPU and write them")
    parser.add_argument("--peaks", metavar="JSON", help="print the table, with PyTorch's peaks from this file")
    parser.add_argument("--targets", default="cuda,cpu",
                        help="rlxir's targets, a column each (default cuda,cpu: RLX's bump planner and a reusing one)")
    args = parser.parse_args(argv)
    if args.torch_peaks:
        with open(args.torch_peaks, "w") as file:
            json.dump(torch_peaks(), file, indent=1)
    if args.peaks:
        with open(args.peaks) as file:
            print(table(json.load(file), args.targets.split(",")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
