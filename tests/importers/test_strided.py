"""Slices with any step (negative too) on a symbolic dim, through ONNX (against onnxruntime,
on models with a dynamic axis built here) and through `import_torch` (against eager
PyTorch): the kept count is a dim expression, values of the dim that would need clamping are
refused when bound, and bounds no dim expression can follow are located import errors."""

from __future__ import annotations

import numpy as np
import pytest

from rlxir.compiler.compile import compile
from rlxir.errors import RlxError
from rlxir.importers import UnsupportedModel
from rlxir.symbolic import parse_dim

INT_MAX = 2**63 - 1

# (start, end, step, the kept count as the graph writes it, the smallest S it holds for)
SYMBOLIC_SLICES = [
    (0, INT_MAX, 2, "(S + 1)//2", 0),
    (1, INT_MAX, 3, "(S + 1)//3", 0),
    (-1, -INT_MAX, -1, "S", 0),
    (INT_MAX, -INT_MAX, -2, "(S + 1)//2", 0),
    (-1, INT_MAX, 1, "1", 1),
    (0, -1, 1, "S - 1", 1),
    (1, INT_MAX, 1, "S - 1", 1),
    (1, -1, 2, "(S - 1)//2", 2),
    (-4, -1, 1, "3", 4),
    (-3, INT_MAX, 2, "2", 3),
    (-2, -6, -1, "4", 5),
    (-2, 0, -1, "S - 2", 2),
    (2, 7, 2, "3", 7),
    (6, 1, -2, "3", 7),
    (3, 3, 1, "0", 0),
]
IDS = [f"{start}:{end}:{step}" for start, end, step, _, _ in SYMBOLIC_SLICES]


onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import_ops import check, make_model  # noqa: E402

from rlxir.importers.onnx import import_onnx  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def onnx_slice(start, end, step, name="strided"):
    arrays = [("s", np.array([start], np.int64)), ("e", np.array([end], np.int64)),
              ("a", np.array([1], np.int64)), ("p", np.array([step], np.int64))]
    node = helper.make_node("Slice", ["x", "s", "e", "a", "p"], ["y"], name=name)
    return make_model([node], [("x", F, ["N", "S", 3])], [("y", F, ["N", None, 3])], arrays)


def sizes_to_try(smallest: int) -> list[int]:
    return sorted({max(smallest, 1), 7, 12})


@pytest.mark.parametrize("start, end, step, count, smallest", SYMBOLIC_SLICES, ids=IDS)
def test_onnx_slice_of_a_symbolic_dim_matches_onnxruntime(start, end, step, count, smallest):
    model = onnx_slice(start, end, step)
    imported = None
    for size in sizes_to_try(smallest):
        imported = check(model, bindings={"B": 2, "S": size})
    for target in ("cpu", "rocm"):
        compile(imported.graph, target, {"B": 2, "S": 12})
    assert imported.graph.type(imported.outputs["y"]).shape[1] == parse_dim(count)


def test_onnx_slice_bounds_computed_from_the_shape():
    """starts = S - 3 and ends = S read from Shape(x): bounds as dim expressions."""
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "one"], ["length"], axis=0),
             helper.make_node("Sub", ["length", "three"], ["begin"]),
             helper.make_node("Slice", ["x", "begin", "length", "one", "two"], ["y"])]
    arrays = [("one", np.array([1], np.int64)), ("three", np.array([3], np.int64)), ("two", np.array([2], np.int64))]
    model = make_model(nodes, [("x", F, ["N", "S", 3])], [("y", F, ["N", None, 3])], arrays)
    for size in (3, 8):
        imported = check(model, bindings={"B": 2, "S": size})
    assert imported.graph.type(imported.outputs["y"]).shape[1] == 2


@pytest.mark.parametrize("start, end, step, size", [(-4, INT_MAX, 1, 3), (0, 8, 1, 5), (6, 1, -2, 6), (-2, -6, -1, 4)])
def test_a_dim_value_that_would_need_clamping_is_refused_when_bound(start, end, step, size):
    """ONNX would clamp these bounds for this S; the graph, written for the S that need no
    clamping, refuses it instead of computing something else."""
    imported = import_onnx(onnx_slice(start, end, step))
    from rlxir.interpreter import interpret

    x = np.zeros((2, size, 3), np.float32)
    with pytest.raises(RlxError):
        interpret(imported.graph, {imported.inputs["x"]: x}, dict(imported.params), {"B": 2, "S": size})


def test_a_count_that_shrinks_as_the_dim_grows_is_a_located_error():
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'strided' \(Slice\): a slice of the symbolic dim S "
                                               r"from S - 3 to 5 with step 1 keeps -S \+ 8 elements, fewer as S grows"):
        import_onnx(onnx_slice(-3, 5, 1))


def test_a_bound_that_is_not_the_dim_plus_an_integer_is_a_located_error():
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "one"], ["length"], axis=0),
             helper.make_node("Div", ["length", "two"], ["half"]),
             helper.make_node("Slice", ["x", "zero", "half", "one"], ["y"], name="half")]
    arrays = [("one", np.array([1], np.int64)), ("two", np.array([2], np.int64)), ("zero", np.array([0], np.int64))]
    model = make_model(nodes, [("x", F, ["N", "S", 3])], [("y", F, ["N", None, 3])], arrays)
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'half' \(Slice\): a slice bound S//2 of the symbolic dim S"):
        import_onnx(model)


def test_a_start_that_is_another_expression_of_the_dims_symbols():
    """Four copies of x [N, 3] stacked on axis 0 ([4*N, 3]), then rows N to the end: the
    start is N, never past 4*N, so the slice keeps 3*N rows for every N."""
    nodes = [helper.make_node("Concat", ["x", "x", "x", "x"], ["stacked"], axis=0),
             helper.make_node("Shape", ["x"], ["shape"], start=0, end=1),
             helper.make_node("Slice", ["stacked", "shape", "end"], ["y"], name="rest")]
    model = make_model(nodes, [("x", F, ["N", 3])], [("y", F, [None, 3])], [("end", np.array([INT_MAX], np.int64))])
    for size in (1, 3):
        imported = check(model, {"B": size})
    assert str(imported.graph.type(imported.outputs["y"])) == "f32[3*B, 3]"


def test_a_static_dim_sliced_by_a_symbolic_bound_is_a_located_error():
    """A table of 16 positions cut to the length S of another input: the count S is only
    right while S <= 16, which no dim expression says."""
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "one"], ["length"], axis=0),
             helper.make_node("Slice", ["table", "zero", "length", "zero"], ["y"], name="positions")]
    arrays = [("one", np.array([1], np.int64)), ("zero", np.array([0], np.int64)), ("table", np.ones((16, 3), np.float32))]
    model = make_model(nodes, [("x", F, ["N", "S", 3])], [("y", F, [None, 3])], arrays)
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'positions' \(Slice\): a slice of the static dim 16 "
                                               r"from 0 to S"):
        import_onnx(model)


def test_a_zero_step_is_a_located_error():
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'strided' \(Slice\): a slice with step 0"):
        import_onnx(onnx_slice(0, INT_MAX, 0))


# --- PyTorch ---------------------------------------------------------------------------
TORCH_SLICES = {
    "::2": lambda x: x[:, ::2],
    "1:": lambda x: x[:, 1:],
    ":-1": lambda x: x[:, :-1],
    "-1:": lambda x: x[:, -1:],
    "-3::2": lambda x: x[:, -3::2],
    "flip": lambda x: x.flip(1),
    "flip::2": lambda x: x.flip(1)[:, ::2] * 2 - x[:, ::2].flip(1),
}


@pytest.mark.parametrize("name", sorted(TORCH_SLICES))
def test_torch_slice_of_a_symbolic_dim_matches_eager(name):
    torch = pytest.importorskip("torch")
    from test_torch_import_aten import Apply

    from rlxir.importers.torch import import_torch
    from rlxir.interpreter import interpret

    module = Apply(TORCH_SLICES[name])
    length = torch.export.Dim("S", min=4, max=4096)
    imported = import_torch(module, (torch.randn(2, 10, 3),), dims=[{0: "B", 1: length}])
    assert imported.graph.symbols.keys() == {"B", "S"}
    for size in (4, 9, 16):
        x = torch.randn(3, size, 3)
        (value,) = imported.outputs.values()
        got = interpret(imported.graph, {next(iter(imported.inputs.values())): x.numpy()}, dict(imported.params),
                        {"B": 3, "S": size})[value]
        np.testing.assert_allclose(got, module(x).numpy(), rtol=1e-6, atol=1e-6)
