"""End to end at scale: parse, every target's pipeline and plan, and a whole fit.

Usage: python bench/pipeline.py [--sizes 1000 10000 100000] [--families gpt mamba]
                                [--targets cpu cuda rocm metal gpu vulkan] [--huge] [--markdown]

For each family and size (graph nodes as parsed), in a fresh process so that its peak
memory is its own: CPU seconds (so that other work on the machine disturbs them less) to
parse the text; for each target, seconds of
`prepare_exec_graph` (bind + the target's whole pipeline) and of `plan_exec_graph`, with
the node count the planner saw; seconds of a whole `fit_batch` on rocm (requested batch 8,
24 GiB); the process's peak resident memory; and, per family, how parse + rocm pipeline +
plan grows per 10x nodes, and that sum as a multiple of a regex scan of the same text
(bench/parse.py's baseline, measured in the same process). `--huge` adds the 10^6-node rows.

Families, both at B=1 for the per-target rows:
- gpt: bench/parse.py's `stack_text` (GPT-style layers with attention, S = 128);
- mamba: unrolled Mamba layers (mamba-130m widths, d_inner 1536, N = 16): the selective
  scan written out step by step over 64 tokens, as transformers' reference path exports
  it (examples/imported/mamba_130m_hf.rlx), about 14 nodes per token per layer.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from parse import print_table, regex_scan, stack_text  # noqa: E402  (bench/parse.py)

TARGETS = ("cpu", "cuda", "rocm", "metal", "gpu", "vulkan")
GPT_BINDINGS = {"B": 1, "S": 128}
MAMBA_TOKENS = 64
D_MODEL, D_INNER, STATE, DT_RANK = 768, 1536, 16, 48

MAMBA_HEADER = f"""\
graph mamba_unrolled(B) {{
  input %x0 : f32[B, {MAMBA_TOKENS}, {D_MODEL}]
  param %norm.weight : f32[{D_MODEL}]
  param %in_proj : f32[{D_MODEL}, {2 * D_INNER}]
  param %x_proj : f32[{D_INNER}, {DT_RANK + 2 * STATE}]
  param %dt_proj : f32[{DT_RANK}, {D_INNER}]
  param %dt_bias : f32[{D_INNER}]
  param %A : f32[{D_INNER}, {STATE}]
  param %out_proj : f32[{D_INNER}, {D_MODEL}]
  const %h.zero : f32[B, {D_INNER}, {STATE}] = 0.0
"""

MAMBA_LAYER_HEAD = f"""\
  %l{{i}}.n = rmsnorm(%x{{i}}, %norm.weight) : f32[B, {MAMBA_TOKENS}, {D_MODEL}]
  %l{{i}}.xz = linear(%l{{i}}.n, %in_proj) : f32[B, {MAMBA_TOKENS}, {2 * D_INNER}]
  %l{{i}}.xs = slice(%l{{i}}.xz) {{{{axis = 2, start = 0, len = {D_INNER}}}}} : f32[B, {MAMBA_TOKENS}, {D_INNER}]
  %l{{i}}.z = slice(%l{{i}}.xz) {{{{axis = 2, start = {D_INNER}, len = {D_INNER}}}}} : f32[B, {MAMBA_TOKENS}, {D_INNER}]
  %l{{i}}.u = silu(%l{{i}}.xs) : f32[B, {MAMBA_TOKENS}, {D_INNER}]
  %l{{i}}.dbc = linear(%l{{i}}.u, %x_proj) : f32[B, {MAMBA_TOKENS}, {DT_RANK + 2 * STATE}]
  %l{{i}}.dtl = slice(%l{{i}}.dbc) {{{{axis = 2, start = 0, len = {DT_RANK}}}}} : f32[B, {MAMBA_TOKENS}, {DT_RANK}]
  %l{{i}}.Bm = slice(%l{{i}}.dbc) {{{{axis = 2, start = {DT_RANK}, len = {STATE}}}}} : f32[B, {MAMBA_TOKENS}, {STATE}]
  %l{{i}}.C = slice(%l{{i}}.dbc) {{{{axis = 2, start = {DT_RANK + STATE}, len = {STATE}}}}} : f32[B, {MAMBA_TOKENS}, {STATE}]
  %l{{i}}.dtp = linear(%l{{i}}.dtl, %dt_proj, %dt_bias) : f32[B, {MAMBA_TOKENS}, {D_INNER}]
  %l{{i}}.dt = sigmoid(%l{{i}}.dtp) : f32[B, {MAMBA_TOKENS}, {D_INNER}]
"""

MAMBA_STEP = f"""\
  %l{{i}}.s{{t}}.dt = slice(%l{{i}}.dt) {{{{axis = 1, start = {{t}}, len = 1}}}} : f32[B, 1, {D_INNER}]
  %l{{i}}.s{{t}}.dt3 = reshape(%l{{i}}.s{{t}}.dt) {{{{shape = [B, {D_INNER}, 1]}}}} : f32[B, {D_INNER}, 1]
  %l{{i}}.s{{t}}.dA = mul(%l{{i}}.s{{t}}.dt3, %A) : f32[B, {D_INNER}, {STATE}]
  %l{{i}}.s{{t}}.decay = exp(%l{{i}}.s{{t}}.dA) : f32[B, {D_INNER}, {STATE}]
  %l{{i}}.s{{t}}.u = slice(%l{{i}}.u) {{{{axis = 1, start = {{t}}, len = 1}}}} : f32[B, 1, {D_INNER}]
  %l{{i}}.s{{t}}.du = mul(%l{{i}}.s{{t}}.dt, %l{{i}}.s{{t}}.u) : f32[B, 1, {D_INNER}]
  %l{{i}}.s{{t}}.du3 = reshape(%l{{i}}.s{{t}}.du) {{{{shape = [B, {D_INNER}, 1]}}}} : f32[B, {D_INNER}, 1]
  %l{{i}}.s{{t}}.b = slice(%l{{i}}.Bm) {{{{axis = 1, start = {{t}}, len = 1}}}} : f32[B, 1, {STATE}]
  %l{{i}}.s{{t}}.dBu = mul(%l{{i}}.s{{t}}.du3, %l{{i}}.s{{t}}.b) : f32[B, {D_INNER}, {STATE}]
  %l{{i}}.s{{t}}.kept = mul(%l{{i}}.s{{t}}.decay, %{{h}}) : f32[B, {D_INNER}, {STATE}]
  %l{{i}}.h{{next}} = add(%l{{i}}.s{{t}}.kept, %l{{i}}.s{{t}}.dBu) : f32[B, {D_INNER}, {STATE}]
  %l{{i}}.s{{t}}.c = slice(%l{{i}}.C) {{{{axis = 1, start = {{t}}, len = 1}}}} : f32[B, 1, {STATE}]
  %l{{i}}.s{{t}}.c3 = reshape(%l{{i}}.s{{t}}.c) {{{{shape = [B, {STATE}, 1]}}}} : f32[B, {STATE}, 1]
  %l{{i}}.y{{t}} = matmul(%l{{i}}.h{{next}}, %l{{i}}.s{{t}}.c3) : f32[B, {D_INNER}, 1]
"""

MAMBA_LAYER_TAIL = f"""\
  %l{{i}}.ys = concat({{ys}}) {{{{axis = 2}}}} : f32[B, {D_INNER}, {MAMBA_TOKENS}]
  %l{{i}}.y = transpose(%l{{i}}.ys) {{{{perm = [0, 2, 1]}}}} : f32[B, {MAMBA_TOKENS}, {D_INNER}]
  %l{{i}}.gate = silu(%l{{i}}.z) : f32[B, {MAMBA_TOKENS}, {D_INNER}]
  %l{{i}}.gated = mul(%l{{i}}.y, %l{{i}}.gate) : f32[B, {MAMBA_TOKENS}, {D_INNER}]
  %l{{i}}.out = linear(%l{{i}}.gated, %out_proj) : f32[B, {MAMBA_TOKENS}, {D_MODEL}]
  %x{{next}} = add(%x{{i}}, %l{{i}}.out) : f32[B, {MAMBA_TOKENS}, {D_MODEL}]
"""

MAMBA_NODES_PER_LAYER = (MAMBA_LAYER_HEAD.count("\n") + MAMBA_TOKENS * MAMBA_STEP.count("\n")
                         + MAMBA_LAYER_TAIL.count("\n"))


def mamba_layer(i: int) -> str:
    steps = []
    for t in range(MAMBA_TOKENS):
        state = "h.zero" if t == 0 else f"l{i}.h{t}"
        steps.append(MAMBA_STEP.format(i=i, t=t, h=state, next=t + 1))
    ys = ", ".join(f"%l{i}.y{t}" for t in range(MAMBA_TOKENS))
    return MAMBA_LAYER_HEAD.format(i=i) + "".join(steps) + MAMBA_LAYER_TAIL.format(i=i, ys=ys, next=i + 1)


def mamba_text(nodes: int) -> str:
    """Unrolled Mamba layers, about `nodes` nodes in all (whole layers)."""
    layers = max(1, round(nodes / MAMBA_NODES_PER_LAYER))
    return MAMBA_HEADER + "".join(mamba_layer(i) for i in range(layers)) + f"  output %x{layers}\n}}\n"


FAMILIES = {"gpt": (stack_text, GPT_BINDINGS), "mamba": (mamba_text, {"B": 1})}


# --- one row, in its own process -------------------------------------------------------
def measure(family: str, size: int, targets: list[str], fit_target: str | None) -> dict:
    import rlxir
    from rlxir.compiler.compile import CompileOptions, plan_exec_graph, prepare_exec_graph
    from rlxir.compiler.fit import fit_batch
    from rlxir.targets.target import get_target

    make_text, bindings = FAMILIES[family]
    text = make_text(size)
    rlxir.parse("graph warm { input %x : f32[] output %x }")  # the grammar loads once per process
    scan_s = min(_cpu_seconds(partial(regex_scan, text)) for _ in range(3))
    start = time.process_time()
    graph = rlxir.parse(text, f"<{family}>").main
    row = {"family": family, "nodes": len(graph), "scan_s": scan_s, "parse_s": time.process_time() - start,
           "targets": {}}
    del text
    options = CompileOptions(validate=False)
    for target in targets:
        start = time.process_time()
        exec_graph = prepare_exec_graph(graph, get_target(target), bindings, options)
        prepared = time.process_time()
        plan = plan_exec_graph(exec_graph, get_target(target), options)
        row["targets"][target] = {"pipeline_s": prepared - start, "plan_s": time.process_time() - prepared,
                                  "nodes_planned": len(exec_graph.graph), "arena_bytes": plan.arena_bytes}
        del exec_graph, plan
    if fit_target:
        fixed = {key: value for key, value in bindings.items() if key != "B"}

        def build(batch: int):
            return graph.bind({**fixed, "B": batch})

        start = time.process_time()
        result = fit_batch(fit_target, 8, 0.6, build, vram=24 << 30, options=options)
        row["fit"] = {"target": fit_target, "s": time.process_time() - start, "batch": result.batch,
                      "plans": len(result.tried)}
    row["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return row


def _cpu_seconds(function) -> float:
    start = time.process_time()
    function()
    return time.process_time() - start


def run_row(family: str, size: int, targets: list[str], fit_target: str | None) -> dict:
    command = [sys.executable, __file__, "--one", family, str(size), "--targets", *targets,
               "--fit-target", fit_target or "none"]
    finished = subprocess.run(command, capture_output=True, text=True, check=False)
    if finished.returncode != 0:
        raise SystemExit(f"{family} {size} failed:\n{finished.stderr}")
    return json.loads(finished.stdout.strip().splitlines()[-1])


# --- report ----------------------------------------------------------------------------
def core_seconds(row: dict) -> float | None:
    """parse + rocm pipeline + rocm plan: the 10 s target's sum."""
    rocm = row["targets"].get("rocm")
    return None if rocm is None else row["parse_s"] + rocm["pipeline_s"] + rocm["plan_s"]


def print_rows(rows: list[dict], targets: list[str], markdown: bool) -> None:
    headers = ["family", "nodes", "parse s"] + [f"{target} pipe+plan s" for target in targets] + \
              ["nodes planned (rocm)", "fit s (plans)", "peak RSS GiB", "parse+rocm s", "parse+rocm / scan",
                "growth / 10x"]
    lines = []
    previous: dict[str, tuple[int, float]] = {}
    for row in rows:
        cells = [row["family"], f"{row['nodes']:,}", f"{row['parse_s']:.2f}"]
        for target in targets:
            timing = row["targets"][target]
            cells.append(f"{timing['pipeline_s']:.2f}+{timing['plan_s']:.2f}")
        rocm = row["targets"].get("rocm")
        cells.append(f"{rocm['nodes_planned']:,}" if rocm else "-")
        fit = row.get("fit")
        cells.append(f"{fit['s']:.1f} ({fit['plans']})" if fit else "-")
        cells.append(f"{row['peak_rss_bytes'] / 2**30:.2f}")
        core = core_seconds(row)
        cells.append(f"{core:.2f}" if core is not None else "-")
        cells.append(f"{core / row['scan_s']:.0f}" if core is not None else "-")
        growth = "-"
        if core is not None and row["family"] in previous:
            nodes, seconds = previous[row["family"]]
            growth = f"{(core / seconds) / (row['nodes'] / nodes) * 10:.1f}x"
        if core is not None:
            previous[row["family"]] = (row["nodes"], core)
        cells.append(growth)
        lines.append(cells)
    print_table(headers, lines, markdown)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument("--targets", nargs="+", default=list(TARGETS), choices=list(TARGETS))
    parser.add_argument("--fit-target", default="rocm", help="target of the fit column ('none' to skip)")
    parser.add_argument("--huge", action="store_true", help="add the 10^6-node rows (tens of minutes)")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--one", nargs=2, metavar=("FAMILY", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    fit_target = None if args.fit_target == "none" else args.fit_target
    if args.one:
        print(json.dumps(measure(args.one[0], int(args.one[1]), args.targets, fit_target)))
        return
    sizes = args.sizes + ([1_000_000] if args.huge and 1_000_000 not in args.sizes else [])
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, "
          f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB, "
          f"{platform.python_implementation()} {platform.python_version()}")
    rows = []
    for family in args.families:
        for size in sizes:
            rows.append(run_row(family, size, args.targets, fit_target))
            print(f"  measured {family} {rows[-1]['nodes']:,} nodes", file=sys.stderr, flush=True)
    print_rows(rows, args.targets, args.markdown)


if __name__ == "__main__":
    main()
