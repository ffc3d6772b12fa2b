"""`rlxir fit --jobs N`: several batches planned per round, the one-process answer."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rlxir.cli import main
from rlxir.compiler.workers import can_fork

ROOT = Path(__file__).resolve().parents[2]
GPT2_BLOCK = ROOT / "examples" / "gpt2_block.rlx"
MAMBA_LM = ROOT / "examples" / "mamba_lm.rlx"
FIT = ["fit", GPT2_BLOCK, "--target", "cuda", "--max-batch", "64", "-D", "S=128", "--vram", "512MiB"]

needs_fork = pytest.mark.skipif(not can_fork(), reason="worker processes are forked")


def output(argv, capsys) -> tuple[int, str]:
    code = main([str(arg) for arg in argv])
    return code, capsys.readouterr().out


def test_one_job_prints_one_plan_per_round(capsys):
    code, out = output(FIT + ["--jobs", "1"], capsys)
    last = out.splitlines()[-1]
    assert code == 0 and re.fullmatch(r"largest batch that fits: \d+ \(arena .*; \d+ plans\)", last), last
    code, out = output(FIT + ["--jobs", "1", "--json"], capsys)
    result = json.loads(out)
    assert result["jobs"] == 1 and result["rounds"] == len(result["tried"])


@needs_fork
def test_more_jobs_give_the_same_answer_in_fewer_rounds(capsys):
    _, serial = output(FIT + ["--jobs", "1"], capsys)
    code, parallel = output(FIT + ["--jobs", "3"], capsys)
    assert code == 0
    answer, plans = serial.splitlines()[-1].rsplit("; ", 1)
    found = re.fullmatch(r"(\d+) plans in (\d+) rounds of up to 3\)", parallel.splitlines()[-1].rsplit("; ", 1)[1])
    assert parallel.splitlines()[-1].startswith(answer + "; ") and found
    assert int(found[1]) > int(plans.split()[0]) > int(found[2])
    assert set(serial.splitlines()[:-1]) <= set(parallel.splitlines())  # every serial row, and more
    serial_json = json.loads(output(FIT + ["--jobs", "1", "--json"], capsys)[1])
    parallel_json = json.loads(output(FIT + ["--jobs", "3", "--json"], capsys)[1])
    assert {key: value for key, value in parallel_json.items() if key not in ("tried", "rounds", "jobs")} == \
        {key: value for key, value in serial_json.items() if key not in ("tried", "rounds", "jobs")}
    assert parallel_json["jobs"] == 3 and parallel_json["rounds"] < serial_json["rounds"]


@needs_fork
def test_the_training_fit_in_workers_gives_the_serial_answer(capsys):
    base = ["fit", MAMBA_LM, "--target", "cuda", "--training", "--max-batch", "16", "-D", "S=4", "--vram", "1GiB",
            "--json"]
    serial = json.loads(output(base + ["--jobs", "1"], capsys)[1])
    parallel = json.loads(output(base + ["--jobs", "2"], capsys)[1])
    assert (parallel["batch"], parallel["arena_bytes"], parallel["reason"]) == \
        (serial["batch"], serial["arena_bytes"], serial["reason"])
    assert parallel["rounds"] < serial["rounds"]


@pytest.mark.parametrize("jobs", ["0", "-1", "two", "2.5", ""])
def test_jobs_must_be_a_positive_integer(jobs, capsys):
    with pytest.raises(SystemExit) as caught:
        main([str(arg) for arg in FIT] + ["--jobs", jobs])
    assert caught.value.code == 2
    assert "--jobs" in capsys.readouterr().err
