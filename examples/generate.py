"""Write the repetitive example graphs: one GPT-2 block, GPT-2 small, a ResNet-18, and a
12-layer Mamba language model with its cross-entropy loss (a training graph).

    python examples/generate.py [OUT_DIR]        (default: the folder of this script)

Each graph is written as compact rlx text without result types, then parsed and printed,
so a file is the printer's canonical form (types inferred, attributes in schema order,
defaults dropped) and printing it again changes nothing. The GPT-2 block and every layer
of GPT-2 small come from the same template, so the two cannot drift apart.
tests/golden/test_examples_roundtrip.py runs `write_examples` into a temporary folder and
checks that the committed files are exactly what it writes.

Parameter names follow the Hugging Face (GPT-2, Mamba) and torchvision (ResNet)
checkpoints; `linear` weights are [in, out]. Each Mamba layer is the block of
examples/mamba_block.rlx (mamba-130m sizes), which explains every step.
"""

from __future__ import annotations

import sys
from pathlib import Path

import rlxir

# GPT-2 small
D_MODEL, HEADS, HEAD_DIM, D_MLP = 768, 12, 64, 3072
VOCAB, CONTEXT, LAYERS = 50257, 1024, 12

# Mamba (mamba-130m sizes, a smaller vocabulary so training graphs compile in seconds)
MAMBA_D_MODEL, MAMBA_D_INNER, MAMBA_STATE, MAMBA_DT_RANK, MAMBA_CONV = 768, 1536, 16, 48, 4
MAMBA_VOCAB, MAMBA_LAYERS = 8192, 12

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


def stacked_blocks(block, hidden: str, count: int, prefix: str) -> tuple[list[str], str]:
    """COUNT blocks in a row, block i named by ``prefix.format(i)`` and reading the output of
    block i - 1 (the first reads HIDDEN): (their lines, the last block's output)."""
    lines: list[str] = []
    for layer in range(count):
        body, hidden = block(hidden, prefix.format(layer))
        lines += body
    return lines, hidden


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
    body, hidden = stacked_blocks(gpt2_block, "h", LAYERS, "h{}.")
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


# --- Mamba ------------------------------------------------------------------------------
def mamba_block(x: str, prefix: str) -> tuple[list[str], str]:
    """Statements of one residual Mamba block reading %x (as examples/mamba_block.rlx:
    rmsnorm, in-projection to the scanned branch and the gate, causal depthwise conv,
    silu, the input-dependent delta/B/C, selective_scan, the D skip, the silu gate, the
    out-projection, the residual add), and the value it returns. Reads the const %one."""
    p, d, inner, state, rank = prefix, MAMBA_D_MODEL, MAMBA_D_INNER, MAMBA_STATE, MAMBA_DT_RANK
    lines = [
        f"param %{p}norm.weight : f32[{d}]",
        f"param %{p}mixer.in_proj.weight : f32[{d}, {2 * inner}]",
        f"param %{p}mixer.conv1d.weight : f32[{inner}, 1, 1, {MAMBA_CONV}]",
        f"param %{p}mixer.conv1d.bias : f32[{inner}]",
        f"param %{p}mixer.x_proj.weight : f32[{inner}, {rank + 2 * state}]",
        f"param %{p}mixer.dt_proj.weight : f32[{rank}, {inner}]",
        f"param %{p}mixer.dt_proj.bias : f32[{inner}]",
        f"param %{p}mixer.A_log : f32[{inner}, {state}]",
        f"param %{p}mixer.D : f32[{inner}]",
        f"param %{p}mixer.out_proj.weight : f32[{inner}, {d}]",
        f"%{p}normed = rmsnorm(%{x}, %{p}norm.weight) {{eps = 1e-5}}",
        f"%{p}xz = linear(%{p}normed, %{p}mixer.in_proj.weight)",
        f"%{p}xs = slice(%{p}xz) {{axis = -1, start = 0, len = {inner}}}",
        f"%{p}z = slice(%{p}xz) {{axis = -1, start = {inner}, len = {inner}}}",
        f"%{p}xs.t = transpose(%{p}xs) {{perm = [0, 2, 1]}}",
        f"%{p}xs.img = reshape(%{p}xs.t) {{shape = [B, {inner}, 1, S]}}",
        f"%{p}conv = conv2d(%{p}xs.img, %{p}mixer.conv1d.weight, %{p}mixer.conv1d.bias) "
        f"{{padding = [0, {MAMBA_CONV - 1}, 0, 0], groups = {inner}}}",
        f"%{p}conv.seq = reshape(%{p}conv) {{shape = [B, {inner}, S]}}",
        f"%{p}conv.t = transpose(%{p}conv.seq) {{perm = [0, 2, 1]}}",
        f"%{p}u = silu(%{p}conv.t)",
        f"%{p}dbc = linear(%{p}u, %{p}mixer.x_proj.weight)",
        f"%{p}dt.low = slice(%{p}dbc) {{axis = -1, start = 0, len = {rank}}}",
        f"%{p}Bm = slice(%{p}dbc) {{axis = -1, start = {rank}, len = {state}}}",
        f"%{p}C = slice(%{p}dbc) {{axis = -1, start = {rank + state}, len = {state}}}",
        f"%{p}dt = linear(%{p}dt.low, %{p}mixer.dt_proj.weight, %{p}mixer.dt_proj.bias)",
        f"%{p}dt.exp = exp(%{p}dt)",
        f"%{p}dt.exp1 = add(%{p}dt.exp, %one)",
        f"%{p}delta = log(%{p}dt.exp1)",
        f"%{p}A.exp = exp(%{p}mixer.A_log)",
        f"%{p}A = neg(%{p}A.exp)",
        f"%{p}scan = selective_scan(%{p}u, %{p}delta, %{p}A, %{p}Bm, %{p}C) {{state_size = {state}}}",
        f"%{p}skip = mul(%{p}u, %{p}mixer.D)",
        f"%{p}y = add(%{p}scan, %{p}skip)",
        f"%{p}gate = silu(%{p}z)",
        f"%{p}gated = mul(%{p}y, %{p}gate)",
        f"%{p}mixed = linear(%{p}gated, %{p}mixer.out_proj.weight)",
        f"%{p}out = add(%{x}, %{p}mixed)",
    ]
    return lines, f"{p}out"


def mamba_lm_graph() -> str:
    """Tokens -> embedding (gather) -> 12 Mamba blocks -> rmsnorm -> logits against the tied
    embedding -> mean cross-entropy against the target tokens.

    The loss avoids softmax: per position, logsumexp(logits) - logits[target], with
    logsumexp = max + log(sum(exp(logits - max))) and the target's logit picked by a
    one-hot mask (`eq` of a vocabulary iota against the target, feeding a `where`
    condition, through which no gradient flows). The iota is an exclusive running sum of
    ones, so the file carries no 8192-entry literal.
    """
    d, vocab = MAMBA_D_MODEL, MAMBA_VOCAB
    lines = [
        "input %tokens : i64[B, S]",
        "input %targets : i64[B, S]",
        f"param %embeddings.weight : f32[{vocab}, {d}]",
        "const %one : f32[] = 1.0",
        "const %zero : f32[] = 0.0",
        "const %one.i64 : i64[] = 1",
        "%h = gather(%embeddings.weight, %tokens)",
    ]
    body, hidden = stacked_blocks(mamba_block, "h", MAMBA_LAYERS, "layers.{}.")
    lines += body
    lines += [
        f"param %norm_f.weight : f32[{d}]",
        f"%norm_f = rmsnorm(%{hidden}, %norm_f.weight) {{eps = 1e-5}}",
        "%logits = matmul(%norm_f, %embeddings.weight) {transpose_b = true}",
        "%logits.max = reduce_max(%logits) {axes = [2], keepdims = true}",
        "%shifted = sub(%logits, %logits.max)",
        "%shifted.exp = exp(%shifted)",
        "%sum.exp = reduce_sum(%shifted.exp) {axes = [2]}",
        "%log.sum.exp = log(%sum.exp)",
        f"%vocab.ones = expand(%one.i64) {{shape = [{vocab}]}}",
        "%vocab.ids = cumsum(%vocab.ones) {axis = 0, exclusive = true}",
        "%targets.col = reshape(%targets) {shape = [B, S, 1]}",
        "%is.target = eq(%vocab.ids, %targets.col)",
        "%target.masked = where(%is.target, %shifted, %zero)",
        "%target.logit = reduce_sum(%target.masked) {axes = [2]}",
        "%nll = sub(%log.sum.exp, %target.logit)",
        "%loss = reduce_mean(%nll) {axes = [0, 1]}",
        "output %loss",
    ]
    return graph_text("mamba_lm(B, S=256)", lines)


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
    "mamba_lm.rlx": mamba_lm_graph,
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
