"""simplify: claims, idempotence, and rewrites at the graph's interface."""

import rlxir
from rlxir.pass_machinery.instruments import VerifyEach
from rlxir.pass_machinery.pipeline import run_pipeline


def simplify(text: str) -> rlxir.Graph:
    return run_pipeline(rlxir.parse(text).main, "simplify", instruments=[VerifyEach(strict_claims=True)])


def test_nothing_to_simplify_returns_false():
    text = """graph g(B) {
      input %x : f32[B, 4]
      const %two : f32[] = 2.0
      %y = mul(%x, %two)
      output %y
    }"""
    assert rlxir.print_graph(simplify(text)) == rlxir.print_graph(rlxir.parse(text).main)


def test_a_second_run_changes_nothing():
    once = simplify("""graph g(B) {
      input %x : f32[B, 4]
      const %zero : f32[] = 0.0
      %t = transpose(%x) {perm = [1, 0]}
      %u = transpose(%t) {perm = [1, 0]}
      %y = add(%u, %zero)
      output %y
    }""")
    assert once.outputs == ["y"] and once.operands("y")[0] == "x"
    assert rlxir.print_graph(simplify(rlxir.print_graph(once))) == rlxir.print_graph(once)


def test_an_output_that_would_become_an_input_keeps_its_node_and_name():
    graph = simplify("""graph g {
      input %x : f32[3]
      const %one : f32[] = 1.0
      %a = mul(%x, %one)
      %b = neg(%x)
      %c = neg(%b)
      output %a, %c
    }""")
    assert graph.outputs == ["a", "c"]
    assert graph.ops() == ["a", "b", "c"]


def test_the_zero_of_x_times_zero_has_the_dtype_of_the_product():
    graph = simplify("""graph g {
      input %i : i16[2, 2]
      input %b : bool[2]
      const %zero : i16[] = 0
      const %false : bool[] = false
      %p = mul(%zero, %i)
      %q = mul(%b, %false)
      output %p, %q
    }""")
    assert graph.outputs == ["p", "q"]
    product = graph.outputs[0]
    assert graph.kind(product) == "const" and graph.attrs(product)["value"] == 0
    assert isinstance(graph.attrs(product)["value"], int)
    assert graph.kind(graph.outputs[1]) == "const" and graph.attrs(graph.outputs[1])["value"] is False


def test_long_chains_converge():
    lines = ["graph g {", "  input %x : f32[4]", "  const %zero : f32[] = 0.0"]
    previous = "x"
    for index in range(300):
        lines.append(f"  %a{index} = add({'%' + previous}, %zero)")
        previous = f"a{index}"
    lines += [f"  output %{previous}", "}"]
    result = simplify("\n".join(lines))
    assert result.outputs == ["a299"] and result.ops() == ["a299"] and result.operands("a299")[0] == "x"
