"""Parse / verify / print throughput on generated graphs, as ratios to a regex scan.

Usage: python bench/parse.py [--sizes 1000 10000 100000] [--families gpt elem mamba]
                             [--repeat 1] [--no-check]

One row per family and size: the seconds of a plain regex scan of the text (every token
found by one `re.finditer`), then parse, verify and print as multiples of that scan, the
parse time's growth per 10x statements, and what `rlxir check FILE` costs beyond parse +
verify in this process (its process start, imports, grammar load, cold caches and summary),
also as a multiple of the scan, and a `check` process less a fresh process that imports
rlxir, parses and verifies (what the command itself adds). Times are the process's CPU seconds (best of --repeat), so other work on the machine
disturbs them less than wall-clock time; the scan is measured in the same run.

Families, all written the way the printer writes them (result types on every op):
- gpt: GPT-style layer stacks (layernorm, linear, reshape/transpose, attention, gelu,
  residual adds) with symbolic B and S;
- elem: short elementwise statements and matmuls, `%v3 = matmul(%v2, %w) : f32[B, 64]`;
- mamba: bench/pipeline.py's unrolled Mamba layers (slices, reshapes, muls per token).
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import re
import resource
import subprocess
import sys
import tempfile
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


ELEMENTWISE_OPS = ("add", "mul", "sub", "relu", "tanh", "matmul", "exp")


def elementwise_text(statements: int, seed: int = 0) -> str:
    """`statements` short statements over f32[B, 64]: binary ops read the previous value and
    one of the twenty before it, matmuls a shared weight."""
    rng = random.Random(seed)
    lines = ["graph elem(B) {", "  input %v0 : f32[B, 64]", "  param %w : f32[64, 64]"]
    for index in range(1, statements - 2):
        op = rng.choice(ELEMENTWISE_OPS)
        if op == "matmul":
            operands = f"%v{index - 1}, %w"
        elif op in ("relu", "tanh", "exp"):
            operands = f"%v{index - 1}"
        else:
            operands = f"%v{index - 1}, %v{rng.randrange(max(0, index - 20), index)}"
        lines.append(f"  %v{index} = {op}({operands}) : f32[B, 64]")
    lines.append(f"  output %v{statements - 3}")
    return "\n".join(lines) + "\n}\n"


def mamba_text(statements: int) -> str:
    from pipeline import mamba_text as unrolled  # bench/pipeline.py (it imports this module)

    return unrolled(statements)


FAMILIES = {"gpt": stack_text, "elem": elementwise_text, "mamba": mamba_text}
_TOKEN = re.compile(r"%[A-Za-z0-9_.]+|[A-Za-z_][A-Za-z0-9_.]*|[0-9]+|\S")


def regex_scan(text: str) -> int:
    """The baseline: every token of `text` found by one regular expression."""
    return sum(1 for _ in _TOKEN.finditer(text))


def timed(function, repeat: int):
    best, result = float("inf"), None
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        result = function()
        best = min(best, time.process_time() - start)
    return best, result


CHECK_PROCESS = "import sys; from rlxir.cli import main; sys.exit(main(['check', sys.argv[1]]))"
PARSE_VERIFY_PROCESS = "import sys, rlxir; [rlxir.verify(graph) for graph in rlxir.parse_file(sys.argv[1])]"


def process_seconds(code: str, path: str) -> float:
    """CPU seconds of a fresh Python process running `code` on `path` (start-up included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code, path], check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def check_extra_seconds(text: str) -> tuple[float, float]:
    """What a whole `rlxir check` process costs beyond (a) parse + verify in this warm
    process and (b) a fresh process that imports rlxir, parses and verifies: the first
    counts start-up, imports and cold caches too, the second only what `check` adds."""
    with tempfile.NamedTemporaryFile("w", suffix=".rlx", delete=False) as handle:
        handle.write(text)
    try:
        check_s = process_seconds(CHECK_PROCESS, handle.name)
        library_s = process_seconds(PARSE_VERIFY_PROCESS, handle.name)
    finally:
        os.unlink(handle.name)
    return check_s, check_s - library_s


def measure(family: str, size: int, repeat: int, check: bool) -> dict:
    text = FAMILIES[family](size)
    count = text.count("\n") - 1
    scan_s, _ = timed(lambda: regex_scan(text), max(repeat, 3))
    parse_s, module = timed(lambda: rlxir.parse(text, "<bench>"), repeat)
    verify_s, _ = timed(lambda: rlxir.verify(module.main), repeat)
    print_s, printed = timed(lambda: rlxir.print_module(module), repeat)
    assert printed == rlxir.print_module(rlxir.parse(printed)), "round trip drifted"
    check_s, beyond_library = check_extra_seconds(text) if check else (None, None)
    return {"family": family, "statements": count, "scan": scan_s, "parse": parse_s, "verify": verify_s,
            "print": print_s, "check_extra": None if check_s is None else check_s - parse_s - verify_s,
            "check_beyond_library": beyond_library}


def print_table(headers: list[str], lines: list[list[str]], markdown: bool) -> None:
    """Rows of cells as Markdown or as right-aligned columns (the benches' tables)."""
    if markdown:
        print("| " + " | ".join(headers) + " |")
        print("|" + "|".join("---" if index == 0 else "---:" for index in range(len(headers))) + "|")
        for cells in lines:
            print("| " + " | ".join(cells) + " |")
        return
    widths = [max(len(header), *(len(cells[index]) for cells in lines)) for index, header in enumerate(headers)]
    print("  ".join(header.rjust(width) for header, width in zip(headers, widths)))
    for cells in lines:
        print("  ".join(cell.rjust(width) for cell, width in zip(cells, widths)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs")
    parser.add_argument("--no-check", action="store_true", help="skip the `rlxir check` process")
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} {platform.python_version()}")
    start = time.process_time()
    rlxir.parse("graph warm { input %x : f32[] output %x }")
    print(f"grammar load (once per process): {time.process_time() - start:.3f} s")
    header = (f"{'family':>6} {'statements':>10} {'scan s':>7} {'parse/scan':>10} {'verify/scan':>11} "
              f"{'p+v/scan':>8} {'print/scan':>10} {'parse x/10x':>11} {'check extra/scan':>16} "
              f"{'p+v s':>6} {'check extra s':>13} {'check - library process s':>25}")
    print(header)
    print("-" * len(header))
    for family in args.families:
        previous = None
        for size in args.sizes:
            row = measure(family, size, args.repeat, not args.no_check)
            scan, count = row["scan"], row["statements"]
            growth = f"{row['parse'] / previous[1] * previous[0] / count * 10:.1f}" if previous else "-"
            extra, beyond = row["check_extra"], row["check_beyond_library"]
            print(f"{family:>6} {count:>10} {scan:>7.3f} {row['parse'] / scan:>10.1f} {row['verify'] / scan:>11.1f} "
                  f"{(row['parse'] + row['verify']) / scan:>8.1f} {row['print'] / scan:>10.1f} {growth:>11} "
                  f"{'-' if extra is None else f'{extra / scan:.1f}':>16} {row['parse'] + row['verify']:>6.2f} "
                  f"{'-' if extra is None else f'{extra:.2f}':>13} "
                  f"{'-' if extra is None else f'{beyond:.2f}':>25}")
            previous = (count, row["parse"])


if __name__ == "__main__":
    main()
