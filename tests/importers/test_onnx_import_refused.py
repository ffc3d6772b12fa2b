"""Every default-domain ONNX op either converts or is refused with a reason
(onnx_refused): no op of the opsets the importer reads goes silently unhandled."""

from __future__ import annotations

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import CONVERTERS, import_onnx  # noqa: E402

def default_domain_ops(low: int = 13, high: int = 23) -> set[str]:
    """Every op of the default domain that some opset in [low, high] defines, not
    deprecated there."""
    names = {schema.name for schema in onnx.defs.get_all_schemas_with_history() if schema.domain in ("", "ai.onnx")}
    live = set()
    for name in names:
        for version in range(low, high + 1):
            try:
                schema = onnx.defs.get_schema(name, version, "")
            except onnx.defs.SchemaError:
                continue
            if not schema.deprecated:
                live.add(name)
                break
    return live


def test_every_default_domain_op_of_opsets_13_to_23_converts_or_is_refused_by_reason():
    unhandled = sorted(default_domain_ops() - set(CONVERTERS))
    assert unhandled == []


def make_model(node, inputs, outputs, opset=17):
    graph = helper.make_graph([node], "refused",
                              [helper.make_tensor_value_info(name, kind, shape) for name, kind, shape in inputs],
                              [helper.make_tensor_value_info(name, kind, shape) for name, kind, shape in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("node, inputs, why", [
    (helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["y"], name="nms"),
     [("boxes", TensorProto.FLOAT, [1, 4, 4]), ("scores", TensorProto.FLOAT, [1, 1, 4])],
     r"ONNX node 'nms' \(NonMaxSuppression\): NonMaxSuppression cannot be imported: its output's shape depends on "
     r"the values of its input \(the number of boxes it keeps\)"),
    (helper.make_node("RandomUniformLike", ["x"], ["y"]), [("x", TensorProto.FLOAT, [3])],
     r"RandomUniformLike cannot be imported: it draws random numbers"),
    (helper.make_node("RandomNormal", [], ["y"], shape=[2, 3]), [], r"it draws random numbers"),
    (helper.make_node("Bernoulli", ["x"], ["y"]), [("x", TensorProto.FLOAT, [3])], r"it draws random numbers"),
])
def test_refused_ops_say_why_at_their_node(node, inputs, why):
    model = make_model(node, inputs, [("y", TensorProto.FLOAT, None)])
    with pytest.raises(UnsupportedModel, match=why):
        import_onnx(model)


def test_string_ops_are_refused_for_their_dtype():
    node = helper.make_node("StringNormalizer", ["x"], ["y"])
    model = make_model(node, [], [("y", TensorProto.STRING, None)])
    model.graph.initializer.append(helper.make_tensor("x", TensorProto.STRING, [1], [b"a"]))
    with pytest.raises(UnsupportedModel, match=r"StringNormalizer cannot be imported: it works on strings"):
        import_onnx(model)
