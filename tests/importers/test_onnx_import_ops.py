"""The ONNX importer, one op family at a time: models built with onnx.helper, imported,
checked for the ops they become, and (with onnxruntime) run against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from rlxir.errors import RlxError  # noqa: E402
from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402

F = TensorProto.FLOAT


def make_model(nodes, inputs, outputs, initializers=(), opset=17):
    """A model: `inputs`/`outputs` are (name, elem type, shape) triples (shape None: unknown)."""
    graph = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info(name, kind, shape) for name, kind, shape in inputs],
        [helper.make_tensor_value_info(name, kind, shape) for name, kind, shape in outputs],
        [numpy_helper.from_array(np.asarray(array), name) for name, array in initializers])
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 10 if opset >= 21 else 9 if opset >= 19 else 8  # what onnxruntime reads at that opset
    return model


def weights(*shape, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 0.3).astype(np.float32)


def check(model, bindings=None, rtol=1e-4, atol=1e-5, **options):
    """Import `model`; with onnxruntime installed, its outputs must match the interpreter's."""
    imported = import_onnx(model, **options)
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return imported
    from onnx_models import compare_with_onnxruntime

    compare_with_onnxruntime(model, imported, rtol=rtol, atol=atol, bindings=bindings)
    return imported


def ops_of(imported) -> list[str]:
    graph = imported.graph
    return [graph.op(name) for name in graph.ops()]


# --- convolution and pooling -----------------------------------------------------------
def test_conv_asymmetric_pads_strides_dilations_groups():
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 0, 2, 1], strides=[2, 1], dilations=[1, 2],
                              group=2)]
    model = make_model(nodes, [("x", F, ["N", 4, 9, 8])], [("y", F, None)],
                       [("w", weights(6, 2, 3, 3)), ("b", weights(6, seed=1))])
    imported = check(model, {"B": 2})
    graph = imported.graph
    conv = graph.ops()[0]
    assert graph.op(conv) == "conv2d"
    assert graph.full_attrs(conv)["padding"] == (1, 0, 2, 1)  # ONNX [top, left, bottom, right]
    assert graph.symbols == {"B": None}
    assert set(imported.params) == {"w", "b"}


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID"])
def test_conv_auto_pad(auto_pad):
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], auto_pad=auto_pad, strides=[2, 2])]
    check(make_model(nodes, [("x", F, [1, 3, 8, 7])], [("y", F, None)], [("w", weights(4, 3, 4, 3))]))


def test_conv1d_runs_as_a_unit_height_conv2d():
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[2, 1], group=3)]
    imported = check(make_model(nodes, [("x", F, [2, 3, 10])], [("y", F, None)],
                                [("w", weights(6, 1, 4)), ("b", weights(6, seed=2))]))
    assert "conv2d" in ops_of(imported)


def test_zero_pad_folds_into_the_conv():
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p"]), helper.make_node("Conv", ["p", "w"], ["y"], pads=[1, 1, 1, 1])]
    model = make_model(nodes, [("x", F, [1, 2, 6, 6])], [("y", F, None)],
                       [("pads", np.array([0, 0, 1, 2, 0, 0, 3, 0], np.int64)), ("w", weights(3, 2, 3, 3))])
    imported = check(model, batch_size=1)
    assert ops_of(imported) == ["conv2d"]
    graph = imported.graph
    assert graph.full_attrs(graph.ops()[0])["padding"] == (2, 3, 4, 1)


def test_standalone_pad_is_a_concat_of_constants():
    nodes = [helper.make_node("Pad", ["x", "pads", "value"], ["y"])]
    model = make_model(nodes, [("x", F, ["N", 3, 4])], [("y", F, None)],
                       [("pads", np.array([0, 1, 0, 0, 2, 3], np.int64)), ("value", np.array(1.5, np.float32))])
    imported = check(model, {"B": 2})
    assert set(ops_of(imported)) == {"concat"}


@pytest.mark.parametrize("ceil_mode", [0, 1])
def test_max_pool(ceil_mode):
    nodes = [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[0, 1, 1, 0],
                              ceil_mode=ceil_mode)]
    check(make_model(nodes, [("x", F, [1, 2, 8, 9])], [("y", F, None)], opset=12))


@pytest.mark.parametrize("include_pad", [0, 1])
@pytest.mark.parametrize("ceil_mode", [0, 1])
def test_average_pool_counts_as_onnx_does(include_pad, ceil_mode):
    nodes = [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 2], strides=[2, 2], pads=[1, 1, 1, 0],
                              count_include_pad=include_pad, ceil_mode=ceil_mode)]
    check(make_model(nodes, [("x", F, [1, 2, 7, 8])], [("y", F, None)], opset=12))


def test_global_pools():
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["a"]), helper.make_node("GlobalMaxPool", ["x"], ["m"])]
    imported = check(make_model(nodes, [("x", F, ["N", 3, 5, 4])], [("a", F, None), ("m", F, None)]), {"B": 2})
    assert ops_of(imported) == ["reduce_mean", "reduce_max"]


# --- normalisation ---------------------------------------------------------------------
def test_batchnorm_and_lrn():
    variance = np.abs(weights(4, seed=3)) + 0.5
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["n"], epsilon=1e-3),
             helper.make_node("LRN", ["n"], ["y"], size=3, alpha=0.01, beta=0.75, bias=2.0)]
    model = make_model(nodes, [("x", F, [2, 4, 5, 5])], [("y", F, None)],
                       [("s", weights(4)), ("b", weights(4, seed=1)), ("m", weights(4, seed=2)), ("v", variance)])
    imported = check(model)
    assert "batchnorm" in ops_of(imported) and "avg_pool2d" in ops_of(imported)


def test_layernorm_without_bias():
    nodes = [helper.make_node("LayerNormalization", ["x", "g"], ["y"], axis=-2, epsilon=1e-3)]
    imported = check(make_model(nodes, [("x", F, ["N", 3, 4, 5])], [("y", F, None)], [("g", weights(4, 5))]),
                     {"B": 2})
    assert "layernorm" in ops_of(imported)


# --- linear algebra --------------------------------------------------------------------
def test_gemm_with_static_weight_is_linear():
    nodes = [helper.make_node("Gemm", ["x", "w", "c"], ["y"], transB=1)]
    model = make_model(nodes, [("x", F, ["N", 5])], [("y", F, None)], [("w", weights(3, 5)), ("c", weights(3, seed=1))])
    imported = check(model, {"B": 3})
    assert ops_of(imported) == ["linear"]
    assert imported.params["w"].shape == (5, 3)


def test_gemm_transposes_alpha_beta():
    nodes = [helper.make_node("Gemm", ["a", "b", "c"], ["y"], transA=1, transB=1, alpha=0.5, beta=2.0)]
    check(make_model(nodes, [("a", F, [4, 3]), ("b", F, [5, 4]), ("c", F, [1, 5])], [("y", F, None)]), batch_size=4)


def test_batched_matmul_and_softmax_axis_by_opset():
    for opset in (11, 13):
        nodes = [helper.make_node("MatMul", ["a", "b"], ["m"]), helper.make_node("Softmax", ["m"], ["y"], axis=1)]
        check(make_model(nodes, [("a", F, [2, 3, 4]), ("b", F, [4, 5])], [("y", F, None)], opset=opset))


# --- elementwise -----------------------------------------------------------------------
def test_elementwise_family():
    nodes = [
        helper.make_node("Add", ["x", "y"], ["a"]), helper.make_node("Mul", ["a", "half"], ["b"]),
        helper.make_node("Sub", ["b", "y"], ["c"]), helper.make_node("Div", ["c", "two"], ["d"]),
        helper.make_node("Abs", ["d"], ["e"]), helper.make_node("Sqrt", ["e"], ["f"]),
        helper.make_node("Pow", ["f", "two"], ["g"]), helper.make_node("Erf", ["g"], ["h"]),
        helper.make_node("Tanh", ["h"], ["i"]), helper.make_node("Sigmoid", ["i"], ["j"]),
        helper.make_node("Exp", ["j"], ["k"]), helper.make_node("Log", ["k"], ["l"]),
        helper.make_node("Neg", ["l"], ["m"]), helper.make_node("Max", ["m", "x", "y"], ["n"]),
        helper.make_node("Min", ["n", "y"], ["o"]), helper.make_node("Sum", ["o", "x", "y"], ["p"]),
        helper.make_node("Mean", ["p", "x"], ["q"]), helper.make_node("Clip", ["q", "lo", "hi"], ["r"]),
        helper.make_node("LeakyRelu", ["r"], ["s"], alpha=0.1), helper.make_node("HardSwish", ["s"], ["t"]),
        helper.make_node("Relu", ["t"], ["u"]), helper.make_node("Reciprocal", ["two"], ["inv"]),
        helper.make_node("Mul", ["u", "inv"], ["out"]),
    ]
    model = make_model(nodes, [("x", F, ["N", 6]), ("y", F, [6])], [("out", F, None)],
                       [("half", np.array(0.5, np.float32)), ("two", np.array(2.0, np.float32)),
                        ("lo", np.array(-0.3, np.float32)), ("hi", np.array(0.8, np.float32))])
    check(model, {"B": 3})


def test_gelu_opset_20():
    nodes = [helper.make_node("Gelu", ["x"], ["a"]), helper.make_node("Gelu", ["x"], ["b"], approximate="tanh"),
             helper.make_node("Add", ["a", "b"], ["y"])]
    check(make_model(nodes, [("x", F, [2, 5])], [("y", F, None)], opset=20))


def test_where_equal_cast_not():
    nodes = [helper.make_node("Greater", ["x", "zero"], ["pos"]), helper.make_node("Not", ["pos"], ["neg"]),
             helper.make_node("Cast", ["neg"], ["negf"], to=F), helper.make_node("Where", ["pos", "x", "negf"], ["y"])]
    check(make_model(nodes, [("x", F, [3, 4])], [("y", F, None)], [("zero", np.array(0.0, np.float32))]))


# --- shape ops -------------------------------------------------------------------------
def test_reshape_zero_and_minus_one_flatten_transpose():
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"]), helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3]),
             helper.make_node("Flatten", ["t"], ["y"], axis=2)]
    model = make_model(nodes, [("x", F, ["N", 4, 6])], [("y", F, None)], [("shape", np.array([0, 0, 2, -1], np.int64))])
    imported = check(model, {"B": 2})
    assert str(imported.graph.type(imported.outputs["y"])) == "f32[2*B, 12]"


def test_squeeze_unsqueeze_by_opset():
    for opset in (11, 13):
        if opset < 13:
            nodes = [helper.make_node("Unsqueeze", ["x"], ["u"], axes=[0, 3]), helper.make_node("Squeeze", ["u"], ["y"], axes=[0])]
            inits = []
        else:
            nodes = [helper.make_node("Unsqueeze", ["x", "ax"], ["u"]), helper.make_node("Squeeze", ["u", "ax0"], ["y"])]
            inits = [("ax", np.array([0, 3], np.int64)), ("ax0", np.array([0], np.int64))]
        imported = check(make_model(nodes, [("x", F, [2, 3, 4])], [("y", F, None)], inits, opset=opset), batch_size=2)
        assert imported.graph.type(imported.outputs["y"]).shape == (2, 3, 1, 4)


def test_slice_split_concat_gather_expand():
    nodes = [
        helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["s"]),
        helper.make_node("Split", ["x", "sizes"], ["p", "q"], axis=2),
        helper.make_node("Concat", ["q", "p"], ["c"], axis=2),
        helper.make_node("Gather", ["c", "idx"], ["g"], axis=2),
        helper.make_node("Expand", ["bias", "eshape"], ["e"]),
        helper.make_node("Add", ["g", "e"], ["y"]),
    ]
    model = make_model(nodes, [("x", F, ["N", 3, 6])], [("s", F, None), ("y", F, None)],
                       [("starts", np.array([1, -4], np.int64)), ("ends", np.array([100, -1], np.int64)),
                        ("axes", np.array([1, 2], np.int64)), ("sizes", np.array([2, 4], np.int64)),
                        ("idx", np.array([[-1, 0], [2, 3]], np.int64)), ("bias", weights(1, 1, 1, 1)),
                        ("eshape", np.array([1, 3, 2, 1], np.int64))])
    check(model, {"B": 2})


def test_embedding_gather_with_dynamic_indices():
    nodes = [helper.make_node("Gather", ["table", "ids"], ["y"])]
    model = make_model(nodes, [("ids", TensorProto.INT64, ["N", "S"])], [("y", F, None)], [("table", weights(7, 4))])
    imported = check(model, {"B": 2, "S": 3})
    assert imported.graph.symbols == {"B": None, "S": None}


def test_shape_arithmetic_becomes_symbolic_reshape_targets():
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as exporters write attention."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["batch"]),
        helper.make_node("Gather", ["shape", "one"], ["seq"]),
        helper.make_node("Unsqueeze", ["batch", "axis0"], ["batch1"]),
        helper.make_node("Unsqueeze", ["seq", "axis0"], ["seq1"]),
        helper.make_node("Concat", ["batch1", "seq1", "heads"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"]),
        helper.make_node("ConstantOfShape", ["shape"], ["zeros"], value=numpy_helper.from_array(np.array([0.5], np.float32))),
        helper.make_node("Range", ["start", "seq", "step"], ["positions"]),
        helper.make_node("Cast", ["positions"], ["positions_f"], to=F),
        helper.make_node("Add", ["x", "zeros"], ["shifted"]),
        helper.make_node("Unsqueeze", ["positions_f", "axis1"], ["positions2"]),
        helper.make_node("Add", ["shifted", "positions2"], ["y"]),
    ]
    model = make_model(nodes, [("x", F, ["batch", "seq", 8])], [("r", F, None), ("y", F, None)],
                       [("zero", np.array(0, np.int64)), ("one", np.array(1, np.int64)),
                        ("axis0", np.array([0], np.int64)), ("axis1", np.array([1], np.int64)),
                        ("heads", np.array([2, 4], np.int64)), ("start", np.array(0, np.int64)),
                        ("step", np.array(1, np.int64))])
    imported = check(model, {"B": 2, "seq": 5})
    graph = imported.graph
    reshape = next(name for name in graph.ops() if graph.op(name) == "reshape")
    assert [str(dim) for dim in graph.full_attrs(reshape)["shape"]] == ["B", "seq", "2", "4"]


def test_constant_dropout_identity_reduce():
    value = numpy_helper.from_array(np.array([[1.0, -2.0, 3.0]], np.float32))
    nodes = [helper.make_node("Constant", [], ["k"], value=value), helper.make_node("Mul", ["x", "k"], ["m"]),
             helper.make_node("Dropout", ["m"], ["d"]), helper.make_node("Identity", ["d"], ["i"]),
             helper.make_node("ReduceMean", ["i"], ["mean"], axes=[1], keepdims=0),
             helper.make_node("ReduceSum", ["i", "axes"], ["sum"])]
    model = make_model(nodes, [("x", F, [4, 3])], [("mean", F, None), ("sum", F, None)],
                       [("axes", np.array([0], np.int64))], opset=13)
    check(model)


def test_static_batch_becomes_a_symbol_with_a_default():
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"])]
    model = make_model(nodes, [("x", F, [1, 4, 3])], [("y", F, None)], [("shape", np.array([1, 12], np.int64))])
    imported = check(model)
    graph = imported.graph
    assert graph.symbols == {"B": 1}
    assert str(graph.type(imported.outputs["y"])) == "f32[B, 12]"
    assert str(graph.bind(B=4).type(imported.outputs["y"])) == "f32[4, 12]"
    fixed = import_onnx(model, batch_size=3)
    assert fixed.graph.symbols == {} and str(fixed.graph.type(fixed.outputs["y"])) == "f32[3, 12]"
    named = import_onnx(model, batch_dim="N")
    assert named.graph.symbols == {"N": 1}


# --- names and refusals ----------------------------------------------------------------
def test_names_are_sanitized_unique_and_deterministic():
    nodes = [helper.make_node("Relu", ["in/put:0"], ["/layer.0/Relu_output_0"]),
             helper.make_node("Neg", ["/layer.0/Relu_output_0"], ["layer.0.Relu_output_0"]),
             helper.make_node("Neg", ["layer.0.Relu_output_0"], ["0out"])]
    model = make_model(nodes, [("in/put:0", F, [2])], [("0out", F, None)])
    first, second = import_onnx(model), import_onnx(model)
    assert first.graph.schedule() == ["in.put.0", "layer.0.Relu_output_0", "layer.0.Relu_output_0.1", "v0out"]
    from rlxir.ir.printer import print_graph

    assert print_graph(first.graph) == print_graph(second.graph)


def test_unsupported_ops_are_listed_with_counts():
    """Ops of a domain no converter knows, each listed once with its count."""
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Blur", ["a"], ["v"], domain="com.example"),
             helper.make_node("Warp", ["a"], ["n"], domain="com.example"),
             helper.make_node("Blur", ["v"], ["y"], domain="com.example")]
    model = make_model(nodes, [("x", F, [2, 5])], [("y", F, None), ("n", TensorProto.INT64, None)])
    with pytest.raises(UnsupportedModel) as error:
        import_onnx(model)
    assert "2 ONNX op types have no rlx mapping: com.example.Blur x2, com.example.Warp x1" in error.value.message


def test_a_value_nothing_defines_is_an_error_naming_the_reading_node():
    """A node reads a value no input, initializer or earlier node defines (a cut model):
    the error names the node and the value, whichever converter reads its shape first."""
    nodes = [helper.make_node("Concat", ["x", "missing"], ["y"], name="joined", axis=1)]
    model = make_model(nodes, [("x", F, ["N", 4])], [("y", F, ["N", None])])
    with pytest.raises(RlxError, match=r"ONNX node 'joined' \(Concat\): ONNX value 'missing' is read "
                                          r"before it is defined"):
        import_onnx(model)
