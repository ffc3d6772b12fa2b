"""ONNX Einsum: the contractions attention and MLPs use become one matmul (plus transposes and
reshapes), ellipses, diagonals and more operands one matmul per pair; checked against
onnxruntime and compiled on the six targets; malformed equations are refused."""

from __future__ import annotations

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import_ops import make_model, ops_of  # noqa: E402
from test_onnx_import_scatter import check_everywhere  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402

F = TensorProto.FLOAT

CASES = [
    # equation, operand shapes, output shape, matmuls expected, transposes at most
    ("bhid,bhjd->bhij", (["N", 2, 5, 4], ["N", 2, 6, 4]), ["N", 2, 5, 6], 0),
    ("bhij,bhjd->bhid", (["N", 2, 5, 6], ["N", 2, 6, 4]), ["N", 2, 5, 4], 0),
    ("bij,bjk->bik", (["N", 3, 4], ["N", 4, 5]), ["N", 3, 5], 0),
    ("ij,jk->ik", ([3, 4], [4, 5]), [3, 5], 0),
    ("bhqd,bkhd->bhqk", (["N", 2, 5, 4], ["N", 6, 2, 4]), ["N", 2, 5, 6], 1),
    ("bhqk,bkhd->bqhd", (["N", 2, 5, 6], ["N", 6, 2, 4]), ["N", 5, 2, 4], 2),
    ("bnd,de->bne", (["N", 5, 4], [4, 3]), ["N", 5, 3], 0),
    ("bi,bj->bij", (["N", 3], ["N", 4]), ["N", 3, 4], 0),
    ("ij,jk", ([3, 4], [4, 5]), [3, 5], 0),
    ("bcij,bckl->bijkl", (["N", 2, 2, 3], ["N", 2, 2, 2]), ["N", 2, 3, 2, 2], 2),
]


@pytest.mark.parametrize("equation, shapes, out, transposes", CASES, ids=[case[0] for case in CASES])
def test_two_operand_contractions(equation, shapes, out, transposes):
    node = helper.make_node("Einsum", ["a", "b"], ["y"], equation=equation)
    model = make_model([node], [("a", F, shapes[0]), ("b", F, shapes[1])], [("y", F, out)], opset=12)
    imported = check_everywhere(model, {"B": 2} if shapes[0][0] == "N" else None)
    ops = ops_of(imported)
    assert ops.count("matmul") == 1
    assert ops.count("transpose") <= transposes


@pytest.mark.parametrize("equation, shape, out, core", [
    ("bij->bji", ["N", 3, 4], ["N", 4, 3], "transpose"),
    ("bij->bi", ["N", 3, 4], ["N", 3], "reduce_sum"),
    ("bij->b", ["N", 3, 4], ["N"], "reduce_sum"),
])
def test_one_operand_transposes_and_sums(equation, shape, out, core):
    node = helper.make_node("Einsum", ["a"], ["y"], equation=equation)
    imported = check_everywhere(make_model([node], [("a", F, shape)], [("y", F, out)], opset=12), {"B": 2})
    assert ops_of(imported) == [core]


@pytest.mark.parametrize("equation, shapes", [
    ("bii->bi", [["N", 3, 3]]),
    ("...ii->...i", [["N", 2, 3, 3]]),
    ("bii", [["N", 3, 3]]),
    ("...ij,...jk->...ik", [["N", 3, 4], ["N", 4, 5]]),
    ("...ij,jk->...ik", [["N", 2, 3, 4], [4, 5]]),
    ("bij,...jk", [["N", 3, 4], [4, 5]]),
    ("ab,bc,cd->ad", [[2, 3], [3, 4], [4, 5]]),
    ("bi,bij,bj->b", [["N", 3], ["N", 3, 4], ["N", 4]]),
    ("i,i", [[5], [5]]),
    ("bij,bkj,bii->bk", [["N", 3, 4], ["N", 2, 4], ["N", 3, 3]]),
])
def test_ellipses_diagonals_and_more_operands(equation, shapes):
    names = [f"x{index}" for index in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], equation=equation)
    model = make_model([node], [(name, F, shape) for name, shape in zip(names, shapes)], [("y", F, None)], opset=12)
    imported = check_everywhere(model, {"B": 2} if any(shape[0] == "N" for shape in shapes) else None)
    assert ops_of(imported).count("matmul") == len(shapes) - 1


@pytest.mark.parametrize("equation, shapes, why", [
    ("...ijk,jk->...i", [[3], [2, 3]], "an ellipsis term has more letters"),
    ("ij,jk->ik", [[2, 3]], "for 1 operand"),
])
def test_other_equations_are_refused_naming_the_node_and_equation(equation, shapes, why):
    names = [f"x{index}" for index in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], equation=equation, name="e0")
    model = make_model([node], [(name, F, shape) for name, shape in zip(names, shapes)], [("y", F, None)], opset=12)
    model.graph.output[0].type.tensor_type.ClearField("shape")
    with pytest.raises(UnsupportedModel, match=rf"ONNX node 'e0' \(Einsum\): Einsum '{__import__('re').escape(equation)}'.*{why}"):
        import_onnx(model)


def test_a_letter_of_two_sizes_is_refused_naming_it():
    node = helper.make_node("Einsum", ["a", "b"], ["y"], equation="ij,jk->ik", name="e1")
    model = make_model([node], [("a", F, [2, 3]), ("b", F, [4, 5])], [("y", F, None)], opset=12)
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'e1' \(Einsum\): Einsum 'ij,jk->ik': letter 'j' is 3 .* and 4"):
        import_onnx(model)
