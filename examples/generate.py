"""Write the repetitive example graphs: one GPT-2 block, GPT-2 small, a ResNet-18.

    python examples/generate.py [OUT_DIR]        (default: the folder of this script)

Each graph is written as compact rlx text without result types, then parsed and printed,
so a file is the printer's canonical form (types inferred, attributes in schema order,
defaults dropped) and printing it again changes nothing. The GPT-2 block and every layer
of GPT-2 small come from the same template, so the two cannot drift apart.
tests/golden/test_examples_roundtrip.py runs `write_examples` into a temporary folder and
checks that the committed files are exactly what it writes.

Parameter names follow the Hugging Face (GPT-2) and torchvision (ResNet) checkpoints;
`linear` weights are [in, out].
"""

from __future__ import annotations

import sys
from pathlib import Path

import rlxir

# GPT-2 small
D_MODEL, HEADS, HEAD_DIM, D_MLP = 768, 12, 64, 3072
VOCAB, CONTEXT, LAYERS = 50257, 1024, 12

# ResNet-18: (stage name, channels, stride of the stage's first block), two blocks each
RESNET_STAGES = (("layer1", 64, 1), ("layer2", 128, 2), ("layer3", 256, 2), ("layer4", 512, 2))
CLASSES = 1000


# --- GPT-2 ------------------------------------------------------------------------------
def gpt2_block(x: str, prefix: str) -> tuple[list[str], str]:
    """Statements of one pre-norm GPT-2 block reading %x, and the value it returns."""
    p = prefix
    lines = [
        f"param %{p}ln_1.weight : f32[{D_MODEL}]",
        f"param %{p}ln_1.bias : f32[{D_MODEL}]",
        f"param %{p}attn.c_attn.weight : f32[{D_MODEL}, {3 * D_MODEL}]",
        f"param %{p}attn.c_attn.bias : f32[{3 * D_MODEL}]",
        f"param %{p}attn.c_proj.weight : f32[{D_MODEL}, {D_MODEL}]",
        f"param %{p}attn.c_proj.bias : f32[{D_MODEL}]",
        f"param %{p}ln_2.weight : f32[{D_MODEL}]",
        f"param %{p}ln_2.bias : f32[{D_MODEL}]",
        f"param %{p}mlp.c_fc.weight : f32[{D_MODEL}, {D_MLP}]",
        f"param %{p}mlp.c_fc.bias : f32[{D_MLP}]",
        f"param %{p}mlp.c_proj.weight : f32[{D_MLP}, {D_MODEL}]",
        f"param %{p}mlp.c_proj.bias : f32[{D_MODEL}]",
        f"%{p}ln1 = layernorm(%{x}, %{p}ln_1.weight, %{p}ln_1.bias)",
        f"%{p}qkv = linear(%{p}ln1, %{p}attn.c_attn.weight, %{p}attn.c_attn.bias)",
    ]
    for index, part in enumerate("qkv"):
        lines += [
            f"%{p}{part} = slice(%{p}qkv) {{axis = 2, start = {index * D_MODEL}, len = {D_MODEL}}}",
            f"%{p}{part}.split = reshape(%{p}{part}) {{shape = [B, S, {HEADS}, {HEAD_DIM}]}}",
            f"%{p}{part}.heads = transpose(%{p}{part}.split) {{perm = [0, 2, 1, 3]}}",
        ]
    lines += [
        f"%{p}ctx = attention(%{p}q.heads, %{p}k.heads, %{p}v.heads) {{causal = true}}",
        f"%{p}ctx.t = transpose(%{p}ctx) {{perm = [0, 2, 1, 3]}}",
        f"%{p}ctx.merged = reshape(%{p}ctx.t) {{shape = [B, S, {D_MODEL}]}}",
        f"%{p}attn_out = linear(%{p}ctx.merged, %{p}attn.c_proj.weight, %{p}attn.c_proj.bias)",
        f"%{p}res1 = add(%{x}, %{p}attn_out)",
        f"%{p}ln2 = layernorm(%{p}res1, %{p}ln_2.weight, %{p}ln_2.bias)",
        f"%{p}fc = linear(%{p}ln2, %{p}mlp.c_fc.weight, %{p}mlp.c_fc.bias)",
        f"%{p}fc.act = gelu(%{p}fc) {{approximate = true}}",
        f"%{p}mlp_out = linear(%{p}fc.act, %{p}mlp.c_proj.weight, %{p}mlp.c_proj.bias)",
        f"%{p}out = add(%{p}res1, %{p}mlp_out)",
    ]
    return lines, f"{p}out"


def gpt2_block_graph() -> str:
    body, out = gpt2_block("x", "")
    return graph_text("gpt2_block(B, S)", [f"input %x : f32[B, S, {D_MODEL}]", *body, f"output %{out}"])


def gpt2_small_graph() -> str:
    lines = [
        "input %tokens : i64[B, S]",
        "input %positions : i64[S]",
        f"param %wte : f32[{VOCAB}, {D_MODEL}]",
        f"param %wpe : f32[{CONTEXT}, {D_MODEL}]",
        "%tok_emb = gather(%wte, %tokens)",
        "%pos_emb = gather(%wpe, %positions)",
        "%h = add(%tok_emb, %pos_emb)",
    ]
    hidden = "h"
    for layer in range(LAYERS):
        body, hidden = gpt2_block(hidden, f"h{layer}.")
        lines += body
    lines += [
        f"param %ln_f.weight : f32[{D_MODEL}]",
        f"param %ln_f.bias : f32[{D_MODEL}]",
        f"%ln_f = layernorm(%{hidden}, %ln_f.weight, %ln_f.bias)",
        # The LM head shares the token embedding table (weight tying).
        "%logits = matmul(%ln_f, %wte) {transpose_b = true}",
        "output %logits",
    ]
    return graph_text("gpt2_small(B, S=128)", lines)


# --- ResNet-18 --------------------------------------------------------------------------
def batchnorm(x: str, name: str, channels: int) -> list[str]:
    """A batchnorm with its four per-channel parameters, writing value %name."""
    stats = ("weight", "bias", "running_mean", "running_var")
    lines = [f"param %{name}.{stat} : f32[{channels}]" for stat in stats]
    operands = ", ".join(f"%{name}.{stat}" for stat in stats)
    return lines + [f"%{name} = batchnorm(%{x}, {operands})"]


def conv(x: str, name: str, in_channels: int, out_channels: int, kernel: int, stride: int) -> list[str]:
    """A bias-free conv with 'same'-style padding kernel // 2, writing value %name."""
    pad = kernel // 2
    return [
        f"param %{name}.weight : f32[{out_channels}, {in_channels}, {kernel}, {kernel}]",
        f"%{name} = conv2d(%{x}, %{name}.weight) "
        f"{{stride = [{stride}, {stride}], padding = [{pad}, {pad}, {pad}, {pad}]}}",
    ]


def basic_block(x: str, name: str, in_channels: int, channels: int, stride: int) -> tuple[list[str], str]:
    """conv-bn-relu-conv-bn plus the shortcut (1x1 conv + bn when the shape changes), relu."""
    lines = conv(x, f"{name}.conv1", in_channels, channels, 3, stride)
    lines += batchnorm(f"{name}.conv1", f"{name}.bn1", channels)
    lines += [f"%{name}.relu1 = relu(%{name}.bn1)"]
    lines += conv(f"{name}.relu1", f"{name}.conv2", channels, channels, 3, 1)
    lines += batchnorm(f"{name}.conv2", f"{name}.bn2", channels)
    shortcut = x
    if stride != 1 or in_channels != channels:
        lines += conv(x, f"{name}.downsample.0", in_channels, channels, 1, stride)
        lines += batchnorm(f"{name}.downsample.0", f"{name}.downsample.1", channels)
        shortcut = f"{name}.downsample.1"
    lines += [f"%{name}.sum = add(%{name}.bn2, %{shortcut})", f"%{name}.out = relu(%{name}.sum)"]
    return lines, f"{name}.out"


def resnet18_graph() -> str:
    lines = ["input %image : f32[B, 3, 224, 224]"]
    lines += conv("image", "conv1", 3, 64, 7, 2)
    lines += batchnorm("conv1", "bn1", 64)
    lines += [
        "%relu = relu(%bn1)",
        "%maxpool = max_pool2d(%relu) {kernel = [3, 3], stride = [2, 2], padding = [1, 1, 1, 1]}",
    ]
    hidden, channels = "maxpool", 64
    for stage, stage_channels, stride in RESNET_STAGES:
        for index in range(2):
            block_stride = stride if index == 0 else 1
            body, hidden = basic_block(hidden, f"{stage}.{index}", channels, stage_channels, block_stride)
            lines += body
            channels = stage_channels
    lines += [
        f"%avgpool = reduce_mean(%{hidden}) {{axes = [2, 3]}}",
        f"param %fc.weight : f32[{channels}, {CLASSES}]",
        f"param %fc.bias : f32[{CLASSES}]",
        "%logits = linear(%avgpool, %fc.weight, %fc.bias)",
        "output %logits",
    ]
    return graph_text("resnet18(B)", lines)


# --- writing ----------------------------------------------------------------------------
def graph_text(header: str, statements: list[str]) -> str:
    return "\n".join([f"graph {header} {{", *("  " + line for line in statements), "}", ""])


def canonical(text: str, name: str) -> str:
    """The printer's form of `text`; parsing checks every statement and infers the types."""
    return rlxir.print_module(rlxir.parse(text, name))


GENERATED = {
    "gpt2_block.rlx": gpt2_block_graph,
    "gpt2_small.rlx": gpt2_small_graph,
    "resnet.rlx": resnet18_graph,
}


def write_examples(folder: Path) -> list[Path]:
    """Write every generated example into `folder`; returns the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for filename, build in GENERATED.items():
        path = folder / filename
        path.write_text(canonical(build(), filename), encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    folder = Path(argv[1]) if len(argv) > 1 else Path(__file__).parent
    for path in write_examples(folder):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
