"""The ONNX backend test suite through the ONNX importer: every node case and the model
suites, with the outcome of each (pass / refused / mismatch / internal) and a table by op.

    python bench/onnx_conformance.py                   # summary tables
    python bench/onnx_conformance.py --by-op           # plus one row per op type
    python bench/onnx_conformance.py --json out.json   # every case's outcome
    python bench/onnx_conformance.py -k conv           # cases whose name contains "conv"

Cases are counted on two sets: "core dtypes" (every tensor f32/f16/i64/i32/bool) and "IR
dtypes" (also f64/i8/u8). A case that feeds shape-like inputs at run time also runs with
them as initializers, and passes when either way passes (rlxir.testing.onnx_conformance).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict

from rlxir.testing.conformance_report import TimeLimit, outcome_table, time_limit
from rlxir.testing.onnx_conformance import (BASELINE, CORE_DTYPES, IR_DTYPES, MODEL_SUITES, Outcome, best_of,
                                            model_suite_cases, node_cases, write_baseline)

STATUSES = ("pass", "refused", "mismatch", "internal")
MULTI_OP = "(several ops: expanded functions)"
"""The --by-op row of the cases whose model holds more than one op type (besides Constant)."""


def timed_best_of(case, seconds: int) -> Outcome:
    try:
        with time_limit(seconds):
            return best_of(case)
    except TimeLimit:
        return Outcome(case.name, "internal", f"took over {seconds} s")


def table(title: str, rows: list[tuple[str, Counter]], markdown: bool = False) -> str:
    return outcome_table(title, rows, STATUSES, markdown=markdown)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="write every case's outcome to this file")
    parser.add_argument("--by-op", action="store_true",
                        help="a row per op type (core-dtype node cases of one op; the rest in one row)")
    parser.add_argument("--markdown", action="store_true", help="the tables as Markdown")
    parser.add_argument("-k", default="", help="only cases whose name contains this")
    parser.add_argument("--timeout", type=int, default=60, help="seconds per case before it counts as internal")
    parser.add_argument("--no-models", action="store_true", help="node cases only")
    parser.add_argument("--write-baseline", action="store_true",
                        help=f"store the passing cases as the suite test's baseline ({BASELINE.name})")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    cases = [case for case in node_cases() if args.k in case.name]
    records = []
    core, ir = Counter(), Counter()
    by_op: dict[str, Counter] = defaultdict(Counter)
    for index, case in enumerate(cases):
        outcome = timed_best_of(case, args.timeout)
        dtypes = case.dtypes()
        in_core = dtypes <= CORE_DTYPES
        in_ir = dtypes <= IR_DTYPES
        if in_core:
            core[outcome.status] += 1
            ops = [op for op in case.op_types() if op not in ("Constant", "Identity")]
            by_op[ops[0] if len(ops) == 1 else MULTI_OP][outcome.status] += 1
        if in_ir:
            ir[outcome.status] += 1
        records.append({"suite": "node", "case": case.name, "ops": list(case.op_types()), "core": in_core,
                        "ir": in_ir, "status": outcome.status, "variant": outcome.variant, "detail": outcome.detail})
        if sys.stderr.isatty():
            print(f"\r{index + 1}/{len(cases)} {case.name[:60]:<60}", end="", file=sys.stderr)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    rows = [("node, core dtypes", core), ("node, IR dtypes", ir)]
    if not args.no_models:
        for suite in MODEL_SUITES:
            counts = Counter()
            for case in model_suite_cases(suite):
                if args.k not in case.name:
                    continue
                outcome = timed_best_of(case, args.timeout)
                counts[outcome.status] += 1
                records.append({"suite": suite, "case": case.name, "ops": list(case.op_types()), "core": True,
                                "ir": True, "status": outcome.status, "variant": outcome.variant,
                                "detail": outcome.detail})
            rows.append((f"model suite {suite}", counts))
    print(table("suite", rows, args.markdown))
    if args.by_op:
        print()
        print(table("op type (core dtypes)", sorted(by_op.items()), args.markdown))
    never = sorted(op for op, counts in by_op.items() if counts["pass"] == 0)
    print(f"\nop types with no passing core-dtype case: {len(never)} of {len(by_op)}")
    print(f"{time.perf_counter() - start:.1f} s")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(records, handle, indent=1)
    if args.write_baseline:
        if args.k or args.no_models:
            parser.error("--write-baseline needs the whole suite (no -k, no --no-models)")
        write_baseline(records)
        print(f"wrote {BASELINE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
