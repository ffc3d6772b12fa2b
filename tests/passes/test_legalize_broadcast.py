"""legalize-broadcast: which operands need an expand; idempotence."""

import pytest

import rlxir
from rlxir.pass_machinery.instruments import VerifyEach
from rlxir.passes.legalize_broadcast import runs_without_expand
from rlxir.pass_machinery.pipeline import run_pipeline
from rlxir.symbolic import Expr

B = Expr.symbol("B")


@pytest.mark.parametrize("operand, result, kept", [
    ((), (B, 4), True),
    ((1, 1), (B, 3, 4), True),
    ((4,), (B, 3, 4), True),
    ((3, 4), (B, 3, 4), True),
    ((B, 3, 1), (B, 3, 4), False),
    ((1, 3, 4), (B, 3, 4), False),
    ((3, 1), (3, 4), False),
    ((1, 4), (3, 4), False),
])
def test_runs_without_expand(operand, result, kept):
    assert runs_without_expand(operand, result) is kept


def test_nothing_to_expand_returns_false_and_a_second_run_changes_nothing():
    text = """graph g(B) {
      input %x : f32[B, 4]
      input %col : f32[B, 1]
      param %b : f32[4]
      %a = add(%x, %b)
      %d = div(%a, %col)
      output %d
    }"""
    once = run_pipeline(rlxir.parse(text).main, "legalize-broadcast", instruments=[VerifyEach(strict_claims=True)])
    assert [once.op(node) for node in once.ops()] == ["add", "expand", "div"]
    again = run_pipeline(once, "legalize-broadcast", instruments=[VerifyEach(strict_claims=True)])
    assert rlxir.print_graph(again) == rlxir.print_graph(once)
