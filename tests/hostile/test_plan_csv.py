"""plan-csv on malformed CSVs and bad options: located user errors (exit 1 or 2), never exit 3."""

from __future__ import annotations

import pytest

from rlxir.cli import main

HEADER = "id,lower,upper,size\n"

BAD_CSVS = [
    ("negative size", HEADER + "b0,0,10,-100\n", ":2:"),
    ("empty interval", HEADER + "b0,5,3,10\n", ":2:"),
    ("missing column", "id,lower,size\nb0,0,10\n", ":1:"),
    ("non-integer", HEADER + "b0,0,x,10\n", ":2:"),
    ("empty file", "", ":1:"),
    ("short row", HEADER + "b0,0\n", ":2:"),
]


@pytest.mark.parametrize(("case", "text", "where"), BAD_CSVS, ids=[case[0] for case in BAD_CSVS])
def test_a_malformed_csv_is_a_located_user_error(tmp_path, capsys, case, text, where):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    assert main(["plan-csv", str(path)]) == 1
    err = capsys.readouterr().err
    assert "internal error" not in err
    assert f"bad.csv{where}" in err


def test_duplicate_ids_are_a_user_error(tmp_path, capsys):
    path = tmp_path / "dup.csv"
    path.write_text(HEADER + "b0,0,10,8\nb0,2,4,8\n")
    assert main(["plan-csv", str(path)]) == 1
    err = capsys.readouterr().err
    assert "internal error" not in err and "b0" in err


def test_a_missing_file_is_a_user_error(tmp_path, capsys):
    assert main(["plan-csv", str(tmp_path / "absent.csv")]) == 1
    assert "internal error" not in capsys.readouterr().err


def test_offsets_into_a_missing_directory_is_a_user_error(tmp_path, capsys):
    path = tmp_path / "ok.csv"
    path.write_text(HEADER + "b0,0,10,8\n")
    assert main(["plan-csv", str(path), "--offsets", str(tmp_path / "nodir" / "x.csv")]) == 1
    assert "nodir does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("budget", ["-1", "0", "nan", "inf", "soon"])
def test_a_time_budget_must_be_finite_and_positive(tmp_path, capsys, budget):
    path = tmp_path / "ok.csv"
    path.write_text(HEADER + "b0,0,10,8\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["plan-csv", str(path), "--planner", "best", "--time-budget", budget])
    assert exit_info.value.code == 2
    assert "--time-budget" in capsys.readouterr().err
