"""Held-out graph generators for the scale benches: texts unlike bench/parse.py's GPT stack.

Each generator writes a valid `.rlx` graph of exactly N statements (every `input`, `param`,
`const`, op and the one `output`; comments, the header and the closing brace are not
statements), deterministic from its seed. They share nothing with each other or with the
GPT, elementwise and Mamba families of bench/parse.py and bench/pipeline.py, so a target met
on them is not one tuned to the bench's own text:

- cnn: a convolutional stream (conv2d, batchnorm, relu, max/avg pooling, residual adds) with
  long dotted names, every attribute written out, per-block parameters, a type on every op;
- mlp: linears, matmuls and elementwise chains with short numeric names (`%417`), almost no
  attributes, no result types (all inferred) and a `#` comment on most lines;
- wide: a DAG whose blocks fork into 4-16 parallel branches (transposes, reshapes, casts to
  f16/bf16 and back, reductions, softmax, cumsum, comparisons and selects) rejoined by add
  trees or a concat, with long-range skips between blocks and types written on half the ops;
- train: a training step written out by hand: an MLP's forward pass, its backward pass
  (transposed matmuls, relu masks, bias-gradient reductions) and an SGD update of every
  parameter, all the updated parameters listed in the output.

Usage: python bench/generators.py GENERATOR N [--seed S] [-o FILE]
"""

from __future__ import annotations

import argparse
import random
import sys
from typing import Callable


class Writer:
    """Collects the lines of one graph and counts its statements."""

    def __init__(self, header: str) -> None:
        self.lines = [header]
        self.statements = 0

    def statement(self, text: str, comment: str = "") -> None:
        self.lines.append(f"  {text}  # {comment}" if comment else f"  {text}")
        self.statements += 1

    def comment(self, text: str) -> None:
        self.lines.append(f"  # {text}")

    def finish(self, outputs: list[str]) -> str:
        self.statement("output " + ", ".join(outputs))
        self.lines.append("}")
        return "\n".join(self.lines) + "\n"


# --- cnn -------------------------------------------------------------------------------
CNN_CHANNELS, CNN_SIDE = 16, 8
CNN_TYPE = f"f32[B, {CNN_CHANNELS}, {CNN_SIDE}, {CNN_SIDE}]"
CNN_BLOCK_MAX = 14  # statements in the largest block


def cnn_text(statements: int, seed: int = 0) -> str:
    """A ResNet-like stream of conv/batchnorm/relu blocks with pools and residual adds."""
    rng = random.Random(seed)
    out = Writer("graph convolutional_stream(B) {")
    current = "%stem.image_input"
    out.statement(f"input {current} : {CNN_TYPE}")
    block = 0
    while statements - out.statements - 1 > CNN_BLOCK_MAX:
        stage, unit = divmod(block, 8)
        prefix = f"%features.stage{stage}.residual_unit{unit}"
        block_input = current
        for conv in range(rng.choice((1, 2))):
            current = _cnn_conv_unit(out, rng, f"{prefix}.conv_unit{conv}", current)
        if rng.random() < 0.6:
            out.statement(f"{prefix}.residual_sum = add({current}, {block_input}) : {CNN_TYPE}")
            current = f"{prefix}.residual_sum"
        if rng.random() < 0.3:
            pool = rng.choice(("max_pool2d", "avg_pool2d"))
            out.statement(f"{prefix}.spatial_pool = {pool}({current}) "
                          f"{{kernel = [3, 3], stride = [1, 1], padding = [1, 1, 1, 1]}} : {CNN_TYPE}")
            current = f"{prefix}.spatial_pool"
        block += 1
    while statements - out.statements > 1:
        out.statement(f"%tail.activation{out.statements} = relu({current}) : {CNN_TYPE}")
        current = f"%tail.activation{out.statements - 1}"
    return out.finish([current])


def _cnn_conv_unit(out: Writer, rng: random.Random, name: str, source: str) -> str:
    """conv2d (with or without bias) + batchnorm + relu, each parameter declared before use."""
    channels = CNN_CHANNELS
    with_bias = rng.random() < 0.5
    out.statement(f"param {name}.convolution.weight : f32[{channels}, {channels}, 3, 3]")
    operands = f"{source}, {name}.convolution.weight"
    if with_bias:
        out.statement(f"param {name}.convolution.bias : f32[{channels}]")
        operands += f", {name}.convolution.bias"
    for field in ("scale", "shift", "running_mean", "running_variance"):
        out.statement(f"param {name}.batch_norm.{field} : f32[{channels}]")
    out.statement(f"{name}.convolution_out = conv2d({operands}) "
                  f"{{stride = [1, 1], padding = [1, 1, 1, 1], dilation = [1, 1], groups = 1}} : {CNN_TYPE}")
    norm = f"{name}.batch_norm"
    out.statement(f"{norm}.normalized = batchnorm({name}.convolution_out, {norm}.scale, {norm}.shift, "
                  f"{norm}.running_mean, {norm}.running_variance) {{eps = {rng.choice(('1e-05', '0.001'))}}} "
                  f": {CNN_TYPE}")
    out.statement(f"{name}.rectified = relu({norm}.normalized) : {CNN_TYPE}")
    return f"{name}.rectified"


# --- mlp -------------------------------------------------------------------------------
MLP_WIDTH = 32
MLP_UNARY = ("relu", "gelu", "sigmoid", "tanh", "neg", "silu", "exp")
MLP_BINARY = ("add", "mul", "sub", "maximum", "minimum", "div")
MLP_REMARKS = ("residual", "gate", "keep the scale small", "hidden", "mix with an earlier value",
               "nonlinearity", "projection", "could fuse", "elementwise", "from the block above")


def mlp_text(statements: int, seed: int = 0) -> str:
    """Short statements with no types and a comment on most lines."""
    rng = random.Random(seed)
    out = Writer("graph m(B) {  # a plain MLP-style stream")
    out.comment("weights first, then the body")
    out.statement(f"input %0 : f32[B, {MLP_WIDTH}]", "the batch")
    weights = []
    for index in range(4):
        out.statement(f"param %w{index} : f32[{MLP_WIDTH}, {MLP_WIDTH}]", f"weight {index}")
        out.statement(f"param %b{index} : f32[{MLP_WIDTH}]", "bias")
        weights.append(index)
    out.statement(f"const %c : f32[] = {rng.choice(('0.5', '0.125', '2.0'))}", "a scale")
    values = ["%0"]
    while statements - out.statements > 1:
        if rng.random() < 0.2:
            out.comment(rng.choice(MLP_REMARKS))
        name = f"%{out.statements}"
        last = values[-1]
        draw = rng.random()
        if draw < 0.15:
            weight = rng.choice(weights)
            text = f"{name} = linear({last}, %w{weight}, %b{weight})"
        elif draw < 0.25:
            text = f"{name} = matmul({last}, %w{rng.choice(weights)})"
        elif draw < 0.5:
            text = f"{name} = {rng.choice(MLP_UNARY)}({last})"
        elif draw < 0.55:
            text = f"{name} = mul({last}, %c)"
        elif draw < 0.58:
            text = f"{name} = softmax({last}) {{axis = -1}}"
        else:
            other = values[rng.randrange(max(0, len(values) - 12), len(values))]
            text = f"{name} = {rng.choice(MLP_BINARY)}({last}, {other})"
        out.statement(text, rng.choice(MLP_REMARKS) if rng.random() < 0.7 else "")
        values.append(name)
    return out.finish([values[-1]])


# --- wide ------------------------------------------------------------------------------
WIDE_ROWS, WIDE_COLS = 8, 16
WIDE_TYPE = f"f32[B, {WIDE_ROWS}, {WIDE_COLS}]"
WIDE_BRANCH_MAX = 6  # statements in the longest branch, its own weight included
WIDE_WIDTH_MAX = 16


def wide_text(statements: int, seed: int = 0) -> str:
    """Blocks that fork into many branches and join again, with skips between blocks."""
    rng = random.Random(seed)
    out = Writer("graph wide_branching(B) {")
    out.statement(f"input %in : {WIDE_TYPE}")
    out.statement(f"param %gain : f32[{WIDE_COLS}]")
    out.statement("const %threshold : f32[] = 0.0")
    joins = ["%in"]
    block = 0
    while True:
        # the last blocks narrow so that few filler statements are left over
        width_max = min(WIDE_WIDTH_MAX, (statements - out.statements - 1 - 3) // (WIDE_BRANCH_MAX + 1))
        if width_max < 4:
            break
        joins.append(_wide_block(out, rng, block, joins, width_max))
        block += 1
    current = joins[-1]
    while statements - out.statements > 1:
        name = f"%fill{out.statements}"
        out.statement(f"{name} = neg({current})" + _wide_type(rng, WIDE_TYPE))
        current = name
    return out.finish([current])


def _wide_type(rng: random.Random, text: str) -> str:
    return f" : {text}" if rng.random() < 0.5 else ""


def _wide_block(out: Writer, rng: random.Random, block: int, joins: list[str], width_max: int) -> str:
    """One fork of 4 to `width_max` branches from the last join (some from an older one)."""
    source = joins[-1]
    width = rng.randint(4, width_max)
    ends = []
    for branch in range(width):
        start = source if rng.random() < 0.8 else joins[rng.randrange(max(0, len(joins) - 20), len(joins))]
        name = f"%b{block}_{branch}"
        # Each branch scales by its own weight first, so no two branches are the same
        # computation and cse cannot fold the fork back into a few branches.
        out.statement(f"param {name}.w : f32[{WIDE_COLS}]")
        out.statement(f"{name}.in = mul({start}, {name}.w)" + _wide_type(rng, WIDE_TYPE))
        ends.append(_wide_branch(out, rng, name, f"{name}.in"))
    if rng.random() < 0.5:
        total = ends[0]
        for index, end in enumerate(ends[1:]):
            name = f"%b{block}.sum{index}"
            out.statement(f"{name} = add({total}, {end})" + _wide_type(rng, WIDE_TYPE))
            total = name
        return total
    joined = f"%b{block}.cat"
    out.statement(f"{joined} = concat({', '.join(ends)}) {{axis = 2}}"
                  + _wide_type(rng, f"f32[B, {WIDE_ROWS}, {WIDE_COLS * width}]"))
    out.statement(f"{joined}.split = reshape({joined}) {{shape = [B, {WIDE_ROWS}, {width}, {WIDE_COLS}]}}"
                  + _wide_type(rng, f"f32[B, {WIDE_ROWS}, {width}, {WIDE_COLS}]"))
    reduce = rng.choice(("reduce_sum", "reduce_mean", "reduce_max"))
    out.statement(f"{joined}.out = {reduce}({joined}.split) {{axes = [2], keepdims = false}}"
                  + _wide_type(rng, WIDE_TYPE))
    return f"{joined}.out"


def _wide_branch(out: Writer, rng: random.Random, name: str, source: str) -> str:
    """One to four statements from `source`, ending in a value of the block's type."""
    kind = rng.randrange(7)
    emit = out.statement
    if kind == 0:  # transpose out and back
        emit(f"{name}.t = transpose({source}) {{perm = [0, 2, 1]}}"
             + _wide_type(rng, f"f32[B, {WIDE_COLS}, {WIDE_ROWS}]"))
        emit(f"{name}.e = tanh({name}.t)" + _wide_type(rng, f"f32[B, {WIDE_COLS}, {WIDE_ROWS}]"))
        emit(f"{name} = transpose({name}.e) {{perm = [0, 2, 1]}}" + _wide_type(rng, WIDE_TYPE))
    elif kind == 1:  # half precision and back
        half = rng.choice(("f16", "bf16"))
        emit(f"{name}.h = cast({source}) {{to = {half}}}" + _wide_type(rng, f"{half}[B, {WIDE_ROWS}, {WIDE_COLS}]"))
        emit(f"{name}.m = mul({name}.h, {name}.h)" + _wide_type(rng, f"{half}[B, {WIDE_ROWS}, {WIDE_COLS}]"))
        emit(f"{name} = cast({name}.m) {{to = f32}}" + _wide_type(rng, WIDE_TYPE))
    elif kind == 2:  # centre on a reduction
        emit(f"{name}.mean = reduce_mean({source}) {{axes = [2], keepdims = true}}"
             + _wide_type(rng, f"f32[B, {WIDE_ROWS}, 1]"))
        emit(f"{name} = sub({source}, {name}.mean)" + _wide_type(rng, WIDE_TYPE))
    elif kind == 3:  # mask by a comparison
        emit(f"{name}.pos = gt({source}, %threshold)" + _wide_type(rng, f"bool[B, {WIDE_ROWS}, {WIDE_COLS}]"))
        emit(f"{name}.g = mul({source}, %gain)" + _wide_type(rng, WIDE_TYPE))
        emit(f"{name} = where({name}.pos, {name}.g, {source})" + _wide_type(rng, WIDE_TYPE))
    elif kind == 4:  # flatten, scan, unflatten
        emit(f"{name}.flat = reshape({source}) {{shape = [B, {WIDE_ROWS * WIDE_COLS}]}}"
             + _wide_type(rng, f"f32[B, {WIDE_ROWS * WIDE_COLS}]"))
        emit(f"{name}.scan = cumsum({name}.flat) {{axis = 1, exclusive = {rng.choice(('true', 'false'))}}}"
             + _wide_type(rng, f"f32[B, {WIDE_ROWS * WIDE_COLS}]"))
        emit(f"{name} = reshape({name}.scan) {{shape = [B, {WIDE_ROWS}, {WIDE_COLS}]}}" + _wide_type(rng, WIDE_TYPE))
    elif kind == 5:
        emit(f"{name} = softmax({source}) {{axis = {rng.choice((-1, 1))}}}" + _wide_type(rng, WIDE_TYPE))
    else:  # an integer detour
        emit(f"{name}.i = cast({source}) {{to = i32}}" + _wide_type(rng, f"i32[B, {WIDE_ROWS}, {WIDE_COLS}]"))
        emit(f"{name}.a = abs({name}.i)" + _wide_type(rng, f"i32[B, {WIDE_ROWS}, {WIDE_COLS}]"))
        emit(f"{name}.f = cast({name}.a) {{to = f32}}" + _wide_type(rng, WIDE_TYPE))
        emit(f"{name} = maximum({name}.f, {source})" + _wide_type(rng, WIDE_TYPE))
    return name


# --- train -----------------------------------------------------------------------------
TRAIN_WIDTH = 24


def train_text(statements: int, seed: int = 0) -> str:
    """An MLP's forward pass, hand-written backward pass and SGD update of every layer; some
    layers (chosen by the seed) also decay their weights."""
    rng = random.Random(seed)
    width = TRAIN_WIDTH
    vector, matrix = f"f32[B, {width}]", f"f32[{width}, {width}]"
    out = Writer("graph training_step(B) {")
    out.statement(f"input %data.features : {vector}")
    out.statement(f"input %data.targets : {vector}")
    out.statement(f"const %optim.learning_rate : f32[] = {rng.choice(('0.01', '0.001', '0.1'))}")
    out.statement("const %optim.weight_decay : f32[] = 0.0001")
    out.statement("const %optim.zero : f32[] = 0.0")
    out.statement("const %loss.two : f32[] = 2.0")
    budget = statements - out.statements - 3  # the loss gradient (2) and the output
    decays = []
    while budget >= 13 + 2:  # a layer: 4 forward, 9 backward and update, 2 more with decay
        decays.append(rng.random() < 0.3 and budget >= 15)
        budget -= 15 if decays[-1] else 13
    activations = ["%data.features"]
    for layer in range(len(decays)):
        name = f"%model.layer{layer}"
        out.statement(f"param {name}.weight : {matrix}")
        out.statement(f"param {name}.bias : f32[{width}]")
        out.statement(f"{name}.pre = linear({activations[-1]}, {name}.weight, {name}.bias) : {vector}")
        out.statement(f"{name}.act = relu({name}.pre) : {vector}")
        activations.append(f"{name}.act")
    out.statement(f"%loss.diff = sub({activations[-1]}, %data.targets) : {vector}")
    out.statement(f"%loss.grad = mul(%loss.diff, %loss.two) : {vector}")
    updated = []
    grad = "%loss.grad"
    for layer in reversed(range(len(decays))):
        name, grads = f"%model.layer{layer}", f"%grad.layer{layer}"
        out.statement(f"{grads}.mask = gt({name}.pre, %optim.zero) : bool[B, {width}]")
        out.statement(f"{grads}.pre = where({grads}.mask, {grad}, %optim.zero) : {vector}")
        out.statement(f"{grads}.weight = matmul({activations[layer]}, {grads}.pre) {{transpose_a = true}} : {matrix}")
        weight_grad = f"{grads}.weight"
        if decays[layer]:
            out.statement(f"{grads}.decay = mul({name}.weight, %optim.weight_decay) : {matrix}")
            out.statement(f"{grads}.weight_total = add({grads}.weight, {grads}.decay) : {matrix}")
            weight_grad = f"{grads}.weight_total"
        out.statement(f"{grads}.bias = reduce_sum({grads}.pre) {{axes = [0], keepdims = false}} : f32[{width}]")
        out.statement(f"{grads}.input = matmul({grads}.pre, {name}.weight) {{transpose_b = true}} : {vector}")
        out.statement(f"{grads}.weight_step = mul({weight_grad}, %optim.learning_rate) : {matrix}")
        out.statement(f"{name}.weight_next = sub({name}.weight, {grads}.weight_step) : {matrix}")
        out.statement(f"{grads}.bias_step = mul({grads}.bias, %optim.learning_rate) : f32[{width}]")
        out.statement(f"{name}.bias_next = sub({name}.bias, {grads}.bias_step) : f32[{width}]")
        updated += [f"{name}.weight_next", f"{name}.bias_next"]
        grad = f"{grads}.input"
    while statements - out.statements > 1:
        name = f"%grad.clipped{out.statements}"
        out.statement(f"{name} = minimum({grad}, %optim.weight_decay) : {vector}")
        grad = name
    return out.finish(updated + [grad])


GENERATORS: dict[str, Callable[[int, int], str]] = {
    "cnn": cnn_text, "mlp": mlp_text, "wide": wide_text, "train": train_text,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("generator", choices=list(GENERATORS))
    parser.add_argument("statements", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-o", "--output", help="file to write (default: standard output)")
    args = parser.parse_args()
    text = GENERATORS[args.generator](args.statements, args.seed)
    if args.output:
        with open(args.output, "w") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
