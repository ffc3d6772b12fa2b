"""`rlxir compare` in worker processes against the serial run, on generated graphs.

Usage: python bench/compare.py [--sizes 10000 100000] [--jobs 2]

For each size, bench/parse.py's GPT-style stack is written to a file and `rlxir compare`
runs on it twice, with --jobs 1 and with --jobs N: the table gives the serial run's wall
seconds and the parallel run's as a fraction of it (wall-clock, since using more cores is
the point; both runs are in the same invocation, so the machine's load touches both),
the CPU seconds of the parallel run (parent and workers) over the serial run's (what the
workers cost beyond the work itself), the machine's load average after the pair (other
processes on the same cores take from the parallel run first), and whether the two
outputs are byte-identical (they must be).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from parse import stack_text  # noqa: E402  (bench/parse.py)

from rlxir.compiler.workers import available_cores  # noqa: E402

COMMAND = "import sys; from rlxir.cli import main; sys.exit(main())"


def timed_compare(path: str, jobs: int) -> tuple[float, float, bytes]:
    """(wall seconds, CPU seconds of the process and its workers, stdout) of one compare."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    finished = subprocess.run([sys.executable, "-c", COMMAND, "compare", path, "-D", "B=1", "-D", "S=128",
                               "--vram", "24GiB", "--jobs", str(jobs)], capture_output=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), finished.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--jobs", type=int, default=available_cores())
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores, {available_cores()} available; parallel runs with --jobs {args.jobs}")
    header = (f"{'statements':>10} {'serial s':>9} {'parallel / serial':>17} {'CPU parallel / serial':>21} "
              f"{'load':>5} {'identical':>9}")
    print(header)
    print("-" * len(header))
    for size in args.sizes:
        with tempfile.NamedTemporaryFile("w", suffix=".rlx", delete=False) as handle:
            handle.write(stack_text(size))
        try:
            serial_s, serial_cpu, serial_out = timed_compare(handle.name, 1)
            parallel_s, parallel_cpu, parallel_out = timed_compare(handle.name, args.jobs)
        finally:
            os.unlink(handle.name)
        print(f"{size:>10} {serial_s:>9.2f} {parallel_s / serial_s:>17.2f} {parallel_cpu / serial_cpu:>21.2f} "
              f"{os.getloadavg()[0]:>5.1f} {str(serial_out == parallel_out):>9}")


if __name__ == "__main__":
    main()
