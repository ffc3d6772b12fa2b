"""Instruments hooked around passes: verify-each, timing, printing, dumping, reproducers."""

from __future__ import annotations

import io

import pytest

import rlxir
from rlxir.pass_machinery.instruments import DumpStages, PrintIR, Reproducer, TimePasses, VerifyEach
from rlxir.pass_machinery.pipeline import PassFailure, run_pipeline

from inline_passes import register_test_pass

TEXT = """\
graph g(B) {
  input %x : f32[B, 4]
  %a = exp(%x)
  %b = exp(%x)
  %c = add(%a, %b)
  %dead = neg(%c)
  output %c
}
"""


def _add_a_node_and_deny_it(graph, ctx) -> bool:
    graph.add_op("relu", ("x",))
    return False


def _leave_a_wrong_result_type(graph, ctx) -> bool:
    graph.set_type("a", graph.type("a").with_dtype(rlxir.DType.f16))
    return True


def _fail_halfway(graph, ctx) -> bool:
    graph.add_op("relu", ("x",), name="half_done")
    raise ZeroDivisionError("boom")


register_test_pass("test-liar", "Changes the graph and claims it did not.", _add_a_node_and_deny_it)
register_test_pass("test-breaker", "Leaves a wrong result type behind.", _leave_a_wrong_result_type)
register_test_pass("test-crasher", "Fails halfway through.", _fail_halfway)


@pytest.fixture
def graph():
    return rlxir.parse(TEXT).main


def test_verify_each_names_the_pass_that_broke_the_graph(graph):
    with pytest.raises(rlxir.VerifyError, match="after pass test-breaker: %a = exp has type f16"):
        run_pipeline(graph, "cse,test-breaker", instruments=[VerifyEach()])


def test_verify_each_catches_a_false_claim(graph):
    with pytest.raises(rlxir.VerifyError, match="test-liar changed the graph but returned False"):
        run_pipeline(graph, "test-liar", instruments=[VerifyEach()])


def test_time_passes_reports_each_pass(graph):
    timer = TimePasses()
    run_pipeline(graph, "cse,dce", instruments=[timer])
    table = timer.table()
    assert [row[0] for row in timer.rows] == ["cse", "dce"]
    assert timer.rows[0][2:] == (5, 4, True) and timer.rows[1][2:] == (4, 3, True)
    assert "nodes in" in table and table.splitlines()[-1].startswith("total")


def test_print_after_change_only(graph):
    stream = io.StringIO()
    run_pipeline(graph, "cse,cse,dce", instruments=[PrintIR(after="all", only_changed=True, stream=stream)])
    text = stream.getvalue()
    assert text.count("IR after cse") == 1 and text.count("IR after dce") == 1


def test_print_before_one_pass(graph):
    stream = io.StringIO()
    run_pipeline(graph, "cse,dce", instruments=[PrintIR(before=["dce"], stream=stream)])
    assert stream.getvalue().startswith("// ----- IR before dce -----\ngraph g(B) {")
    assert "%b = exp" not in stream.getvalue()


def test_dump_stages_writes_numbered_files(graph, tmp_path):
    dump = DumpStages(tmp_path)
    run_pipeline(graph, "cse,dce", instruments=[dump])
    assert sorted(path.name for path in tmp_path.iterdir()) == ["000-input.rlx", "001-cse.rlx", "002-dce.rlx"]
    assert rlxir.parse_file(tmp_path / "002-dce.rlx").main.equals(run_pipeline(graph, "cse,dce"))


def test_reproducer_holds_the_ir_before_the_failing_pass(graph, tmp_path):
    stream = io.StringIO()
    reproducer = Reproducer("cse,test-crasher,dce", tmp_path, stream)
    with pytest.raises(PassFailure, match="pass test-crasher failed: ZeroDivisionError: boom"):
        run_pipeline(graph, "cse,test-crasher,dce", instruments=[reproducer])
    text = reproducer.path.read_text()
    assert text.startswith("# rlxir reproducer: pass test-crasher (#2) failed: ZeroDivisionError: boom")
    assert "# pipeline: cse,test-crasher,dce" in text
    reproduced = rlxir.parse(text).main
    assert "half_done" not in reproduced and "b" not in reproduced  # after cse, before the crash
    assert stream.getvalue().count("reproducer written to") == 1
