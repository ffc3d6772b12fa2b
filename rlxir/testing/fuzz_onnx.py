"""Hostile ONNX models for fuzzing `rlxir import`: short chains of ops with random shapes,
attributes and constant operands, often invalid (a perm of the wrong rank, an axis out of
range, a reshape that does not divide). Needs the onnx package (rlxir[onnx]).

`onnx_models()` draws serialized model bytes; rlxir/testing/fuzz.py says what a crash is.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
_DIMS = st.sampled_from((1, 2, 3, 4, 6))
_AXES = st.integers(-5, 5)
_SMALL_INTS = st.integers(-2, 7)
_DTYPES = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL,
           TensorProto.DOUBLE, TensorProto.UINT8)


@st.composite
def onnx_models(draw, max_nodes: int = 4) -> bytes:
    """A model of one input through 1..`max_nodes` ops, serialized."""
    builder = _Chain(draw)
    rank = draw(st.integers(0, 4))
    shape = [draw(st.sampled_from(("N", 1, 2, 3)))] + [draw(_DIMS) for _ in range(max(rank - 1, 0))]
    builder.inputs.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, shape[:rank]))
    value = "x"
    for _ in range(draw(st.integers(1, max_nodes))):
        value = draw(st.sampled_from(_NODES))(builder, value)
    output = helper.make_tensor_value_info(value, TensorProto.FLOAT, None)
    graph = helper.make_graph(builder.nodes, "fuzzed", builder.inputs, [output], builder.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    return model.SerializeToString()


class _Chain:
    """The nodes, initializers and inputs of the model being drawn."""

    def __init__(self, draw):
        self.draw = draw
        self.nodes: list = []
        self.initializers: list = []
        self.inputs: list = []
        self._count = 0

    def name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def constant(self, values, dtype=np.int64) -> str:
        name = self.name("c")
        self.initializers.append(numpy_helper.from_array(np.asarray(values, dtype=dtype), name))
        return name

    def weight(self, shape) -> str:
        name = self.name("w")
        array = np.full(shape, 0.5, dtype=np.float32)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def node(self, op: str, inputs: list[str], **attributes) -> str:
        output = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [output], **attributes))
        return output


def _unary(chain: _Chain, value: str) -> str:
    op = chain.draw(st.sampled_from(("Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Sqrt", "Erf", "Identity")))
    return chain.node(op, [value])


def _softmax(chain: _Chain, value: str) -> str:
    return chain.node(chain.draw(st.sampled_from(("Softmax", "LogSoftmax"))), [value], axis=chain.draw(_AXES))


def _transpose(chain: _Chain, value: str) -> str:
    perm = chain.draw(st.permutations(range(chain.draw(st.integers(1, 4)))))
    return chain.node("Transpose", [value], perm=list(perm))


def _reshape(chain: _Chain, value: str) -> str:
    shape = chain.draw(st.lists(st.sampled_from((-1, 0, 1, 2, 3, 4, 6, 12)), min_size=0, max_size=4))
    return chain.node("Reshape", [value, chain.constant(shape)])


def _expand(chain: _Chain, value: str) -> str:
    shape = chain.draw(st.lists(st.sampled_from((1, 2, 3, 4)), min_size=0, max_size=5))
    return chain.node("Expand", [value, chain.constant(shape)])


def _unsqueeze(chain: _Chain, value: str) -> str:
    axes = chain.draw(st.lists(_AXES, min_size=1, max_size=2))
    return chain.node(chain.draw(st.sampled_from(("Unsqueeze", "Squeeze"))), [value, chain.constant(axes)])


def _reduce(chain: _Chain, value: str) -> str:
    axes = chain.draw(st.lists(_AXES, min_size=0, max_size=3))
    keep = chain.draw(st.sampled_from((0, 1)))
    op = chain.draw(st.sampled_from(("ReduceSum", "ReduceMean", "ReduceMax")))
    if op == "ReduceSum":  # axes are an input from opset 13 on
        return chain.node(op, [value, chain.constant(axes)], keepdims=keep)
    if not axes:  # an empty list attribute has no type onnx can infer: leave it out (all axes)
        return chain.node(op, [value], keepdims=keep)
    return chain.node(op, [value], axes=axes, keepdims=keep)


def _concat(chain: _Chain, value: str) -> str:
    return chain.node("Concat", [value, value], axis=chain.draw(_AXES))


def _slice(chain: _Chain, value: str) -> str:
    starts, ends = [chain.draw(_SMALL_INTS)], [chain.draw(st.sampled_from((-1, 1, 2, 9, 2**62)))]
    axes, steps = [chain.draw(_AXES)], [chain.draw(st.sampled_from((1, 2, -1)))]
    inputs = [value, chain.constant(starts), chain.constant(ends), chain.constant(axes), chain.constant(steps)]
    return chain.node("Slice", inputs)


def _gather(chain: _Chain, value: str) -> str:
    indices = chain.draw(st.lists(_SMALL_INTS, min_size=0, max_size=3))
    return chain.node("Gather", [value, chain.constant(indices)], axis=chain.draw(_AXES))


def _binary(chain: _Chain, value: str) -> str:
    shape = chain.draw(st.lists(_DIMS, min_size=0, max_size=3))
    op = chain.draw(st.sampled_from(("Add", "Mul", "Sub", "Div", "MatMul", "Pow", "Max")))
    return chain.node(op, [value, chain.weight(shape)])


def _cast(chain: _Chain, value: str) -> str:
    return chain.node("Cast", [value], to=chain.draw(st.sampled_from(_DTYPES)))


def _flatten(chain: _Chain, value: str) -> str:
    return chain.node("Flatten", [value], axis=chain.draw(_AXES))


def _gemm(chain: _Chain, value: str) -> str:
    shape = [chain.draw(_DIMS), chain.draw(_DIMS)]
    return chain.node("Gemm", [value, chain.weight(shape)], transB=chain.draw(st.sampled_from((0, 1))),
                      alpha=chain.draw(st.sampled_from((1.0, 0.5, -2.0))))


def _layernorm(chain: _Chain, value: str) -> str:
    shape = chain.draw(st.lists(_DIMS, min_size=0, max_size=2))
    return chain.node("LayerNormalization", [value, chain.weight(shape), chain.weight(shape)],
                      axis=chain.draw(_AXES), epsilon=chain.draw(st.sampled_from((1e-5, 0.0, -1.0))))


_NODES = (_unary, _softmax, _transpose, _reshape, _expand, _unsqueeze, _reduce, _concat, _slice, _gather, _binary,
          _cast, _flatten, _gemm, _layernorm)
