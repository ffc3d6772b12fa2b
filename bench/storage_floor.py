"""How the graph's storage alone grows with the node count: the floor under the compile's growth.

Usage: python bench/storage_floor.py [--sizes 10000 100000] [--generators mlp cnn wide train gpt]
                                     [--repeat 3] [--walks 10] [--seed 0] [--no-pipeline] [--markdown]

The design keeps a graph in a `networkx.DiGraph` whose node key is the value name, and a
pass reads it by name. This bench measures what that storage costs per node as graphs grow,
with none of rlxir's own work in it, on bench/scale.py's texts (every generator of
bench/generators.py and the GPT reference). For each text, in fresh processes:

- the text is parsed with rlxir (so the names are the strings the parser makes, in
  schedule order, as every compile has them), and the value names with their operands are
  read out in schedule order; rlxir's graph is then dropped;
- build s: a `networkx.DiGraph` is built from them through networkx's own `add_node` and
  `add_edge`, a small record (op, operands) as each node's data — keyed by the names
  (`name`), or by each value's position in the schedule (`int`), the same graph otherwise;
- walks s: `--walks` passes over it, each visiting every value in schedule order (as
  rlxir's passes walk a graph), reading its record and, for each operand, how many readers that operand has — what a
  pass that reads every value and its edges does, and no more;
- lookups s: `--walks` passes that only look every value's record up by its key, in
  schedule order: the dictionary lookup that every read by name starts with. Per lookup,
  it is what the hash table's probes cost once the table outgrows the caches.

Each figure is the least CPU seconds of `--repeat` processes. growth / 10x is each
figure's growth from the previous size of the same text. Unless --no-pipeline, parse +
rocm pipeline + plan in a fresh process after its imports (bench/scale.py's
`pipeline_seconds`) is measured in the same run, so the compile's growth stands beside the
storage's.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from parse import print_table  # noqa: E402  (bench/parse.py)
from scale import PIPELINE_PROCESS, STATEMENT, TEXTS, run_process, size_argument  # noqa: E402

KEYS = ("name", "int")
FLOOR_PROCESS = (f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); "
                 "from storage_floor import storage_seconds; "
                 "print(storage_seconds(sys.argv[1], sys.argv[2], int(sys.argv[3])))")


def storage_seconds(path: str, keys: str, walks: int) -> str:
    """JSON of the build and walk CPU seconds of a DiGraph keyed by `keys` ("name" or "int")
    over the values of the graph in `path`, in this process."""
    import networkx as nx  # imported by the measuring process only

    import rlxir

    graph = rlxir.parse(Path(path).read_text(), path).main
    values = [(name, graph.op(name), graph.operands(name)) for name in graph.schedule()]
    del graph
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()  # as rlxir's graph work runs: no collector passes inside the timings
    try:
        position = {name: index for index, (name, _, _) in enumerate(values)}
        key = (lambda name: name) if keys == "name" else position.__getitem__
        start = time.process_time()
        digraph = nx.DiGraph()
        for name, op, operands in values:
            node = key(name)
            digraph.add_node(node, record=(op, operands))
            for operand in operands:
                digraph.add_edge(key(operand), node)
        built = time.process_time()
        order = [key(name) for name, _, _ in values]
        start_walks = time.process_time()
        nodes, predecessors, successors = digraph._node, digraph._pred, digraph._succ
        seen = 0
        for _ in range(walks):
            for node in order:
                op, _ = nodes[node]["record"]
                seen += len(op)
                for operand in predecessors[node]:
                    seen += len(successors[operand])
        walked = time.process_time()
        for _ in range(walks):
            for node in order:
                nodes[node]
        looked_up = time.process_time()
    finally:
        if was_enabled:
            gc.enable()
    return json.dumps({"values": len(values), "build_s": built - start, "walks_s": walked - start_walks,
                       "lookups_s": looked_up - walked, "checksum": seen})


def measure(generator: str, size: int, seed: int, repeat: int, walks: int, pipeline: bool) -> dict:
    text = TEXTS[generator](size, seed)
    row: dict = {"generator": generator, "statements": len(STATEMENT.findall(text))}
    with tempfile.NamedTemporaryFile("w", suffix=".rlx", delete=False) as handle:
        handle.write(text)
    del text
    try:
        for keys in KEYS:
            runs = [json.loads(_floor_process(handle.name, keys, walks)) for _ in range(repeat)]
            if len({run["checksum"] for run in runs}) != 1:
                raise SystemExit(f"{generator} {size}: the walks read different graphs")
            row["values"] = runs[0]["values"]
            row[f"{keys}_build_s"] = min(run["build_s"] for run in runs)
            row[f"{keys}_walks_s"] = min(run["walks_s"] for run in runs)
            row[f"{keys}_lookups_s"] = min(run["lookups_s"] for run in runs)
        if pipeline:
            row["pipeline_s"] = min(float(run_process(PIPELINE_PROCESS, handle.name)[3]) for _ in range(repeat))
    finally:
        os.unlink(handle.name)
    return row


def _floor_process(path: str, keys: str, walks: int) -> str:
    finished = subprocess.run([sys.executable, "-c", FLOOR_PROCESS, path, keys, str(walks)],
                              capture_output=True, text=True)
    if finished.returncode != 0:
        raise SystemExit(f"the storage process on {path} ({keys} keys) failed:\n{finished.stderr[-2000:]}")
    return finished.stdout


FIGURES = ("name_build_s", "name_walks_s", "name_lookups_s", "int_build_s", "int_walks_s", "int_lookups_s",
           "pipeline_s")


def add_growth(rows: list[dict]) -> None:
    """Each figure's growth per 10x statements against the previous size of the same text."""
    previous: dict[str, dict] = {}
    for row in rows:
        before = previous.get(row["generator"])
        for figure in FIGURES:
            if before is not None and figure in row and before.get(figure):
                decades = _decades(before["statements"], row["statements"])
                row[figure.replace("_s", "_growth")] = (row[figure] / before[figure]) ** (1 / decades)
        previous[row["generator"]] = row


def _decades(small: int, large: int) -> float:
    """How many tenfold steps lead from `small` statements to `large`."""
    return math.log10(large / small)


def print_rows(rows: list[dict], markdown: bool, pipeline: bool) -> None:
    header = ["generator", "statements", "values"]
    for keys in KEYS:
        header += [f"{keys}: build s", "growth / 10x", f"{keys}: walks s", "growth / 10x", f"{keys}: lookups s",
                   "growth / 10x"]
    if pipeline:
        header += ["parse + rocm + plan s", "growth / 10x"]
    table = []
    for row in rows:
        line = [row["generator"], f"{row['statements']:,}", f"{row['values']:,}"]
        for figure in FIGURES if pipeline else FIGURES[:-1]:
            growth = row.get(figure.replace("_s", "_growth"))
            line += [f"{row[figure]:.3f}", "-" if growth is None else f"{growth:.1f}"]
        table.append(line)
    print_table(header, table, markdown)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=size_argument, default=[10_000, 100_000])
    parser.add_argument("--generators", nargs="+", choices=list(TEXTS), default=list(TEXTS))
    parser.add_argument("--repeat", type=int, default=3, help="processes per figure; the least is shown")
    parser.add_argument("--walks", type=int, default=10, help="walks over every value per process")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-pipeline", dest="pipeline", action="store_false",
                        help="leave out parse + rocm pipeline + plan in a fresh process")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="the rows as JSON")
    output.add_argument("--markdown", action="store_true", help="the table as Markdown")
    options = parser.parse_args()
    rows = []
    for generator in options.generators:
        for size in sorted(options.sizes):
            rows.append(measure(generator, size, options.seed, options.repeat, options.walks, options.pipeline))
            if not options.json:
                print(f"# {generator} {size:,} measured", file=sys.stderr, flush=True)
    add_growth(rows)
    if options.json:
        print(json.dumps(rows, indent=2))
    else:
        print_rows(rows, options.markdown, options.pipeline)


if __name__ == "__main__":
    main()
