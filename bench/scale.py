"""The scale targets on held-out texts: `rlxir check` and `rlxir compile --target rocm` on
every generator of bench/generators.py, as ratios to a regex scan of the same text.

Usage: python bench/scale.py [--sizes 10000 100000] [--huge] [--generators cnn mlp wide train gpt]
                             [--repeat 2] [--no-library] [--seed 0] [--json | --markdown]

For each generator and size (and for bench/parse.py's GPT stack, `gpt`, as the reference),
in the same run:
- scan s: bench/parse.py's baseline, every token of the text found by one `re.finditer`
  (CPU seconds in this process, best of three);
- start s: a process that only imports `rlxir.cli` (what any command pays before reading);
- check s: a whole `rlxir check FILE` process, as bench/parse.py starts it (CPU seconds);
- compile s: a whole `rlxir compile FILE --target rocm --batch 1 --json` process: parse,
  verify, the rocm pipeline, the plan and the report (CPU seconds; a refusal past the u32
  arena ceiling still plans everything, and is reported as such);
- library s: parse + rocm pipeline (`prepare_exec_graph`) + plan (`plan_exec_graph`) in a
  fresh process after its imports, the parsed graph handed over to the compile as `rlxir
  compile` hands it (`CompileOptions(reuse_graph=True)`: bound and transformed itself, not a
  copy; bench/pipeline.py's "parse+rocm s" copies it, compiling it for several targets)
  (skip: --no-library);
- peak GiB: the compile process's peak resident memory;
- growth / 10x: how compile s (and library s) grow per 10x statements from the previous size.
Every process is timed alone (os.wait4), best of --repeat; peak memory is the largest seen.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generators import GENERATORS  # noqa: E402  (bench/generators.py)
from parse import CHECK_PROCESS, print_table, regex_scan, stack_text  # noqa: E402  (bench/parse.py)

# The bench's own GPT stack, measured beside the held-out texts as the reference: a target
# missed on every generator and on gpt alike says more about the machine's load than the text.
def gpt_text(statements: int, seed: int) -> str:
    """bench/parse.py's stack with S = 128 (bench/pipeline.py's binding) as the header's default."""
    return stack_text(statements).replace("graph stack(B, S)", "graph stack(B, S=128)", 1)


TEXTS = {**GENERATORS, "gpt": gpt_text}
STATEMENT = re.compile(r"^\s*(input|param|const|output|%\S+\s*=)", re.MULTILINE)

BINDINGS = {"B": 1}
START_PROCESS = "import rlxir.cli"
COMPILE_PROCESS = ("import sys; from rlxir.cli import main; "
                   "sys.exit(main(['compile', sys.argv[1], '--target', 'rocm', '--batch', '1', '--json']))")
PIPELINE_PROCESS = f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); " \
                   "from scale import pipeline_seconds; print(pipeline_seconds(sys.argv[1]))"


def run_process(code: str, path: str) -> tuple[float, int, int, str]:
    """CPU seconds, peak RSS bytes, exit code and stdout of `python -c CODE PATH`, this child alone."""
    with tempfile.TemporaryFile("w+") as captured:
        child = subprocess.Popen([sys.executable, "-c", code, path], stdout=captured, stderr=subprocess.PIPE,
                                 text=True)
        error = child.stderr.read()
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        captured.seek(0)
        output = captured.read()
    if child.returncode not in (0, 1) or (child.returncode == 1 and '"refused": true' not in output):
        raise SystemExit(f"`{code}` on {path} failed with exit {child.returncode}:\n{error[-2000:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, child.returncode, output


def pipeline_seconds(path: str) -> float:
    """parse + rocm pipeline + plan of the file's graph in this process, after the imports."""
    import rlxir
    from rlxir.compiler.compile import CompileOptions, plan_exec_graph, prepare_exec_graph
    from rlxir.targets.target import get_target

    text = Path(path).read_text()
    rlxir.parse("graph warm { input %x : f32[] output %x }")
    # As `rlxir compile` does: the graph parsed for this compile is bound and transformed itself.
    options = CompileOptions(validate=False, reuse_graph=True)
    start = time.process_time()
    graph = rlxir.parse(text, path).main
    rocm = get_target("rocm")
    exec_graph = prepare_exec_graph(graph, rocm, BINDINGS, options)
    plan_exec_graph(exec_graph, rocm, options)
    return time.process_time() - start


def best_scan_seconds(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        gc.collect()
        start = time.process_time()
        regex_scan(text)
        best = min(best, time.process_time() - start)
    return best


def measure(generator: str, size: int, seed: int, repeat: int, library: bool, start_s: float) -> dict:
    text = TEXTS[generator](size, seed)
    row = {"generator": generator, "statements": len(STATEMENT.findall(text)), "bytes": len(text.encode()),
           "start_s": start_s, "scan_s": best_scan_seconds(text)}
    with tempfile.NamedTemporaryFile("w", suffix=".rlx", delete=False) as handle:
        handle.write(text)
    del text
    try:
        check = [run_process(CHECK_PROCESS, handle.name) for _ in range(repeat)]
        compiles = [run_process(COMPILE_PROCESS, handle.name) for _ in range(repeat)]
        row["check_s"] = min(seconds for seconds, *_ in check)
        row["compile_s"] = min(seconds for seconds, *_ in compiles)
        row["peak_rss_bytes"] = max(peak for _, peak, *_ in compiles)
        report = json.loads(compiles[-1][3])
        row["nodes_planned"], row["refused"] = report["nodes"], report["refused"]
        if library:
            row["library_s"] = min(float(run_process(PIPELINE_PROCESS, handle.name)[3]) for _ in range(repeat))
    finally:
        os.unlink(handle.name)
    return row


def add_growth(rows: list[dict]) -> None:
    """Growth per 10x statements of compile s and library s against the previous size of the
    same generator."""
    previous: dict[str, dict] = {}
    for row in rows:
        before = previous.get(row["generator"])
        for key in ("compile_s", "library_s"):
            if before is None or key not in row:
                continue
            row[key.replace("_s", "_growth")] = (row[key] / before[key]) / (row["statements"] / before["statements"]) * 10
        previous[row["generator"]] = row


HEADERS = ("generator", "statements", "scan s", "start s", "check s", "check / scan", "check - start / scan",
           "compile s", "compile / scan", "compile growth / 10x", "library s", "library / scan",
           "library growth / 10x", "nodes planned", "peak GiB")


def cells(row: dict) -> list[str]:
    scan = row["scan_s"]

    def figure(key: str, form: str) -> str:
        return format(row[key], form) if key in row else "-"

    return [row["generator"], f"{row['statements']:,}", f"{scan:.3f}", f"{row['start_s']:.2f}",
            f"{row['check_s']:.2f}", f"{row['check_s'] / scan:.1f}", f"{(row['check_s'] - row['start_s']) / scan:.1f}",
            f"{row['compile_s']:.2f}", f"{row['compile_s'] / scan:.1f}", figure("compile_growth", ".1f"),
            figure("library_s", ".2f"), f"{row['library_s'] / scan:.1f}" if "library_s" in row else "-",
            figure("library_growth", ".1f"),
            f"{row['nodes_planned']:,}" + (" (refused)" if row["refused"] else ""),
            f"{row['peak_rss_bytes'] / 2**30:.2f}"]


def print_rows(rows: list[dict], markdown: bool) -> None:
    print_table(HEADERS, [cells(row) for row in rows], markdown)


def size_argument(text: str) -> int:
    return int(float(text))  # 1e5 as well as 100000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=size_argument, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--huge", action="store_true", help="add 10^6 statements (minutes per generator)")
    parser.add_argument("--generators", nargs="+", default=list(TEXTS), choices=list(TEXTS),
                        help="held-out generators, and gpt (bench/parse.py's stack) as the reference")
    parser.add_argument("--repeat", type=int, default=2, help="best of N processes for each figure")
    parser.add_argument("--no-library", action="store_true", help="skip the in-library parse + rocm column")
    parser.add_argument("--seed", type=int, default=0)
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the rows as JSON")
    output.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args()
    sizes = sorted(set(args.sizes + ([1_000_000] if args.huge else [])))
    start_s = min(run_process(START_PROCESS, "-")[0] for _ in range(3))
    rows = []
    for generator in args.generators:
        for size in sizes:
            rows.append(measure(generator, size, args.seed, args.repeat, not args.no_library, start_s))
            # each row as it is measured, so that an interrupted run keeps what it had
            print(f"  measured {json.dumps(rows[-1])}", file=sys.stderr, flush=True)
    add_growth(rows)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    load = os.getloadavg()[0]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, "
          f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB, "
          f"{platform.python_implementation()} {platform.python_version()}; load average {load:.1f}")
    print_rows(rows, args.markdown)


if __name__ == "__main__":
    main()
