"""What an arena run costs next to the interpreter, on real models.

Usage: python bench/arena_cost.py [--corpus NAME ...] [--imported NAME ...] [--targets cpu ...]

Each model of the ONNX corpus (examples/corpus/NAME.onnx, imported with its weights, batch
2 as the corpus tests run it) and each imported vision model (examples/imported/NAME.rlx,
batch 1, weights filled) runs once in the interpreter on its original graph, then in each
target's arena (`rlxir.check_execution` with that one reference run: poison checks on, the
outputs compared). The table: nodes, the largest arena, the interpreter's seconds, each
target's arena-run seconds over the interpreter's, the worst ratio, and whether every target
matched. The aim is an arena run that costs at most about 3x the interpreter.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np

import rlxir
from rlxir.targets.devices import format_bytes

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ["squeezenet", "mobilevit", "mnasnet", "resnet", "mobilenet_v3_small", "convnext", "vit", "gpt2"]
IMPORTED = ["resnet50", "densenet121"]
TARGETS = ["cpu", "cuda", "rocm", "metal", "gpu", "vulkan"]


def corpus_model(name: str):
    """(graph bound at batch 2, inputs, params) of examples/corpus/NAME.onnx and its stored inputs."""
    from rlxir.importers.onnx import import_onnx

    imported = import_onnx(ROOT / "examples" / "corpus" / f"{name}.onnx")
    stored = np.load(ROOT / "examples" / "corpus" / f"{name}.npz")
    inputs = {imported.inputs[key[len("input."):]]: stored[key] for key in stored.files if key.startswith("input.")}
    return imported.graph.bind({"B": 2}), inputs, dict(imported.params)


def imported_model(name: str):
    graph = rlxir.parse_file(ROOT / "examples" / "imported" / f"{name}.rlx").main
    return graph.bind({"B": 1}) if "B" in graph.symbols else graph, {}, {}


def measure(label: str, graph, inputs: dict, params: dict, targets: list[str]) -> str:
    start = time.perf_counter()
    reference = rlxir.reference_run(graph, inputs=inputs, params=params)
    interpret_seconds = time.perf_counter() - start
    ratios, arenas, matched = [], [], True
    for target in targets:
        result = rlxir.compile(graph, target)
        check = rlxir.check_execution(graph, result, reference=reference)
        ratios.append(check.run.seconds / interpret_seconds)
        arenas.append(result.arena_bytes)
        matched &= check.matched
    cells = " ".join(f"{ratio:>6.2f}" for ratio in ratios)
    return (f"{label:<20} {len(graph):>6} {format_bytes(max(arenas)):>11} {interpret_seconds:>9.2f} {cells} "
            f"{max(ratios):>6.2f} {'yes' if matched else 'NO'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", nargs="*", default=CORPUS)
    parser.add_argument("--imported", nargs="*", default=IMPORTED)
    parser.add_argument("--targets", nargs="+", default=TARGETS)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"NumPy {np.__version__}\n")
    header = (f"{'model':<20} {'nodes':>6} {'arena':>11} {'interp s':>9} "
              + " ".join(f"{target:>6}" for target in args.targets) + f" {'worst':>6} match")
    print(header)
    print("-" * len(header))
    for name in args.corpus:
        print(measure(f"corpus/{name}", *corpus_model(name), args.targets), flush=True)
    for name in args.imported:
        print(measure(f"imported/{name}", *imported_model(name), args.targets), flush=True)


if __name__ == "__main__":
    main()
