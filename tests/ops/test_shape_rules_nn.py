"""Shape rules of the network ops: matmul and linear, conv and pooling, norms, attention,
the selective scan, and the fused ops (fused_elementwise chains included)."""

from __future__ import annotations

import pytest
from shape_case import blamed_operand, case_graph, infer, refusal

import rlxir


# --- matmul and linear --------------------------------------------------------------------
@pytest.mark.parametrize(
    "a, b, attrs, expected",
    [
        ("f32[4, 8]", "f32[8, 16]", "", "f32[4, 16]"),
        ("f32[S, N]", "f32[N, H]", "", "f32[S, H]"),
        ("f32[B, 1, 4, 8]", "f32[12, 8, 16]", "", "f32[B, 12, 4, 16]"),
        ("f32[12, 4, 8]", "f32[B, 1, 8, 16]", "", "f32[B, 12, 4, 16]"),
        ("f32[B, S, 64]", "f32[B, S, 64]", "transpose_b = true", "f32[B, S, S]"),
        ("f32[B, 64, S]", "f32[B, 64, 32]", "transpose_a = true", "f32[B, S, 32]"),
        ("f32[8, 4]", "f32[16, 8]", "transpose_a = true, transpose_b = true", "f32[4, 16]"),
        ("f32[B, S, 768]", "f32[50257, 768]", "transpose_b = true", "f32[B, S, 50257]"),
        ("i32[3, 4]", "i32[4, 5]", "", "i32[3, 5]"),
    ],
)
def test_matmul(a, b, attrs, expected):
    assert infer("matmul", [a, b], attrs) == expected


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ("f32[8]", "f32[8]", "f32[]"),
        ("f32[8]", "f32[8, 5]", "f32[5]"),
        ("f32[4, 8]", "f32[8]", "f32[4]"),
        ("f32[B, 4, 8]", "f32[8]", "f32[B, 4]"),
        ("f32[8]", "f32[B, 8, 5]", "f32[B, 5]"),
    ],
)
def test_matmul_with_vectors_drops_their_unit_axis(a, b, expected):
    assert infer("matmul", [a, b]) == expected


@pytest.mark.parametrize("attrs, operand", [("transpose_a = true", 0), ("transpose_b = true", 1)])
def test_matmul_refuses_to_transpose_a_vector(attrs, operand):
    error = refusal("matmul", ["f32[8]", "f32[8]"], attrs)
    assert "cannot transpose a rank-1 operand" in error.message
    assert blamed_operand(error) == operand


def test_matmul_batch_dims_must_broadcast():
    error = refusal("matmul", ["f32[B, 4, 8]", "f32[S, 8, 16]"])
    assert "dim B against S" in error.message
    assert blamed_operand(error) == 1


@pytest.mark.parametrize(
    "operand_types, expected",
    [
        (["f32[B, S, 768]", "f32[768, 2304]", "f32[2304]"], "f32[B, S, 2304]"),
        (["f32[B, 768]", "f32[768, 10]"], "f32[B, 10]"),
        (["f32[768]", "f32[768, 10]", "f32[10]"], "f32[10]"),
        (["f32[B, 8]", "f32[8, 10]", "f32[]"], "f32[B, 10]"),
        (["f32[B, 8]", "f32[8, 10]", "f32[1]"], "f32[B, 10]"),
        (["f32[B, 8]", "f32[8, 10]", "f32[B, 10]"], "f32[B, 10]"),
    ],
)
def test_linear_with_and_without_bias(operand_types, expected):
    assert infer("linear", operand_types) == expected


def test_linear_bias_of_the_wrong_dtype_is_blamed():
    error = refusal("linear", ["f32[B, 8]", "f32[8, 10]", "f16[10]"])
    assert "mixes f32 and f16" in error.message
    assert blamed_operand(error) == 2


# --- convolution and pooling ----------------------------------------------------------------
@pytest.mark.parametrize(
    "x, w, attrs, expected",
    [
        ("f32[B, 3, 224, 224]", "f32[64, 3, 7, 7]", "stride = [2, 2], padding = [3, 3, 3, 3]", "f32[B, 64, 112, 112]"),
        ("f32[B, 64, 56, 56]", "f32[128, 64, 1, 1]", "stride = [2, 2]", "f32[B, 128, 28, 28]"),
        ("f32[B, 8, 10, 10]", "f32[8, 8, 3, 3]", "", "f32[B, 8, 8, 8]"),
        ("f32[B, 8, 10, 10]", "f32[8, 8, 3, 3]", "dilation = [2, 3]", "f32[B, 8, 6, 4]"),
        ("f32[B, 8, 10, 12]", "f32[8, 8, 3, 3]", "padding = [0, 2, 1, 0]", "f32[B, 8, 9, 12]"),
        ("f32[B, 8, 11, 11]", "f32[8, 8, 3, 2]", "stride = [3, 2]", "f32[B, 8, 3, 5]"),
        ("f32[B, 8, 16, 16]", "f32[16, 4, 3, 3]", "groups = 2, padding = [1, 1, 1, 1]", "f32[B, 16, 16, 16]"),
        ("f32[B, 1536, 1, S]", "f32[1536, 1, 1, 4]", "padding = [0, 3, 0, 0], groups = 1536", "f32[B, 1536, 1, S]"),
    ],
)
def test_conv2d_output_size(x, w, attrs, expected):
    assert infer("conv2d", [x, w], attrs) == expected


def _conv_size(size: int, kernel: int, stride: int, before: int, after: int, dilation: int) -> int:
    return (size + before + after - dilation * (kernel - 1) - 1) // stride + 1


@pytest.mark.parametrize(
    "stride, padding, dilation",
    [(1, (0, 0), 1), (2, (1, 1), 1), (2, (3, 3), 1), (3, (0, 2), 2), (2, (1, 0), 3)],
)
def test_conv2d_symbolic_size_agrees_with_the_numbers(stride, padding, dilation):
    before, after = padding
    attrs = (
        f"stride = [{stride}, {stride}], padding = [{before}, {before}, {after}, {after}], "
        f"dilation = [{dilation}, {dilation}]"
    )
    graph = case_graph("conv2d", ["f32[B, 3, H, W]", "f32[8, 3, 3, 3]"], attrs)
    for size in (9, 16, 17, 224):
        bound = graph.bind(B=2, H=size, W=size + 1)
        expected_h = _conv_size(size, 3, stride, before, after, dilation)
        expected_w = _conv_size(size + 1, 3, stride, before, after, dilation)
        assert bound.type("r").static_shape() == (2, 8, expected_h, expected_w)


def test_conv2d_symbolic_size_is_a_canonical_floor_division():
    attrs = "stride = [2, 2], padding = [1, 1, 1, 1]"
    assert infer("conv2d", ["f32[B, 3, H, W]", "f32[8, 3, 3, 3]"], attrs) == "f32[B, 8, (H + 1)//2, (W + 1)//2]"
    assert infer("conv2d", ["f32[B, 3, H, W]", "f32[8, 3, 3, 3]"], "padding = [1, 1, 1, 1]") == "f32[B, 8, H, W]"


def test_conv2d_bias_and_dtype():
    assert infer("conv2d", ["f16[B, 3, 8, 8]", "f16[4, 3, 3, 3]", "f16[4]"]) == "f16[B, 4, 6, 6]"
    error = refusal("conv2d", ["f16[B, 3, 8, 8]", "f32[4, 3, 3, 3]"])
    assert "mixes f16 and f32" in error.message
    assert blamed_operand(error) == 1


def test_conv2d_needs_static_kernel_sizes():
    error = refusal("conv2d", ["f32[B, 3, 8, 8]", "f32[4, 3, H, 3]"])
    assert "kernel sizes must be integers" in error.message


def test_conv2d_window_on_a_symbolic_input_is_checked_when_bound():
    graph = case_graph("conv2d", ["f32[B, 3, H, 8]", "f32[4, 3, 5, 5]"])
    rlxir.verify(graph.bind(B=1, H=5))
    with pytest.raises(rlxir.RlxError, match="window of 5 is larger than the padded input 4"):
        graph.bind(B=1, H=4)


@pytest.mark.parametrize("op", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize(
    "x, attrs, expected",
    [
        ("f32[B, 64, 112, 112]", "kernel = [3, 3], stride = [2, 2], padding = [1, 1, 1, 1]", "f32[B, 64, 56, 56]"),
        ("f32[B, 4, 8, 8]", "kernel = [2, 2]", "f32[B, 4, 4, 4]"),
        ("f32[B, 4, 9, 8]", "kernel = [3, 2], stride = [1, 2]", "f32[B, 4, 7, 4]"),
        ("f32[B, 4, 8, 8]", "kernel = [3, 3], padding = [0, 1, 2, 1]", "f32[B, 4, 3, 3]"),
        ("f32[B, 4, H, W]", "kernel = [2, 2]", "f32[B, 4, H//2, W//2]"),
        ("f32[B, 4, H, W]", "kernel = [3, 3], stride = [1, 1], padding = [1, 1, 1, 1]", "f32[B, 4, H, W]"),
    ],
)
def test_pool_output_size(op, x, attrs, expected):
    assert infer(op, [x], attrs) == expected


def test_a_pooled_size_matches_the_same_size_written_otherwise():
    text = (
        "graph g(B, H, W) {\n  input %x : f32[B, 4, H, W]\n  input %skip : f32[B, 4, H//2, (W + 1)//2]\n"
        "  %pooled = max_pool2d(%x) {kernel = [2, 2], stride = [2, 2], padding = [0, 1, 0, 0]}\n"
        "  %y = add(%pooled, %skip)\n  output %y\n}\n"
    )
    assert str(rlxir.parse(text).main.type("y")) == "f32[B, 4, H//2, (W + 1)//2]"


def test_pool_refuses_a_zero_stride():
    error = refusal("max_pool2d", ["f32[B, 4, 8, 8]"], "kernel = [2, 2], stride = [0, 1]")
    assert "two positive integers" in error.message


# --- normalisation ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "x, params, attrs, expected",
    [
        ("f32[B, S, 768]", ["f32[768]", "f32[768]"], "", "f32[B, S, 768]"),
        ("f32[B, S, 8, 4]", ["f32[8, 4]", "f32[8, 4]"], "axis = 2", "f32[B, S, 8, 4]"),
        ("f32[B, S, 8, 4]", ["f32[4]", "f32[1]"], "axis = -2", "f32[B, S, 8, 4]"),
        ("f32[B, 8]", ["f32[]", "f32[8]"], "eps = 0.001", "f32[B, 8]"),
    ],
)
def test_layernorm_params_broadcast_to_the_normalised_dims(x, params, attrs, expected):
    assert infer("layernorm", [x, *params], attrs) == expected


def test_layernorm_params_must_not_cover_more_than_the_normalised_dims():
    error = refusal("layernorm", ["f32[B, S, 8]", "f32[S, 8]", "f32[8]"])
    assert "does not match the normalised dims [8]" in error.message
    assert blamed_operand(error) == 1


def test_rmsnorm_axis():
    assert infer("rmsnorm", ["f32[B, S, 8]", "f32[S, 8]"], "axis = 1") == "f32[B, S, 8]"
    error = refusal("rmsnorm", ["f32[B, S, 8]", "f32[8]"], "axis = 3")
    assert "axis 3 is out of range for rank 3" in error.message


@pytest.mark.parametrize("x", ["f32[B, 16]", "f32[B, 16, 7]", "f32[B, 16, H, W]"])
def test_batchnorm_normalises_axis_one(x):
    assert infer("batchnorm", [x, *["f32[16]"] * 4]) == x


@pytest.mark.parametrize("culprit", [1, 2, 3, 4])
def test_batchnorm_blames_the_parameter_that_is_not_per_channel(culprit):
    params = ["f32[16]"] * 4
    params[culprit - 1] = "f32[15]"
    error = refusal("batchnorm", ["f32[B, 16, H, W]", *params])
    assert "must be [C] = [16]" in error.message
    assert blamed_operand(error) == culprit


# --- attention ----------------------------------------------------------------------------
def test_attention_without_a_mask():
    assert infer("attention", ["f32[B, 12, S, 64]"] * 3) == "f32[B, 12, S, 64]"
    assert infer("attention", ["f32[B, 12, S, 64]"] * 3, "scale = 0.125") == "f32[B, 12, S, 64]"


def test_attention_cross_lengths_and_value_width():
    operands = ["f32[B, 8, S, 64]", "f32[B, 8, N, 64]", "f32[B, 8, N, 32]"]
    assert infer("attention", operands) == "f32[B, 8, S, 32]"


def test_attention_batch_dims_broadcast():
    operands = ["f32[B, 8, S, 64]", "f32[B, 1, S, 64]", "f32[1, 1, S, 64]"]
    assert infer("attention", operands) == "f32[B, 8, S, 64]"


@pytest.mark.parametrize("mask", ["f32[S, S]", "bool[B, 1, S, S]", "f32[B, 12, S, S]", "f32[1, S]", "f32[]"])
def test_attention_masks_that_broadcast_to_the_scores(mask):
    assert infer("attention", [*["f32[B, 12, S, 64]"] * 3, mask]) == "f32[B, 12, S, 64]"


@pytest.mark.parametrize("mask", ["f32[S, 64]", "f32[2, B, 12, S, S]", "f32[B, S]"])
def test_attention_masks_that_do_not_broadcast_are_blamed(mask):
    error = refusal("attention", [*["f32[B, 12, S, 64]"] * 3, mask])
    assert "does not broadcast to [B, 12, S, S]" in error.message
    assert blamed_operand(error) == 3


def test_attention_operands_share_a_dtype():
    error = refusal("attention", ["f32[B, 2, S, 4]", "f32[B, 2, S, 4]", "f16[B, 2, S, 4]"])
    assert "mixes f32 and f16" in error.message
    assert blamed_operand(error) == 2


# --- selective scan -----------------------------------------------------------------------
SCAN = ["f32[B, S, 1536]", "f32[B, S, 1536]", "f32[1536, 16]", "f32[B, S, 16]", "f32[B, S, 16]"]


def test_selective_scan_keeps_the_shape_of_x():
    assert infer("selective_scan", SCAN, "state_size = 16") == "f32[B, S, 1536]"


@pytest.mark.parametrize(
    "culprit, wrong, expected",
    [
        (1, "f32[B, S, 1535]", "[B, S, 1536]"),
        (2, "f32[1536, 8]", "[1536, 16]"),
        (2, "f32[16, 1536]", "[1536, 16]"),
        (3, "f32[B, S, 8]", "[B, S, 16]"),
        (4, "f32[S, B, 16]", "[B, S, 16]"),
    ],
)
def test_selective_scan_checks_each_operand(culprit, wrong, expected):
    operands = list(SCAN)
    operands[culprit] = wrong
    error = refusal("selective_scan", operands, "state_size = 16")
    assert error.expected == expected
    assert blamed_operand(error) == culprit


def test_selective_scan_operands_share_a_dtype():
    operands = [*SCAN[:4], "f16[B, S, 16]"]
    error = refusal("selective_scan", operands, "state_size = 16")
    assert "mixes f32 and f16" in error.message
    assert blamed_operand(error) == 4


# --- fused ops ----------------------------------------------------------------------------
@pytest.mark.parametrize("activation", ["none", "gelu", "silu"])
def test_fused_matmul_bias_act(activation):
    operands = ["f32[B, S, 768]", "f32[768, 3072]", "f32[3072]"]
    assert infer("fused_matmul_bias_act", operands, f'activation = "{activation}"') == "f32[B, S, 3072]"


def test_fused_matmul_bias_act_checks_like_linear():
    error = refusal("fused_matmul_bias_act", ["f32[B, 8]", "f32[8, 4]", "f32[5]"])
    assert "bias [5] does not broadcast to [B, 4]" in error.message
    assert blamed_operand(error) == 2


def test_fused_residual_norms():
    assert infer("fused_residual_layernorm", ["f16[B, 8]", "f16[B, 8]", "f16[8]", "f16[8]"], "eps = 1e-6") == "f16[B, 8]"
    assert infer("fused_residual_rmsnorm", ["f32[B, S, 8]", "f32[B, S, 8]", "f32[8]"]) == "f32[B, S, 8]"
    error = refusal("fused_residual_rmsnorm", ["f32[B, 8]", "f16[B, 8]", "f32[8]"])
    assert "mixes f32 and f16" in error.message
    assert blamed_operand(error) == 1


@pytest.mark.parametrize(
    "operand_types, chain, expected",
    [
        (["f32[B, 4]", "f32[4]"], "mul($0, $1); gelu(%0)", "f32[B, 4]"),
        (["f32[B, 4]", "f32[4]"], "gt($0, $1)", "bool[B, 4]"),
        (["f32[B, 4]", "f32[4]"], "gt($0, $1); where(%0, $0, $1)", "f32[B, 4]"),
        (["f32[B, 4]"], "exp($0); cast(%0) {to = f16}; neg(%1)", "f16[B, 4]"),
        (["f32[B, 1]", "f32[S]", "f32[]"], "add($0, $1); mul(%0, $2); relu(%1)", "f32[B, S]"),
        (["i32[B]", "i32[B]"], "eq($0, $1); cast(%0) {to = i32}; add(%1, $0)", "i32[B]"),
    ],
)
def test_fused_elementwise_types_flow_through_the_chain(operand_types, chain, expected):
    assert infer("fused_elementwise", operand_types, f'chain = "{chain}"') == expected


@pytest.mark.parametrize(
    "operand_types, chain, words",
    [
        (["f32[B, 4]"], "exp(%0)", "reads %0 before it is computed"),
        (["f32[B, 4]"], "add($0)", "add takes 2 operands"),
        (["f32[B, 4]", "f16[B, 4]"], "add($0, $1)", "mixes f32 and f16"),
        (["f32[B, 4]", "f32[B, 5]"], "mul($0, $1)", "cannot broadcast"),
        (["f32[B, 4]"], "exp($0); where(%0, $0, $0)", "condition is f32"),
        (["f32[B, 4]"], "cast($0)", "needs attribute 'to'"),
        (["f32[B, 4]"], "softmax($0)", "not an elementwise op"),
        (["f32[B, 4]"], "exp($0) $", "bad chain"),
        (["f32[B, 4]"], "nosuchop($0)", "not an elementwise op"),
    ],
)
def test_fused_elementwise_refuses_bad_chains(operand_types, chain, words):
    assert words in refusal("fused_elementwise", operand_types, f'chain = "{chain}"').message


def test_fused_elementwise_chain_round_trips_through_the_printer():
    graph = case_graph("fused_elementwise", ["f32[B, 4]", "f32[4]"], 'chain = "gt($0, $1); where(%0, $0, $1)"')
    printed = rlxir.print_graph(graph)
    assert '{chain = "gt($0, $1); where(%0, $0, $1)"} : f32[B, 4]' in printed
    assert rlxir.parse(printed).main.equals(graph)

