"""Parse / verify / print throughput on generated transformer-style graphs.

Usage: python bench/parse.py [--sizes 1000 10000 100000] [--repeat 1]

Prints one row per size: statements, seconds and statements per second for parse,
verify and print, and the ratio of parse time per 10x statements. The graphs are GPT-style
layer stacks (layernorm, linear, reshape/transpose, attention, gelu, residual adds) with
symbolic B and S, so tokens per statement match real files.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import time

import rlxir

LAYER = """\
  %l{i}.n1 = layernorm(%x{i}, %ln_g, %ln_b) : f32[B, S, 768]
  %l{i}.qkv = linear(%l{i}.n1, %w_qkv, %b_qkv) : f32[B, S, 2304]
  %l{i}.q = slice(%l{i}.qkv) {{axis = 2, start = 0, len = 768}} : f32[B, S, 768]
  %l{i}.k = slice(%l{i}.qkv) {{axis = 2, start = 768, len = 768}} : f32[B, S, 768]
  %l{i}.v = slice(%l{i}.qkv) {{axis = 2, start = 1536, len = 768}} : f32[B, S, 768]
  %l{i}.q4 = reshape(%l{i}.q) {{shape = [B, S, 12, 64]}} : f32[B, S, 12, 64]
  %l{i}.k4 = reshape(%l{i}.k) {{shape = [B, S, 12, 64]}} : f32[B, S, 12, 64]
  %l{i}.v4 = reshape(%l{i}.v) {{shape = [B, S, 12, 64]}} : f32[B, S, 12, 64]
  %l{i}.qt = transpose(%l{i}.q4) {{perm = [0, 2, 1, 3]}} : f32[B, 12, S, 64]
  %l{i}.kt = transpose(%l{i}.k4) {{perm = [0, 2, 1, 3]}} : f32[B, 12, S, 64]
  %l{i}.vt = transpose(%l{i}.v4) {{perm = [0, 2, 1, 3]}} : f32[B, 12, S, 64]
  %l{i}.att = attention(%l{i}.qt, %l{i}.kt, %l{i}.vt) {{causal = true}} : f32[B, 12, S, 64]
  %l{i}.at = transpose(%l{i}.att) {{perm = [0, 2, 1, 3]}} : f32[B, S, 12, 64]
  %l{i}.a3 = reshape(%l{i}.at) {{shape = [B, S, 768]}} : f32[B, S, 768]
  %l{i}.proj = linear(%l{i}.a3, %w_o, %b_o) : f32[B, S, 768]
  %l{i}.r1 = add(%x{i}, %l{i}.proj) : f32[B, S, 768]
  %l{i}.n2 = layernorm(%l{i}.r1, %ln_g, %ln_b) : f32[B, S, 768]
  %l{i}.up = linear(%l{i}.n2, %w_up, %b_up) : f32[B, S, 3072]
  %l{i}.act = gelu(%l{i}.up) {{approximate = true}} : f32[B, S, 3072]
  %l{i}.down = linear(%l{i}.act, %w_down, %b_down) : f32[B, S, 768]
  %x{next} = add(%l{i}.r1, %l{i}.down) : f32[B, S, 768]
"""
STATEMENTS_PER_LAYER = LAYER.count("\n")

HEADER = """\
graph stack(B, S) {
  input %x0 : f32[B, S, 768]
  param %ln_g : f32[768]
  param %ln_b : f32[768]
  param %w_qkv : f32[768, 2304]
  param %b_qkv : f32[2304]
  param %w_o : f32[768, 768]
  param %b_o : f32[768]
  param %w_up : f32[768, 3072]
  param %b_up : f32[3072]
  param %w_down : f32[3072, 768]
  param %b_down : f32[768]
"""


def stack_text(statements: int) -> str:
    """A graph of about `statements` statements (whole layers)."""
    layers = max(1, round(statements / STATEMENTS_PER_LAYER))
    body = "".join(LAYER.format(i=i, next=i + 1) for i in range(layers))
    return HEADER + body + f"  output %x{layers}\n}}\n"


def timed(function, repeat: int):
    best, result = float("inf"), None
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs")
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} {platform.python_version()}")
    start = time.perf_counter()
    rlxir.parse("graph warm { input %x : f32[] output %x }")
    print(f"grammar load (once per process): {time.perf_counter() - start:.3f} s")
    header = f"{'statements':>10} {'parse s':>8} {'stmt/s':>9} {'verify s':>8} {'stmt/s':>9} {'print s':>8} {'stmt/s':>9} {'parse x/10x':>11}"
    print(header)
    print("-" * len(header))
    previous = None
    for size in args.sizes:
        text = stack_text(size)
        count = text.count("\n") - 1
        parse_s, module = timed(lambda: rlxir.parse(text, "<bench>"), args.repeat)
        verify_s, _ = timed(lambda: rlxir.verify(module.main), args.repeat)
        print_s, printed = timed(lambda: rlxir.print_module(module), args.repeat)
        assert printed == rlxir.print_module(rlxir.parse(printed)), "round trip drifted"
        growth = f"{parse_s / previous[1] * previous[0] / count * 10:.1f}" if previous else "-"
        print(f"{count:>10} {parse_s:>8.3f} {count / parse_s:>9.0f} {verify_s:>8.3f} {count / verify_s:>9.0f} "
              f"{print_s:>8.3f} {count / print_s:>9.0f} {growth:>11}")
        previous = (count, parse_s)


if __name__ == "__main__":
    main()
