"""const-fold: what the goldens do not show (claims, idempotence, options, refusals)."""

import numpy as np
import pytest

import rlxir
from rlxir.pass_machinery.instruments import VerifyEach
from rlxir.interpreter import interpret
from rlxir.pass_machinery.pipeline import PipelineError, parse_pipeline, run_pipeline


def fold(text: str, spec: str = "const-fold") -> rlxir.Graph:
    return run_pipeline(rlxir.parse(text).main, spec, instruments=[VerifyEach(strict_claims=True)])


def const_value(graph: rlxir.Graph, name: str):
    assert graph.kind(name) == "const", f"%{name} is a {graph.op(name)}"
    return graph.attrs(name)["value"]


def test_nothing_to_fold_returns_false_and_a_second_run_changes_nothing():
    text = """graph g(B) {
      input %x : f32[B]
      const %c : f32[] = 2.0
      %a = mul(%c, %c)
      %y = add(%x, %a)
      output %y
    }"""
    once = fold(text)
    assert once.operands("y")[1] == "a.1"
    fold(rlxir.print_graph(once))  # strict claims: a second run must return False unchanged


def test_max_elements_is_parsed_from_pipeline_text():
    pipeline = parse_pipeline("const-fold{max-elements=2}")
    assert pipeline.entries[0].instance.max_elements == 2
    with pytest.raises(PipelineError, match="takes int"):
        parse_pipeline("const-fold{max-elements=lots}")


def test_signed_zeros_and_nans_stay_exact():
    graph = fold("""graph g {
      const %z : f32[2] = [0.0, 1.0]
      const %m : f32[] = -1.0
      const %n : f32[] = nan
      %p = mul(%z, %m)
      %q = add(%n, %n)
      output %p, %q
    }""")
    assert const_value(graph, graph.outputs[0]) == (-0.0, -1.0)
    assert np.signbit(const_value(graph, graph.outputs[0])[0])
    assert np.isnan(const_value(graph, graph.outputs[1]))


def test_a_failing_reference_is_left_to_fail_at_run_time():
    graph = fold("""graph g {
      const %table : f32[2, 3] = 1.0
      const %i : i32[1] = [5]
      %y = gather(%table, %i)
      output %y
    }""")
    assert graph.op("y") == "gather"


def test_folded_value_keeps_location_and_provenance():
    source = rlxir.parse("""graph g {
      const %a : i32[] = 3
      %b = neg(%a)
      output %b
    }""", "f.rlx").main
    graph = run_pipeline(source, "const-fold")
    (folded,) = graph.outputs
    assert graph.location(folded) == source.location("b")
    assert graph.provenance(folded) == source.provenance("b")


def test_folding_agrees_with_the_interpreter_on_u8_and_pow():
    text = """graph g {
      const %a : u8[3] = [250, 3, 0]
      const %b : u8[] = 10
      const %e : f32[2] = [2.0, 0.5]
      const %base : f32[] = 9.0
      %s = add(%a, %b)
      %d = sub(%a, %b)
      %p = pow(%base, %e)
      output %s, %d, %p
    }"""
    before = rlxir.parse(text).main
    after = fold(text)
    expected, actual = interpret(before), interpret(after)
    for old, new in zip(before.outputs, after.outputs):
        assert after.kind(new) == "const"
        np.testing.assert_array_equal(actual[new], expected[old])
