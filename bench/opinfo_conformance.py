"""PyTorch's OpInfo database through the PyTorch importer: up to three float32 samples of
every OpInfo, each ending pass / refused / mismatch / internal / no export.

    python bench/opinfo_conformance.py                   # summary table
    python bench/opinfo_conformance.py --by-op           # plus one row per OpInfo
    python bench/opinfo_conformance.py --json out.json   # every sample's outcome
    python bench/opinfo_conformance.py -k softmax        # OpInfos whose name contains "softmax"

The measure counts the samples that export; "Core ATen" rows are the OpInfos whose ATen op
carries ``torch.Tag.core`` (rlxir.testing.opinfo_conformance).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict

from rlxir.testing.conformance_report import TimeLimit, outcome_table, time_limit
from rlxir.testing.opinfo_conformance import (Outcome, core_aten_ops, is_core_aten, op_name, opinfos, run_sample,
                                              samples)

STATUSES = ("pass", "refused", "mismatch", "internal", "no export")


def timed_run(sample, seconds: int) -> Outcome:
    try:
        with time_limit(seconds):
            return run_sample(sample)
    except TimeLimit:
        return Outcome(sample.name, "internal", f"took over {seconds} s")
    except Exception as error:  # the harness itself must finish the table
        return Outcome(sample.name, "internal", f"{type(error).__name__}: {error}"[:300])


def table(title: str, rows: list[tuple[str, Counter]]) -> str:
    """One row per label: the samples that export, each status, and the pass share of them."""
    return outcome_table(title, rows, STATUSES, counted=STATUSES[:4], total_label="export", width=40)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="write every sample's outcome to this file")
    parser.add_argument("--by-op", action="store_true", help="a row per OpInfo")
    parser.add_argument("-k", default="", help="only OpInfos whose name contains this")
    parser.add_argument("--timeout", type=int, default=60, help="seconds per sample before it counts as internal")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    core = core_aten_ops()
    suites: dict[str, Counter] = defaultdict(Counter)
    by_op: dict[str, Counter] = defaultdict(Counter)
    records = []
    ops = opinfos(args.k)
    for index, op in enumerate(ops):
        in_core = is_core_aten(op, core)
        for sample in samples(op):
            outcome = timed_run(sample, args.timeout)
            suites["all OpInfos"][outcome.status] += 1
            if in_core:
                suites["Core ATen OpInfos"][outcome.status] += 1
            by_op[op_name(op)][outcome.status] += 1
            records.append({"op": op_name(op), "aten": op.aten_name, "core": in_core, "sample": sample.name,
                            "status": outcome.status, "detail": outcome.detail})
        print(f"\r{index + 1}/{len(ops)} OpInfos", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    print(table("suite (float32 samples)", sorted(suites.items())))
    if args.by_op:
        print()
        print(table("OpInfo", sorted(by_op.items())))
    print(f"\n{time.perf_counter() - start:.0f} s")
    if args.json:
        with open(args.json, "w") as file:
            json.dump(records, file, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
