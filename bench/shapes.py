"""Graph shapes that once made a compile superlinear, timed at growing sizes.

Usage: python bench/shapes.py [--sizes 500 2000] [--shapes qkv attention-train ...] [--json]

Each shape is written at every size (layers; statements for `train-text`, values for `concat`), compiled in
this process, and timed (wall seconds of parse + compile); "x per 4x" is the time against
the previous size, scaled to a 4x step: about 4 means linear. The shapes:

- **qkv**: q/k/v matmuls of one input per layer, each weight declared between the
  matmuls (rocm's `fuse` merges them into one matmul and moves the params up);
- **attention-train** and **params-first-train**: training steps with AdamW (the
  optimizer puts every state param before the first op and names each update), of an
  attention stack and of an MLP whose params are all declared first, for rocm;
- **train-text**: bench/generators.py's training text (thousands of params live
  throughout), compiled for rocm with the plan validated, as `rlxir compile` does;
- **concat**: one concat of 8 values per size unit, computed two ways, so rocm's `cse`
  merges all but two of its operands.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import rlxir  # noqa: E402
from generators import train_text  # noqa: E402  (bench/generators.py)


def qkv_text(layers: int) -> str:
    lines = ["graph qkv(B) {", "  input %h0 : f32[B, 64]"]
    for i in range(layers):
        lines += [f"  param %wq{i} : f32[64, 64]", f"  %q{i} = matmul(%h{i}, %wq{i})",
                  f"  param %wk{i} : f32[64, 32]", f"  %k{i} = matmul(%h{i}, %wk{i})", f"  param %b{i} : f32[64]",
                  f"  param %wv{i} : f32[64, 32]", f"  %v{i} = matmul(%h{i}, %wv{i})",
                  f"  %kv{i} = concat(%k{i}, %v{i}) {{axis = 1}}", f"  %s{i} = add(%q{i}, %kv{i})",
                  f"  %u{i} = add(%s{i}, %b{i})", f"  %h{i + 1} = relu(%u{i})"]
    return "\n".join(lines + [f"  output %h{layers}", "}"])


def attention_text(layers: int) -> str:
    lines = ["graph attention(B, S=16) {", "  input %h0 : f32[B, S, 32]"]
    for i in range(layers):
        lines += [f"  param %wq{i} : f32[32, 32]", f"  param %wk{i} : f32[32, 32]", f"  param %wv{i} : f32[32, 32]",
                  f"  %q{i} = matmul(%h{i}, %wq{i})", f"  %k{i} = matmul(%h{i}, %wk{i})", f"  %v{i} = matmul(%h{i}, %wv{i})",
                  f"  %kt{i} = transpose(%k{i}) {{perm = [0, 2, 1]}}", f"  %s{i} = matmul(%q{i}, %kt{i})",
                  f"  %p{i} = softmax(%s{i}) {{axis = -1}}", f"  %o{i} = matmul(%p{i}, %v{i})",
                  f"  %h{i + 1} = add(%o{i}, %h{i})"]
    lines += [f"  %loss = reduce_mean(%h{layers}) {{axes = [0, 1, 2]}}", "  output %loss", "}"]
    return "\n".join(lines)


def params_first_text(layers: int) -> str:
    lines = ["graph mlp(B) {", "  input %x0 : f32[B, 32]"] + [f"  param %w{i} : f32[32, 32]" for i in range(layers)]
    for i in range(layers):
        lines += [f"  %m{i} = matmul(%x{i}, %w{i})", f"  %x{i + 1} = gelu(%m{i})"]
    lines += [f"  %loss = reduce_mean(%x{layers}) {{axes = [0, 1]}}", "  output %loss", "}"]
    return "\n".join(lines)


def concat_text(values: int) -> str:
    lines = ["graph wide(B) {", "  input %x : f32[B, 4]"]
    lines += [f"  %e{i} = {'sin' if i % 2 else 'cos'}(%x)" for i in range(values)]
    lines += ["  %c = concat(" + ", ".join(f"%e{i}" for i in range(values)) + ") {axis = 1}", "  output %c", "}"]
    return "\n".join(lines)


def compile_text(text: str) -> None:
    rlxir.compile(rlxir.parse(text, "<shape>").main, "rocm", {"B": 2})


def train_step(text: str) -> None:
    rlxir.compile_training(rlxir.parse(text, "<shape>").main, "rocm", {"B": 2}, optimizer="adamw")


SHAPES = {
    "qkv": (qkv_text, compile_text, 1),
    "attention-train": (attention_text, train_step, 1),
    "params-first-train": (params_first_text, train_step, 1),
    "train-text": (train_text, compile_text, 50),  # statements, not layers
    "concat": (concat_text, compile_text, 8),  # values concatenated
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000],
                        help="layers per shape (train-text: 50x as many statements; concat: 8x as many values)")
    parser.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=list(SHAPES))
    parser.add_argument("--json", action="store_true", help="one JSON row per shape and size instead of the table")
    args = parser.parse_args()
    rows = []
    for shape in args.shapes:
        write, run, scale = SHAPES[shape]
        previous = None
        for size in args.sizes:
            text = write(size * scale)
            start = time.perf_counter()
            run(text)
            seconds = time.perf_counter() - start
            per_4x = None
            if previous is not None:
                # The time ratio rescaled to a 4x step: t2 / t1 = (n2 / n1)^k, shown as 4^k.
                exponent = math.log(seconds / previous[1]) / math.log(size / previous[0])
                per_4x = 4 ** exponent
            rows.append({"shape": shape, "size": size * scale, "seconds": round(seconds, 3),
                         "x_per_4x": None if per_4x is None else round(per_4x, 2)})
            previous = (size, seconds)
            if not args.json:
                print(f"{shape:20s} {size * scale:>8d} {seconds:8.2f} s"
                      + ("" if per_4x is None else f"   x{per_4x:.1f} per 4x"), flush=True)
    if args.json:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
