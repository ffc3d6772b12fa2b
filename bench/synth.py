"""Write synthetic planning instances in the shared CSV format (id,lower,upper,size).

Usage: python bench/synth.py OUT.csv [--buffers N] [--seed S] [--long-share P]

The recipe of ``shared/data/synthetic/synth100k.csv`` (see its README) at any size: one
buffer per op t; with p = 0.90 it dies 1-3 ops later, with p = 0.09 4-64 ops later, and
with p = 0.01 (`--long-share`) 65-5000 ops later; sizes are log-normal multiples of 64 B.
With the defaults and 100,000 buffers it writes synth100k.csv byte for byte.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path


def synthetic_rows(buffers: int, seed: int = 1, long_share: float = 0.01) -> list[tuple[int, int, int, int]]:
    """(id, lower, upper, size) rows of the synthetic recipe, `buffers` of them."""
    rng = random.Random(seed)
    rows = []
    medium_share = 0.09
    for t in range(buffers):
        draw = rng.random()
        if draw < 1.0 - medium_share - long_share:
            last = t + rng.randint(1, 3)
        elif draw < 1.0 - long_share:
            last = t + rng.randint(4, 64)
        else:
            last = t + rng.randint(65, 5000)
        size = int(rng.lognormvariate(11, 1.5)) // 64 * 64 + 64
        rows.append((t, t, min(last, buffers) + 1, size))
    return rows


def write_instance(path: Path, rows: list[tuple[int, int, int, int]]) -> None:
    lines = ["id,lower,upper,size"] + [f"{i},{lo},{hi},{size}" for i, lo, hi, size in rows]
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--buffers", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--long-share", type=float, default=0.01)
    args = parser.parse_args()
    write_instance(args.out, synthetic_rows(args.buffers, args.seed, args.long_share))


if __name__ == "__main__":
    main()
