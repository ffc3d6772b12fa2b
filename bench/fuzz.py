"""Fuzz every command for longer than the suite does, and count what happened.

Usage: python bench/fuzz.py [--examples N] [--commands check run ...] [--seed N] [--show K]

The strategies are the suite's (rlxir.testing.fuzz, tested by tests/fuzz/): mutated example
graphs for check, print, opt, compile, run and grad, broken buffer lists for plan-csv, random
ONNX models for import (with the onnx extra). Then the hostile surroundings of
rlxir.testing.fuzz_hostile, one row a class: non-UTF-8 bytes in text inputs (bytes), closed
and full standard streams (streams), misbehaving plugins (plugins), outputs that alias inputs
or go through links (alias), ONNX initializers whose dims disagree with their data
(onnx-init); there a broken contract (an input overwritten, a link written through, a plugin's
exit taken as rlxir's) counts as a crash. For each command: the inputs tried, how many ran (exit 0), were refused with an explained error
(exit 1) or a usage error (exit 2), and the crashes (an exception escaping the CLI,
"internal error" or a traceback in its output). The first K crashes are printed in full,
to become regression tests.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed

from rlxir.testing.fuzz import fuzzed_commands, seed_texts
from rlxir.testing.fuzz_hostile import hostile_scenarios

REPOSITORY = Path(__file__).resolve().parents[1]


def fuzz_one(command, examples: int, seed: int) -> tuple[Counter, list, float]:
    """Run `command` on `examples` generated inputs; (exit-code counts, crashes, seconds)."""
    codes: Counter = Counter()
    crashes: list = []

    @hypothesis_seed(seed)
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(text=command.inputs)
    def trial(text):
        result = command.run_on(text)
        codes["crash" if result.crashed else result.code] += 1
        if result.crashed:
            crashes.append((text, result))

    start = time.perf_counter()
    trial()
    return codes, crashes, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=500, help="inputs per command (default: 500)")
    parser.add_argument("--commands", nargs="*", help="only these commands or classes (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=3, help="crashes printed in full (default: 3)")
    args = parser.parse_args()
    texts = seed_texts(REPOSITORY)
    commands = [command for command in [*fuzzed_commands(texts), *hostile_scenarios(texts)]
                if not args.commands or command.name in args.commands]
    print(f"{'command':<10} {'tried':>6} {'ran':>6} {'refused':>8} {'usage':>6} {'crashes':>8} {'seconds':>8}")
    shown = 0
    for command in commands:
        codes, crashes, seconds = fuzz_one(command, args.examples, args.seed)
        tried = sum(codes.values())
        print(f"{command.name:<10} {tried:>6} {codes[0]:>6} {codes[1]:>8} {codes[2]:>6} {len(crashes):>8} "
              f"{seconds:>8.1f}")
        for text, result in crashes[: max(args.show - shown, 0)]:
            shown += 1
            print(f"--- crash: rlxir {' '.join(result.arguments)}\n{text}\n--- output:\n{result.output}")


if __name__ == "__main__":
    main()
