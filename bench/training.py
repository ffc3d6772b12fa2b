"""Training-step sizes and times: rlxir.grad and the training compile of examples/mamba_lm.rlx.

Usage: python bench/training.py [--batch 8] [--seq 256] [--targets cpu,cuda,...] [--no-naive]

Prints three tables:

1. `grad`: seconds to differentiate the symbolic graph, and its size before and after.
2. Per target, the training compile at the given batch and sequence (`plan_training`, the
   path `compile --training` and `fit --training` share): nodes of the forward and of the
   training-step graph after the target's pipeline, the two arenas, the planner's lower
   bound, seconds.
3. How far naive estimates of the training arena are from what rocm plans: the shared
   liveness planner on the raw backward graph, and after `unfuse` + rocm's legalize only
   (both with rocm's alignment, dtype sizing, inference options), against rocm's pipeline
   planned with the liveness planner and with its own (bump).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import rlxir
from rlxir.compiler.compile import CompileOptions
from rlxir.targets.devices import format_bytes
from rlxir.compiler.memory_plan import plan_graph
from rlxir.pass_machinery.pipeline import run_pipeline
from rlxir.targets.target import available_targets, get_target
from rlxir.autodiff.training import plan_training

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "mamba_lm.rlx"


def timed(function, *args, **kwargs):
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - started


def grad_table(graph: rlxir.Graph) -> rlxir.Graph:
    backward, seconds = timed(rlxir.grad, graph)
    print(f"{'graph':<12} {'forward nodes':>14} {'backward nodes':>15} {'gradients':>10} {'grad s':>8}")
    print(f"{graph.name:<12} {len(graph):>14} {len(backward):>15} {len(backward.outputs) - 1:>10} {seconds:>8.3f}")
    return backward


def target_table(graph: rlxir.Graph, backward: rlxir.Graph, bindings: dict, targets: list[str]) -> dict:
    print(f"\n{'target':<8} {'planner':<9} {'fwd nodes':>10} {'step nodes':>11} {'forward arena':>15} "
          f"{'training arena':>15} {'lower bound':>12} {'seconds':>8}")
    results = {}
    for name in targets:
        result, seconds = timed(plan_training, graph, name, bindings, backward=backward)
        results[name] = result
        print(f"{name:<8} {result.backward.plan.planner:<9} {len(result.forward.graph):>10} "
              f"{len(result.backward.graph):>11} {format_bytes(result.forward_arena_bytes):>15} "
              f"{format_bytes(result.arena_bytes):>15} {format_bytes(result.backward.lower_bound_bytes):>12} "
              f"{seconds:>8.2f}")
    return results


def naive_table(graph: rlxir.Graph, backward: rlxir.Graph, bindings: dict, rocm_bump) -> None:
    rocm = get_target("rocm")
    bound = backward.bind(bindings)
    raw, raw_seconds = timed(plan_graph, bound, "liveness", rocm.alignment, "dtype")
    legalized, pass_seconds = timed(run_pipeline, bound.copy(), "unfuse,legalize-or-rewrite{target=rocm}")
    after, plan_seconds = timed(plan_graph, legalized, "liveness", rocm.alignment, "dtype")
    rocm_liveness, live_seconds = timed(plan_training, graph, rocm, bindings, CompileOptions(planner="liveness"),
                                        backward=backward)
    actual = rocm_bump.arena_bytes
    rows = [
        ("(a) liveness, raw backward graph", len(bound), raw.arena_bytes, raw_seconds),
        ("(b) liveness after unfuse + legalize", len(legalized), after.arena_bytes, pass_seconds + plan_seconds),
        ("rocm's pipeline, liveness planner", len(rocm_liveness.backward.graph), rocm_liveness.arena_bytes,
         live_seconds),
        ("rocm's pipeline and planner (bump)", len(rocm_bump.backward.graph), actual, None),
    ]
    print(f"\n{'estimate of the rocm training arena':<38} {'nodes':>7} {'arena':>11} {'rocm / it':>10} {'seconds':>8}")
    for label, nodes, arena, seconds in rows:
        shown = f"{seconds:.2f}" if seconds is not None else "-"
        print(f"{label:<38} {nodes:>7} {format_bytes(arena):>11} {actual / arena:>10.2f} {shown:>8}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--targets", default=",".join(sorted(available_targets())))
    parser.add_argument("--no-naive", action="store_true", help="skip the naive-estimate table")
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"{EXAMPLE.name} at B={args.batch}, S={args.seq}\n")
    graph = rlxir.parse_file(EXAMPLE).main
    backward = grad_table(graph)
    bindings = {"B": args.batch, "S": args.seq}
    targets = [name.strip() for name in args.targets.split(",")]
    results = target_table(graph, backward, bindings, targets)
    if not args.no_naive:
        rocm = results.get("rocm") or plan_training(graph, "rocm", bindings, backward=backward)
        naive_table(graph, backward, bindings, rocm)


if __name__ == "__main__":
    main()
