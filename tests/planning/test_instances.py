"""Reading and writing MiniMalloc CSV instances and solutions."""

from __future__ import annotations

import pytest

from rlxir.planning import Buffer, InstanceError, read_instance, read_solution, write_solution


def write(tmp_path, text: str):
    path = tmp_path / "instance.csv"
    path.write_text(text)
    return path


def test_reads_buffers_in_file_order_ignoring_extra_columns(tmp_path):
    path = write(tmp_path, "id,lower,upper,size,alignment\nb1,0,3,4,8\nb2,3,9,4,8\n\n")
    assert read_instance(path) == [Buffer("b1", 0, 3, 4), Buffer("b2", 3, 9, 4)]


def test_column_order_follows_the_header(tmp_path):
    path = write(tmp_path, "size,upper,id,lower\n16,5,x,2\n")
    assert read_instance(path) == [Buffer("x", 2, 5, 16)]


def test_old_start_end_format_has_an_inclusive_end(tmp_path):
    path = write(tmp_path, "id,start,end,size\na,0,2,8\n")
    assert read_instance(path) == [Buffer("a", 0, 3, 8)]


def test_solution_round_trip(tmp_path):
    buffers = [Buffer("a", 0, 2, 10), Buffer("b", 1, 3, 6)]
    path = tmp_path / "solution.csv"
    write_solution(path, buffers, {"a": 0, "b": 10})
    assert path.read_text().splitlines()[0] == "id,lower,upper,size,offset"
    assert read_solution(path) == (buffers, {"a": 0, "b": 10})
    write_solution(path, buffers, [6, 0])
    assert read_solution(path)[1] == {"a": 6, "b": 0}


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ("", ":1:", "empty file"),
        ("id,lower,size\na,0,1\n", ":1:", r"lacks column\(s\) upper"),
        ("id,lower,upper,size\na,0,1,4\nb,0,x,4\n", ":3:", "upper must be an integer, got 'x'"),
        ("id,lower,upper,size\na,0,1\n", ":2:", "expected at least 4 fields"),
        ("id,lower,upper,size\na,5,5,4\n", ":2:", r"\[5, 5\) is empty"),
        ("id,lower,upper,size\na,0,1,-4\n", ":2:", "size must be >= 0"),
        ("id,lower,upper,size\n,0,1,4\n", ":2:", "empty id"),
        ("id,lower,upper,size\na,0,1,4\n\nb,0,1,4\na,2,3,4\n", ":5:", r"'a' appears again \(first on line 2\)"),
        ("id,lower,upper,size\na,0,1,4\na,x,3,4\n", ":3:", "lower must be an integer"),
    ],
)
def test_malformed_files_report_file_and_line(tmp_path, text, where, what):
    path = write(tmp_path, text)
    with pytest.raises(InstanceError, match=what) as error:
        read_instance(path)
    assert str(error.value).startswith(f"{path}{where}")
    assert error.value.path == str(path)


def test_a_repeated_id_in_a_solution_is_located(tmp_path):
    path = write(tmp_path, "id,lower,upper,size,offset\na,0,1,4,0\nb,0,1,4,4\nb,1,2,4,0\n")
    with pytest.raises(InstanceError, match=r"'b' appears again \(first on line 3\)") as error:
        read_solution(path)
    assert str(error.value).startswith(f"{path}:4:")


def test_solution_needs_an_offset_column(tmp_path):
    path = write(tmp_path, "id,lower,upper,size\na,0,1,4\n")
    with pytest.raises(InstanceError, match="lacks column.*offset"):
        read_solution(path)
