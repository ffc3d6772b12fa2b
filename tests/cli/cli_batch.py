"""Run several rlxir command lines in one process, each through `rlxir.cli.main` (the function
the ``rlxir`` console script calls), so a batch pays for one interpreter start.

stdin: a JSON list of argv lists. stdout: a JSON list, per command, of its ``argv``, exit
``code``, captured ``out`` and ``err``, and ``seconds`` (wall clock)."""

from __future__ import annotations

import contextlib
import io
import json
import sys
import time

from rlxir.cli import main


def run_command(argv: list[str]) -> dict:
    out, err = io.StringIO(), io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as stop:  # argparse's usage errors and --help
            code = stop.code if isinstance(stop.code, int) else 2
    return {"argv": argv, "code": code, "out": out.getvalue(), "err": err.getvalue(),
            "seconds": time.perf_counter() - started}


if __name__ == "__main__":
    results = [run_command(argv) for argv in json.load(sys.stdin)]
    json.dump(results, sys.stdout)
