"""Every registered op: at least one inferred type and its important refusals.

`INFERRED` and `REFUSED` are the op -> case tables; `test_every_op_has_cases` fails when
the registry holds an op that either table lacks. The families' finer points (broadcasting,
matmul, conv and pool sizes, reshape, ...) have their own tests here and in
test_shape_rules_nn.py.
"""

from __future__ import annotations

import pytest
from shape_case import blamed_operand, case_graph, infer, refusal

import rlxir
from rlxir.ops import broadcast_shapes
from rlxir.ops.core import BINARY_OPS, COMPARE_OPS, REDUCE_OPS, UNARY_OPS
from rlxir.symbolic import Expr

# The ops rlxir registers, as collection found them (before any test adds its own).
REGISTERED = sorted(rlxir.registered_ops())

SCAN_OPERANDS = ["f32[B, S, 8]", "f32[B, S, 8]", "f32[8, 4]", "f32[B, S, 4]", "f32[B, S, 4]"]
ATTENTION = ["f32[B, 12, S, 64]"] * 3

# (op, operand types, attribute block, inferred type)
INFERRED = [
    *[(op, ["f16[B, S, 8]"], "", "f16[B, S, 8]") for op in UNARY_OPS],
    ("gelu", ["f32[B, 3072]"], "approximate = true", "f32[B, 3072]"),
    ("cast", ["f32[B, 3]"], "to = i8", "i8[B, 3]"),
    *[(op, ["f32[B, 1, 8]", "f32[S, 1]"], "", "f32[B, S, 8]") for op in BINARY_OPS],
    *[(op, ["i32[B, 4]", "i32[4]"], "", "bool[B, 4]") for op in COMPARE_OPS],
    ("where", ["bool[B, 1]", "f32[4]", "f32[B, 4]"], "", "f32[B, 4]"),
    *[(op, ["f32[B, S, 8]"], "axes = [-1], keepdims = true", "f32[B, S, 1]") for op in REDUCE_OPS],
    ("softmax", ["f32[B, S, 8]"], "axis = 1", "f32[B, S, 8]"),
    ("cumsum", ["i32[B, S]"], "axis = -1, exclusive = true", "i32[B, S]"),
    ("matmul", ["f32[B, S, 64]", "f32[64, 128]"], "", "f32[B, S, 128]"),
    ("linear", ["f32[B, 768]", "f32[768, 10]", "f32[10]"], "", "f32[B, 10]"),
    ("layernorm", ["f32[B, S, 768]", "f32[768]", "f32[768]"], "", "f32[B, S, 768]"),
    ("rmsnorm", ["bf16[B, S, 768]", "bf16[768]"], "eps = 1e-5", "bf16[B, S, 768]"),
    ("batchnorm", ["f32[B, 64, H, W]", *["f32[64]"] * 4], "", "f32[B, 64, H, W]"),
    ("attention", ATTENTION, "causal = true", "f32[B, 12, S, 64]"),
    ("reshape", ["f32[B, S, 768]"], "shape = [B*S, -1]", "f32[B*S, 768]"),
    ("transpose", ["f32[B, S, 12, 64]"], "perm = [0, 2, 1, 3]", "f32[B, 12, S, 64]"),
    ("expand", ["f32[1, 8]"], "shape = [B, 4, 8]", "f32[B, 4, 8]"),
    ("concat", ["f32[B, 3]", "f32[B, S]"], "axis = 1", "f32[B, S + 3]"),
    ("slice", ["f32[B, 2304]"], "axis = 1, start = 768, len = 768", "f32[B, 768]"),
    ("gather", ["f32[50257, 768]", "i64[B, S]"], "", "f32[B, S, 768]"),
    ("gather_elements", ["f32[B, S, 8]", "i64[B, S, 2]"], "axis = 2", "f32[B, S, 2]"),
    ("scatter_elements", ["f32[B, 8]", "i64[B, 2]", "f32[B, 2]"], 'axis = 1, reduction = "add"', "f32[B, 8]"),
    ("topk", ["f32[B, 10]"], "k = 3", "i64[B, 3]"),
    ("mod", ["i64[B, 1]", "i64[4]"], "", "i64[B, 4]"),
    ("fmod", ["f32[B, 1]", "f32[4]"], "", "f32[B, 4]"),
    ("floor", ["f32[B, 4]"], "", "f32[B, 4]"),
    ("ceil", ["f16[B, 4]"], "", "f16[B, 4]"),
    ("polynomial_recurrence", ["f32[B, 1]", "f32[4]"], 'family = "laguerre_l"', "f32[B, 4]"),
    ("eigvals", ["f64[B, 5, 5]"], "", "f64[B, 5, 2]"),
    ("bitcast", ["f64[B, 3]"], "to = u64", "u64[B, 3]"),
    ("reduce_xor", ["u64[B, S, 4]"], "axes = [0, 2], keepdims = true", "u64[1, S, 1]"),
    ("conv2d", ["f32[B, 3, 224, 224]", "f32[64, 3, 7, 7]"], "stride = [2, 2], padding = [3, 3, 3, 3]",
     "f32[B, 64, 112, 112]"),
    ("max_pool2d", ["f32[B, 64, 112, 112]"], "kernel = [3, 3], stride = [2, 2], padding = [1, 1, 1, 1]",
     "f32[B, 64, 56, 56]"),
    ("avg_pool2d", ["f32[B, 512, 7, 7]"], "kernel = [7, 7]", "f32[B, 512, 1, 1]"),
    ("selective_scan", SCAN_OPERANDS, "state_size = 4", "f32[B, S, 8]"),
    ("fused_matmul_bias_act", ["f32[B, 768]", "f32[768, 3072]", "f32[3072]"], 'activation = "gelu"', "f32[B, 3072]"),
    ("fused_residual_layernorm", ["f32[B, S, 8]", "f32[B, S, 8]", "f32[8]", "f32[8]"], "", "f32[B, S, 8]"),
    ("fused_residual_rmsnorm", ["f32[B, S, 8]", "f32[B, S, 8]", "f32[8]"], "", "f32[B, S, 8]"),
    ("fused_elementwise", ["f32[B, 4]", "f32[4]"], 'chain = "mul($0, $1); gelu(%0) {approximate = true}"',
     "f32[B, 4]"),
    # the gradient kernels rlxir.grad emits (rlxir.autodiff.backward_ops)
    ("gather_grad", ["f32[B, S, 768]", "i64[B, S]"], "shape = [50257, 768]", "f32[50257, 768]"),
    ("conv2d_grad_input", ["f32[B, 64, 112, 112]", "f32[64, 3, 7, 7]"],
     "input_shape = [B, 3, 224, 224], stride = [2, 2], padding = [3, 3, 3, 3]", "f32[B, 3, 224, 224]"),
    ("conv2d_grad_weight", ["f32[B, 3, 224, 224]", "f32[B, 64, 112, 112]"],
     "kernel = [7, 7], stride = [2, 2], padding = [3, 3, 3, 3]", "f32[64, 3, 7, 7]"),
    ("max_pool2d_grad", ["f32[B, 64, 112, 112]", "f32[B, 64, 56, 56]"],
     "kernel = [3, 3], stride = [2, 2], padding = [1, 1, 1, 1]", "f32[B, 64, 112, 112]"),
    ("avg_pool2d_grad", ["f32[B, 512, 1, 1]"], "input_shape = [B, 512, 7, 7], kernel = [7, 7]", "f32[B, 512, 7, 7]"),
    ("selective_scan_grad", [*SCAN_OPERANDS, "f32[B, S, 8]"], "state_size = 4, operand = 2", "f32[8, 4]"),
]

# (op, operand types, attribute block, words of the message, the operand blamed or None)
REFUSED = [
    *[(op, ["f32[4]", "f32[4]"], "", "takes 1 operand", None) for op in UNARY_OPS + ("gelu",)],
    ("cast", ["f32[4]"], "", "needs attribute 'to'", None),
    ("cast", ["f32[4]"], "to = f33", "unknown dtype 'f33'", None),
    *[(op, ["f32[B, 4]", "f32[B, 5]"], "", "cannot broadcast [B, 4] and [B, 5]", 1) for op in BINARY_OPS],
    ("add", ["f32[B, 4]", "f16[B, 4]"], "", "mixes f32 and f16", 1),
    *[(op, ["i32[4]", "f32[4]"], "", "mixes i32 and f32", 1) for op in COMPARE_OPS],
    ("eq", ["i32[4]", "i32[3]"], "", "cannot broadcast", 1),
    ("where", ["f32[4]", "f32[4]", "f32[4]"], "", "condition is f32", 0),
    ("where", ["bool[4]", "f32[4]", "f16[4]"], "", "mixes f32 and f16", 2),
    # Broadcasting blames the first operand that disagrees with those before it.
    ("where", ["bool[3]", "f32[4]", "f32[4]"], "", "cannot broadcast", 1),
    *[(op, ["f32[B, 4]"], "axes = [2]", "reduction axis 2 is out of range for rank 2", None) for op in REDUCE_OPS],
    ("reduce_sum", ["f32[B, S, 4]"], "axes = [1, -2]", "repeat an axis", None),
    ("reduce_mean", ["f32[B, 4]"], "axes = []", "at least one axis", None),
    ("reduce_max", ["f32[B, 4]"], "", "needs attribute 'axes'", None),
    ("softmax", ["f32[B, 4]"], "axis = 2", "axis 2 is out of range for rank 2", None),
    ("softmax", ["f32[]"], "", "rank at least 1", 0),
    ("cumsum", ["f32[B, 4]"], "", "needs attribute 'axis'", None),
    ("matmul", ["f32[B, 4, 8]", "f32[7, 16]"], "", "contracts 8 against 7", 1),
    ("matmul", ["f32[2, 4, 8]", "f32[3, 8, 16]"], "", "cannot broadcast", 1),
    ("matmul", ["f32[]", "f32[4]"], "", "rank at least 1", 0),
    ("matmul", ["f32[4, 8]", "f16[8, 2]"], "", "mixes f32 and f16", 1),
    ("linear", ["f32[B, 8]", "f32[2, 8, 10]"], "", "weight must be [K, N]", 1),
    ("linear", ["f32[B, 8]", "f32[8, 10]", "f32[5]"], "", "bias [5] does not broadcast to [B, 10]", 2),
    ("linear", ["f32[B, 8]", "f32[9, 10]"], "", "contracts 8 against 9", 1),
    ("layernorm", ["f32[B, 8]", "f32[7]", "f32[8]"], "", "norm parameter [7]", 1),
    ("layernorm", ["f32[B, 8]", "f32[8]", "f32[5]"], "", "norm parameter [5]", 2),
    ("layernorm", ["f32[B, 8]", "f32[8]", "f16[8]"], "", "mixes f32 and f16", 2),
    ("rmsnorm", ["f32[B, 8]", "f32[1, 8]"], "", "norm parameter [1, 8]", 1),
    ("batchnorm", ["f32[B, 8, H, W]", "f32[8]", "f32[8]", "f32[8]", "f32[1, 8]"], "", "must be [C] = [8]", 4),
    ("batchnorm", ["f32[8]", "f32[8]", "f32[8]", "f32[8]", "f32[8]"], "", "NCHW-like input", 0),
    ("attention", ["f32[B, 2, S, 4]", "f32[B, 2, S, 8]", "f32[B, 2, S, 4]"], "", "head dim 4 differs", 1),
    ("attention", ["f32[B, 2, S, 4]", "f32[B, 2, S, 4]", "f32[B, 2, 7, 4]"], "", "k has S positions, v 7", 2),
    ("attention", [*["f32[B, 2, S, 4]"] * 3, "f32[3, S]"], "", "mask [3, S] does not broadcast", 3),
    ("attention", ["f32[B, 2, S, 4]", "f32[2, S, 4]", "f32[B, 2, S, 4]"], "", "one rank", 0),
    ("reshape", ["f32[B, 6]"], "shape = [B, 4]", "changes the element count", None),
    ("reshape", ["f32[2, 6]"], "shape = [5, 2]", "(12 elements) to [5, 2] (10)", None),
    ("reshape", ["f32[2, 6]"], "shape = [-1, -1]", "one -1", None),
    ("reshape", ["f32[2, 6]"], "shape = [5, -1]", "12 elements cannot fill", None),
    ("reshape", ["f32[2, 6]"], "shape = [-2, -6]", "is negative", None),
    ("transpose", ["f32[B, S, 4]"], "perm = [0, 2]", "not a permutation of the 3 axes", None),
    ("transpose", ["f32[B, S, 4]"], "perm = [0, 1, 1]", "not a permutation", None),
    ("expand", ["f32[3]"], "shape = [B, 4]", "cannot expand [3] to [B, 4]", None),
    ("expand", ["f32[B, 3]"], "shape = [3]", "cannot expand", None),
    ("expand", ["f32[1]"], "shape = [-2]", "expand dim -2 is negative", None),
    ("concat", ["f32[B, 3]", "f32[S, 3]"], "axis = 1", "does not match [B, 3] off axis 1", 1),
    ("concat", ["f32[B, 3]", "f32[B, 3, 1]"], "axis = 0", "does not match", 1),
    ("concat", ["f32[B, 3]", "i32[B, 3]"], "axis = 0", "mixes f32 and i32", 1),
    ("concat", ["f32[]"], "axis = 0", "rank at least 1", 0),
    ("slice", ["f32[B, 8]"], "axis = 1, start = 6, len = 3", "[6, 9) is out of bounds for dim 8 on axis 1", None),
    ("slice", ["f32[B, 8]"], "axis = 1, start = -1, len = 3", "must be non-negative", None),
    ("slice", ["f32[B, 8]"], "axis = 2, start = 0, len = 3", "axis 2 is out of range", None),
    ("gather", ["f32[10, 4]", "f32[B]"], "", "gather indices are f32", 1),
    ("gather", ["f32[10, 4]", "bool[B]"], "", "gather indices are bool", 1),
    ("gather", ["f32[]", "i32[B]"], "", "cannot gather from a scalar", 0),
    ("gather_elements", ["f32[B, 8]", "f32[B, 2]"], "axis = 1", "gather_elements indices are f32", 1),
    ("gather_elements", ["f32[B, 8]", "i64[B, 2, 1]"], "axis = 1", "differ in rank", 1),
    ("scatter_elements", ["f32[B, 8]", "i64[B, 2]", "f32[B, 3]"], "axis = 1", "differ", 2),
    ("topk", ["f32[B, 4]"], "k = 5", "out of range", None),
    ("mod", ["i64[B]", "i32[B]"], "", "mixes", 1),
    ("fmod", ["f32[B]", "f16[B]"], "", "mixes", 1),
    ("floor", ["i32[B]"], "", "rounding takes a float", 0),
    ("ceil", ["i64[B]"], "", "rounding takes a float", 0),
    ("polynomial_recurrence", ["f32[4]", "i64[4]"], 'family = "legendre_p"', "takes float operands", 1),
    ("polynomial_recurrence", ["f32[4]", "f32[4]"], 'family = "hermite"', "cannot be", None),
    ("polynomial_recurrence", ["f32[4]", "f32[4]"], "", "needs attribute 'family'", None),
    ("eigvals", ["f32[B, 4, 5]"], "", "takes square matrices", 0),
    ("eigvals", ["f32[4]"], "", "takes [..., n, n] matrices", 0),
    ("eigvals", ["i32[3, 3]"], "", "takes a float matrix", 0),
    ("bitcast", ["f32[4]"], "to = u64", "bitcast from f32 (4 bytes) to u64 (8 bytes)", 0),
    ("bitcast", ["bool[4]"], "to = u8", "cannot read the bits of bool", 0),
    ("bitcast", ["f32[4]"], "to = c64", "cannot read the bits of c64", None),
    ("reduce_xor", ["f64[4]"], "axes = [0]", "reduce_xor takes integers", 0),
    ("reduce_xor", ["u64[4]"], "axes = [1]", "out of range", None),
    ("conv2d", ["f32[B, 3, 32, 32]", "f32[8, 4, 3, 3]"], "", "4 input channels per group for 3 channels", 1),
    ("conv2d", ["f32[B, 3, 2, 2]", "f32[8, 3, 3, 3]"], "", "window of 3 is larger than the padded input 2", None),
    ("conv2d", ["f32[B, 3, 8, 8]", "f32[8, 3, 3, 3]", "f32[3]"], "", "bias must be [8]", 2),
    ("conv2d", ["f32[B, 4, 8, 8]", "f32[3, 2, 3, 3]"], "groups = 2", "3 output channels, not a multiple", 1),
    ("conv2d", ["f32[B, 3, 8]", "f32[8, 3, 3, 3]"], "", "x [N, C, H, W]", 0),
    ("conv2d", ["f32[B, 3, 8, 8]", "f32[8, 3, 3, 3]"], "stride = [0, 1]", "out of range", None),
    ("conv2d", ["f32[B, 3, 8, 8]", "f32[8, 3, 3, 3]"], "padding = [1, 1]", "padding needs 4 integers", None),
    ("max_pool2d", ["f32[B, 4, 8, 8]"], "kernel = [3]", "need two positive integers", None),
    ("max_pool2d", ["f32[B, 4, 2, 2]"], "kernel = [3, 3]", "larger than the padded input", None),
    ("avg_pool2d", ["f32[B, 8, 8]"], "kernel = [2, 2]", "NCHW input", 0),
    ("avg_pool2d", ["f32[B, 4, 8, 8]"], "", "needs attribute 'kernel'", None),
    ("selective_scan", ["f32[B, 8]", *SCAN_OPERANDS[1:]], "state_size = 4", "x must be [B, S, H]", 0),
    ("selective_scan", SCAN_OPERANDS, "state_size = 5", "operand 3 is [8, 4]", 2),
    ("selective_scan", SCAN_OPERANDS, "", "needs attribute 'state_size'", None),
    ("fused_matmul_bias_act", ["f32[B, 8]", "f32[8, 4]", "f32[4]"], 'activation = "relu"', "cannot be \"relu\"", None),
    ("fused_matmul_bias_act", ["f32[B, 8]", "f32[8, 4]"], "", "takes 3 operands", None),
    ("fused_residual_layernorm", ["f32[B, 8]", "f32[B, 4]", "f32[8]", "f32[8]"], "", "residual [B, 4] differs", 1),
    ("fused_residual_layernorm", ["f32[B, 8]", "f32[B, 8]", "f32[8]", "f32[7]"], "", "norm parameter [7]", 3),
    ("fused_residual_rmsnorm", ["f32[B, 8]", "f32[B, 8]", "f32[4]"], "", "norm parameter [4]", 2),
    ("fused_elementwise", ["f32[B, 4]"], 'chain = "matmul($0, $0)"', "not an elementwise op", None),
    ("gather_grad", ["f32[B, S, 4]", "i64[B, S]"], "shape = [10, 8]", "does not match the gather result", 0),
    ("conv2d_grad_input", ["f32[B, 8, 6, 6]", "f32[8, 3, 3, 3]"], "input_shape = [B, 3, 8, 9]",
     "does not match the conv2d result", 0),
    ("conv2d_grad_weight", ["f32[B, 3, 8, 8]", "f32[B, 8, 5, 6]"], "kernel = [3, 3]", "does not match the conv2d result",
     1),
    ("max_pool2d_grad", ["f32[B, 4, 8, 8]", "f32[B, 4, 3, 3]"], "kernel = [2, 2]", "does not match the max_pool2d", 1),
    ("avg_pool2d_grad", ["f32[B, 4, 2, 2]"], "input_shape = [B, 4, 8], kernel = [2, 2]", "is not NCHW", None),
    ("selective_scan_grad", [*SCAN_OPERANDS, "f32[B, S, 4]"], "state_size = 4, operand = 0",
     "does not match the selective_scan result", 5),
    ("selective_scan_grad", [*SCAN_OPERANDS, "f32[B, S, 8]"], "state_size = 4, operand = 5", "cannot be 5", None),
    ("fused_elementwise", ["f32[B, 4]"], 'chain = "exp($1)"', "reads $1, but the op has 1 operands", None),
]


def _ids(cases) -> list[str]:
    return [f"{case[0]}-{index}" for index, case in enumerate(cases)]


@pytest.mark.parametrize("op, operand_types, attrs, expected", INFERRED, ids=_ids(INFERRED))
def test_inferred_type(op, operand_types, attrs, expected):
    assert infer(op, operand_types, attrs) == expected


@pytest.mark.parametrize("op, operand_types, attrs, words, operand", REFUSED, ids=_ids(REFUSED))
def test_refused(op, operand_types, attrs, words, operand):
    error = refusal(op, operand_types, attrs)
    assert words in error.message
    assert blamed_operand(error) == operand, error.render()


def test_every_op_has_cases():
    inferred = {case[0] for case in INFERRED}
    refused = {case[0] for case in REFUSED}
    assert [op for op in REGISTERED if op not in inferred] == []
    assert [op for op in REGISTERED if op not in refused] == []


def test_written_types_are_checked_against_the_rule():
    text = "graph g(B) {\n  input %x : f32[B, 4]\n  %y = exp(%x) : f32[B, 5]\n  output %y\n}\n"
    with pytest.raises(rlxir.IRTypeError, match=r"result type f32\[B, 5\] differs from the inferred f32\[B, 4\]"):
        rlxir.parse(text)


# --- broadcasting -----------------------------------------------------------------------
B, S = Expr.symbol("B"), Expr.symbol("S")


@pytest.mark.parametrize(
    "shapes, expected",
    [
        (((4,), (B, S, 4)), (B, S, 4)),
        (((B, 1, 4), (S, 1)), (B, S, 4)),
        (((1,), ()), (1,)),
        (((B,), (1,)), (B,)),
        (((B * S, 1), (S * B, 8)), (B * S, 8)),
        (((2, 1, 3), (4, 1), (1, 1, 1, 3)), (1, 2, 4, 3)),
    ],
)
def test_broadcast_shapes(shapes, expected):
    assert broadcast_shapes(*shapes) == expected


@pytest.mark.parametrize("shapes", [((B,), (S,)), ((B,), (4,)), ((3,), (4,)), ((B, 2), (2, 2))])
def test_broadcast_refuses_dims_it_cannot_prove_equal(shapes):
    with pytest.raises(rlxir.ShapeError, match="cannot broadcast"):
        broadcast_shapes(*shapes)


def test_broadcast_extends_rank_through_the_parser():
    assert infer("add", ["f32[8]", "f32[B, S, 8]"]) == "f32[B, S, 8]"
    assert infer("mul", ["f32[]", "f32[B, 8]"]) == "f32[B, 8]"
    assert infer("sub", ["f32[B*S, 1]", "f32[S*B, 8]"]) == "f32[B*S, 8]"


def test_symbolic_broadcast_mismatch_blames_the_second_operand():
    error = refusal("add", ["f32[B, 8]", "f32[S, 8]"])
    assert "dim B against S" in error.message
    assert blamed_operand(error) == 1


# --- casts, compares and selects ---------------------------------------------------------
@pytest.mark.parametrize("dtype", ["f64", "f16", "bf16", "i64", "u8", "bool"])
def test_cast_changes_only_the_dtype(dtype):
    assert infer("cast", ["f32[B, 3, 4]"], f"to = {dtype}") == f"{dtype}[B, 3, 4]"


def test_same_dtype_cast_keeps_the_type():
    assert infer("cast", ["f16[B]"], "to = f16") == "f16[B]"


@pytest.mark.parametrize("dtype", ["f32", "i8", "bool"])
def test_compare_gives_bool_for_any_operand_dtype(dtype):
    assert infer("lt", [f"{dtype}[B, 1]", f"{dtype}[1, S]"]) == "bool[B, S]"


def test_where_broadcasts_all_three_operands():
    assert infer("where", ["bool[B, 1, 1]", "i32[S, 1]", "i32[4]"]) == "i32[B, S, 4]"


def test_compare_feeds_where():
    text = (
        "graph g(B) {\n  input %x : f32[B, 4]\n  const %zero : f32[] = 0.0\n"
        "  %positive = gt(%x, %zero)\n  %y = where(%positive, %x, %zero)\n  output %y\n}\n"
    )
    graph = rlxir.parse(text).main
    assert str(graph.type("positive")) == "bool[B, 4]"
    assert str(graph.type("y")) == "f32[B, 4]"


# --- reductions and axis ops --------------------------------------------------------------
@pytest.mark.parametrize(
    "attrs, expected",
    [
        ("axes = [1]", "f32[B, 8]"),
        ("axes = [-1]", "f32[B, S]"),
        ("axes = [0, 2]", "f32[S]"),
        ("axes = [-3, -1], keepdims = true", "f32[1, S, 1]"),
        ("axes = [0, 1, 2]", "f32[]"),
        ("axes = [2, 0], keepdims = true", "f32[1, S, 1]"),
    ],
)
def test_reduce_axes_and_keepdims(attrs, expected):
    assert infer("reduce_sum", ["f32[B, S, 8]"], attrs) == expected


def test_reduce_keeps_the_dtype():
    assert infer("reduce_max", ["i32[B, 4]"], "axes = [1]") == "i32[B]"


@pytest.mark.parametrize("op", ["softmax", "cumsum"])
@pytest.mark.parametrize("axis", [-3, 0, 2])
def test_axis_ops_keep_the_type_for_any_valid_axis(op, axis):
    assert infer(op, ["f32[B, S, 8]"], f"axis = {axis}") == "f32[B, S, 8]"


# --- shape ops ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "operand, shape, expected",
    [
        ("f32[B, S, 768]", "[B*S, -1]", "f32[B*S, 768]"),
        ("f32[B*S, 768]", "[B, -1, 12, 64]", "f32[B, S, 12, 64]"),
        ("f32[B, S, 768]", "[-1, 768]", "f32[B*S, 768]"),
        ("f32[B, S, 768]", "[B, S, 12, -1]", "f32[B, S, 12, 64]"),
        ("f32[B, 12, S, 64]", "[B*12, S, 64]", "f32[12*B, S, 64]"),
        ("f32[2, 3, 4]", "[-1]", "f32[24]"),
        ("f32[2, 3, 4]", "[4, -1, 2]", "f32[4, 3, 2]"),
        ("f32[B, 6]", "[B, 2, 3]", "f32[B, 2, 3]"),
        ("f32[B]", "[B, 1, 1]", "f32[B, 1, 1]"),
    ],
)
def test_reshape(operand, shape, expected):
    assert infer("reshape", [operand], f"shape = {shape}") == expected


def test_reshape_with_an_inexact_symbolic_hole_is_checked_once_bound():
    # 768*S/13 is a whole number for some S, so the graph stands until S is known.
    graph = case_graph("reshape", ["f32[B, S, 768]"], "shape = [B, -1, 13]")
    assert str(graph.type("r")) == "f32[B, (768*B*S)//(13*B), 13]"
    assert str(graph.bind(B=2, S=13).type("r")) == "f32[2, 768, 13]"
    with pytest.raises(rlxir.RlxError, match="element count|cannot fill") as caught:
        graph.bind(B=2, S=16)
    assert caught.value.line == 3


def test_transpose_and_expand():
    assert infer("transpose", ["f32[B, S, 8]"], "perm = [2, 0, 1]") == "f32[8, B, S]"
    assert infer("transpose", ["f32[]"], "perm = []") == "f32[]"
    assert infer("expand", ["f32[B, 1]"], "shape = [B, S]") == "f32[B, S]"
    assert infer("expand", ["f32[]"], "shape = [2, 3]") == "f32[2, 3]"


def test_concat_sums_the_joined_axis():
    assert infer("concat", ["f32[B, 3]", "f32[B, S]", "f32[B, 1]"], "axis = -1") == "f32[B, S + 4]"
    assert infer("concat", ["f32[B, 8]", "f32[B, 8]"], "axis = 0") == "f32[2*B, 8]"
    assert infer("concat", ["i8[4]"], "axis = 0") == "i8[4]"


def test_slice_of_any_axis():
    assert infer("slice", ["f32[B, S, 80]"], "axis = -1, start = 48, len = 16") == "f32[B, S, 16]"
    assert infer("slice", ["f32[10, B]"], "axis = 0, start = 10, len = 0") == "f32[0, B]"
    assert infer("slice", ["f32[10, B]"], "axis = 0, start = 0, len = 10") == "f32[10, B]"


def test_slice_bounds_on_a_symbolic_dim_are_checked_when_bound():
    graph = case_graph("slice", ["f32[S, 8]"], "axis = 0, start = 4, len = 8")
    assert str(graph.type("r")) == "f32[8, 8]"
    rlxir.verify(graph.bind(S=12))
    with pytest.raises(rlxir.RlxError, match=r"\[4, 12\) is out of bounds for dim 10") as caught:
        graph.bind(S=10)
    assert caught.value.line == 3


@pytest.mark.parametrize(
    "table, index, attrs, expected",
    [
        ("f32[50257, 768]", "i64[B, S]", "", "f32[B, S, 768]"),
        ("f32[1024, 768]", "i64[S]", "", "f32[S, 768]"),
        ("f32[10, 4]", "i32[]", "", "f32[4]"),
        ("f16[10, 4]", "u8[B]", "axis = 1", "f16[10, B]"),
        ("f32[10, 4, 3]", "i32[B, S]", "axis = -2", "f32[10, B, S, 3]"),
    ],
)
def test_gather(table, index, attrs, expected):
    assert infer("gather", [table, index], attrs) == expected
