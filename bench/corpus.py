"""The real-model corpus (examples/corpus) per model and route: import seconds, nodes, and
the arena on cpu and rocm at batch 2; then coverage by family.

Usage: python bench/corpus.py [--routes onnx torch] [--models resnet gpt2 ...] [--batch 2]

The onnx route imports each stored NAME.onnx with `import_onnx`; the torch route builds the
same constructor (examples/corpus/models.py: needs torch, torchvision, timm and transformers)
and imports it with `import_torch`, axis 0 of every input the batch. Import seconds are
wall-clock of the import call alone (building the module, reading the file and
torch.export's one-time start-up are not counted), so they vary with the machine's load; nodes are the imported graph's ops; arenas
are each target's planned arena (`rlxir.compiler.compile.compile`). A model that does not import
gets its first error line instead. The tables are Markdown.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "corpus"
TARGETS = ("cpu", "rocm")
FAMILIES = {"cnn": "CNN", "vision-transformer": "vision transformer", "encoder": "encoder",
            "decoder-llm": "decoder-only LLM", "state-space": "state-space"}


def import_onnx_route(name: str):
    from rlxir.importers.onnx import import_onnx

    import onnx

    model = onnx.load(str(CORPUS / f"{name}.onnx"))
    start = time.perf_counter()
    imported = import_onnx(model)
    return imported, time.perf_counter() - start


def warm_up_torch() -> None:
    """One export of a tiny module first: torch.export's one-time start-up (seconds) would
    otherwise land on the first model's row."""
    import torch

    from rlxir.importers.torch import import_torch

    import_torch(torch.nn.Linear(4, 4), (torch.zeros(2, 4),))


def import_torch_route(name: str):
    sys.path.insert(0, str(CORPUS))
    import models

    from rlxir.importers.torch import import_torch

    example = models.build(name)
    start = time.perf_counter()
    imported = import_torch(example.module, example.inputs, dims=[{0: "B"}] * len(example.inputs))
    return imported, time.perf_counter() - start


ROUTES = {"onnx": import_onnx_route, "torch": import_torch_route}


def measure(name: str, route: str, batch: int) -> dict:
    """One row: seconds, nodes and arenas, or the error that stopped the import."""
    from rlxir.compiler.compile import compile
    from rlxir.errors import RlxError

    try:
        imported, seconds = ROUTES[route](name)
    except RlxError as error:
        return {"error": error.message.splitlines()[0]}
    arenas = {target: compile(imported.graph, target, {"B": batch}).arena_bytes for target in TARGETS}
    return {"seconds": seconds, "nodes": len(imported.graph.ops()), "arenas": arenas}


def mib(count: int) -> str:
    return f"{count / 2**20:,.2f}"


def print_models(entries: list[dict], rows: dict, routes: list[str], batch: int) -> None:
    print(f"| model | family | route | import s | nodes | cpu MiB (B = {batch}) | rocm MiB (B = {batch}) |")
    print("|---|---|---|---:|---:|---:|---:|")
    for entry in entries:
        for route in routes:
            row = rows[entry["name"], route]
            family = FAMILIES[entry["family"]]
            if "error" in row:
                print(f"| {entry['name']} | {family} | {route} | not imported: {row['error']} | | | |")
                continue
            arenas = " | ".join(mib(row["arenas"][target]) for target in TARGETS)
            print(f"| {entry['name']} | {family} | {route} | {row['seconds']:.2f} | {row['nodes']:,} | {arenas} |")


def print_coverage(entries: list[dict], rows: dict, routes: list[str]) -> None:
    print("| family | " + " | ".join(f"{route} imported" for route in routes) + " |")
    print("|---|" + "---:|" * len(routes))
    totals = Counter(entry["family"] for entry in entries)
    for family, label in FAMILIES.items():
        if not totals[family]:
            continue
        members = [entry["name"] for entry in entries if entry["family"] == family]
        print(f"| {label} | " + " | ".join(imported_share(members, rows, route) for route in routes) + " |")
    everyone = [entry["name"] for entry in entries]
    print("| all | " + " | ".join(imported_share(everyone, rows, route) for route in routes) + " |")


def imported_share(names: list[str], rows: dict, route: str) -> str:
    return f"{sum(1 for name in names if 'error' not in rows[name, route])}/{len(names)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--routes", nargs="+", choices=sorted(ROUTES), default=["onnx", "torch"])
    parser.add_argument("--models", nargs="+", help="corpus names (default: all)")
    parser.add_argument("--batch", type=int, default=2)
    args = parser.parse_args()
    entries = json.loads((CORPUS / "manifest.json").read_text())["models"]
    if args.models:
        unknown = sorted(set(args.models) - {entry["name"] for entry in entries})
        if unknown:
            parser.error(f"not in the corpus: {', '.join(unknown)}")
        entries = [entry for entry in entries if entry["name"] in args.models]
    if "torch" in args.routes:
        warm_up_torch()
    rows = {}
    for entry in entries:
        for route in args.routes:
            rows[entry["name"], route] = measure(entry["name"], route, args.batch)
            print(f"{entry['name']} {route}: {rows[entry['name'], route]}", file=sys.stderr, flush=True)
    print_models(entries, rows, args.routes, args.batch)
    print()
    print_coverage(entries, rows, args.routes)


if __name__ == "__main__":
    main()
