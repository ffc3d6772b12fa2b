"""ONNX Loop and Scan unrolled into core ops, against onnxruntime: Scan's input/output axes
and directions (and Scan 8's batch axis), Loop with a static trip count whose condition is
static (ending early) or computed at run time (loop-carried values masked); refusals for
what has no static iteration count."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import_control import compare_on  # noqa: E402
from test_onnx_import_ops import make_model, ops_of, weights  # noqa: E402
from test_onnx_import_scatter import check_everywhere  # noqa: E402

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402

F, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
N, T = 2, 4


def _info(name, kind=F, shape=None):
    return helper.make_tensor_value_info(name, kind, shape)


def _feeds(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes}


# --- Scan ------------------------------------------------------------------------------
def _scan_body():
    """state' = state / 2 + x * u; outputs state' and tanh(x)."""
    nodes = [helper.make_node("Mul", ["state_in", "half"], ["kept"]),
             helper.make_node("Mul", ["x_t", "u_t"], ["product"]),
             helper.make_node("Add", ["kept", "product"], ["state_out"]),
             helper.make_node("Identity", ["state_out"], ["seen_t"]),
             helper.make_node("Tanh", ["x_t"], ["squashed_t"])]
    return helper.make_graph(nodes, "step", [_info("state_in"), _info("x_t"), _info("u_t")],
                             [_info("state_out"), _info("seen_t"), _info("squashed_t")])


@pytest.mark.parametrize("input_directions, output_axes, output_directions", [
    ([0, 0], [0, 0], [0, 0]),
    ([0, 1], [1, -1], [1, 0]),
    ([1, 1], [-2, 2], [0, 1]),
])
def test_scan_axes_and_directions(input_directions, output_axes, output_directions):
    """x is scanned on axis 1 ([N, T, 3]), u on its last axis ([N, 3, T])."""
    node = helper.make_node("Scan", ["state", "x", "u"], ["final", "seen", "squashed"], num_scan_inputs=2,
                            body=_scan_body(), scan_input_axes=[1, -1], scan_input_directions=input_directions,
                            scan_output_axes=output_axes, scan_output_directions=output_directions, name="scan0")
    model = make_model([node], [("state", F, ["N", 3]), ("x", F, ["N", T, 3]), ("u", F, ["N", 3, T])],
                       [("final", F, None), ("seen", F, None), ("squashed", F, None)],
                       [("half", np.array(0.5, np.float32))], opset=16)
    compare_on(model, _feeds(("state", (N, 3)), ("x", (N, T, 3)), ("u", (N, 3, T))), {"B": N})


def test_a_scan_body_with_initializers_of_its_own():
    """A body may hold its constants as its own initializers (scikit-learn's nearest-neighbour
    exports do): `half` lives in the body here, not in the outer graph."""
    body = _scan_body()
    body.initializer.append(helper.make_tensor("half", F, [], [0.5]))
    node = helper.make_node("Scan", ["state", "x", "u"], ["final", "seen", "squashed"], num_scan_inputs=2,
                            body=body, scan_input_axes=[1, 1])
    model = make_model([node], [("state", F, ["N", 3]), ("x", F, ["N", T, 3]), ("u", F, ["N", T, 3])],
                       [("final", F, None), ("seen", F, None), ("squashed", F, None)], opset=16)
    compare_on(model, _feeds(("state", (N, 3)), ("x", (N, T, 3)), ("u", (N, T, 3))), {"B": N})


def test_scan_8_runs_each_batch_entry():
    """Opset 8: a leading batch axis on every input and output; `directions` reverses u."""
    node = helper.make_node("Scan", ["", "state", "x", "u"], ["final", "seen", "squashed"], num_scan_inputs=2,
                            body=_scan_body(), directions=[0, 1])
    model = make_model([node], [("state", F, [N, 3]), ("x", F, [N, T, 3]), ("u", F, [N, T, 3])],
                       [("final", F, None), ("seen", F, None), ("squashed", F, None)],
                       [("half", np.array(0.5, np.float32))], opset=8)
    compare_on(model, _feeds(("state", (N, 3)), ("x", (N, T, 3)), ("u", (N, T, 3))), batch_size=N)


def test_an_unrolled_scan_compiles_on_every_target():
    node = helper.make_node("Scan", ["state", "x", "u"], ["final", "seen", "squashed"], num_scan_inputs=2,
                            body=_scan_body(), scan_input_axes=[1, 1])
    model = make_model([node], [("state", F, ["N", 3]), ("x", F, ["N", T, 3]), ("u", F, ["N", T, 3])],
                       [("final", F, ["N", 3]), ("seen", F, [T, "N", 3]), ("squashed", F, [T, "N", 3])],
                       [("half", np.array(0.5, np.float32))], opset=16)
    assert ops_of(check_everywhere(model, {"B": N})).count("tanh") == T


def test_a_scan_over_a_symbolic_length_is_a_located_error():
    node = helper.make_node("Scan", ["state", "x", "u"], ["final", "seen", "squashed"], num_scan_inputs=2,
                            body=_scan_body(), scan_input_axes=[1, 1], name="scan0")
    model = make_model([node], [("state", F, ["N", 3]), ("x", F, ["N", "T", 3]), ("u", F, ["N", "T", 3])],
                       [("final", F, None), ("seen", F, None), ("squashed", F, None)],
                       [("half", np.array(0.5, np.float32))], opset=16)
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'scan0' \(Scan\): the scan length is T, known only at run"):
        import_onnx(model)


# --- Loop ------------------------------------------------------------------------------
def _loop_body(condition_node):
    """y' = y + table[i] (a row picked by the iteration number); the condition from
    `condition_node` (writing cond_out); the scan output is y'."""
    nodes = [helper.make_node("Add", ["i", "one"], ["end"]),
             helper.make_node("Unsqueeze", ["i", "zero"], ["start1"]),
             helper.make_node("Unsqueeze", ["end", "zero"], ["end1"]),
             helper.make_node("Slice", ["table", "start1", "end1"], ["row"]),
             helper.make_node("Add", ["y_in", "row"], ["y_out"]),
             helper.make_node("Identity", ["y_out"], ["step_out"]),
             condition_node]
    return helper.make_graph(nodes, "body", [_info("i", I64, []), _info("cond_in", BOOL, []), _info("y_in")],
                             [_info("cond_out", BOOL, []), _info("y_out"), _info("step_out")])


def _loop_model(condition_node, trip_count=3, condition=True, outputs=("y", "steps"), fed=()):
    """A Loop over `_loop_body`; trip count and condition are initializers unless named in `fed`;
    the node's `outputs` that start with "unread" are no graph output."""
    node = helper.make_node("Loop", ["trip", "cond", "y0"], list(outputs), body=_loop_body(condition_node),
                            name="loop0")
    inputs = [("y0", F, ["N", 3])] + [(name, I64 if name == "trip" else BOOL, []) for name in fed]
    initializers = [("table", weights(5, 3)), ("one", np.array(1, np.int64)), ("zero", np.array([0], np.int64)),
                    ("limit", np.array(2.0, np.float32))]
    initializers += [(name, np.array(value)) for name, value in (("trip", trip_count), ("cond", condition))
                     if name not in fed]
    graph_outputs = [(name, F, None) for name in outputs if not name.startswith("unread")]
    return make_model([node], inputs, graph_outputs, initializers, opset=13)


KEEP_GOING = helper.make_node("Identity", ["cond_in"], ["cond_out"])
FIRST_TWO = helper.make_node("Less", ["i", "one"], ["cond_out"])  # i < 1: iterations 0 and 1 run


def _sum_below_limit():
    """cond_out = sum(y') < 2: a condition computed at run time."""
    return [helper.make_node("ReduceSum", ["y_out"], ["total"], keepdims=0),
            helper.make_node("Less", ["total", "limit"], ["cond_out"])]


@pytest.mark.parametrize("condition_node, condition, steps", [(KEEP_GOING, True, 3), (FIRST_TWO, True, 2),
                                                             (KEEP_GOING, False, 0)])
def test_loop_with_static_trip_count_and_condition(condition_node, condition, steps):
    outputs = ("y", "steps") if steps else ("y", "unread_steps")
    model = _loop_model(condition_node, condition=condition, outputs=outputs)
    imported = compare_on(model, _feeds(("y0", (N, 3))), {"B": N})
    assert ops_of(imported).count("slice") == 0  # the rows are static: table[i] folds


def test_loop_with_a_run_time_condition_masks_the_carried_values():
    body = _loop_body(helper.make_node("Identity", ["cond_in"], ["cond_out"]))
    del body.node[-1]
    body.node.extend(_sum_below_limit())
    node = helper.make_node("Loop", ["trip", "cond", "y0"], ["y", "unread_steps"], body=body, name="loop0")
    model = make_model([node], [("y0", F, ["N", 3]), ("cond", BOOL, [])], [("y", F, None)],
                       [("table", np.abs(weights(5, 3))), ("one", np.array(1, np.int64)),
                        ("zero", np.array([0], np.int64)), ("limit", np.array(2.0, np.float32)),
                        ("trip", np.array(5, np.int64))], opset=13)
    for start, condition in ((-1.0, True), (0.0, True), (-1.0, False)):  # stops early, later, never runs
        feeds = {"y0": np.full((N, 3), start, np.float32), "cond": np.array(condition)}
        imported = compare_on(model, feeds, {"B": N})
    assert "where" in ops_of(imported)


def test_a_loop_whose_trip_count_is_computed_at_run_time_is_a_located_error():
    model = _loop_model(KEEP_GOING, fed=("trip",))
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'loop0' \(Loop\): its trip count \(input 0\) is computed "
                                               r"at run time"):
        import_onnx(model)


def test_reading_the_scan_output_of_a_loop_with_a_run_time_condition_is_a_located_error():
    model = _loop_model(KEEP_GOING, fed=("cond",))
    with pytest.raises(UnsupportedModel, match=r"ONNX node 'loop0' \(Loop\): its scan output 0 is read, and its "
                                               r"length depends on a condition computed at run time"):
        import_onnx(model)


def test_loop_without_a_trip_count_runs_until_its_static_condition_turns_false():
    node = helper.make_node("Loop", ["", "cond", "y0"], ["y", "steps"], body=_loop_body(FIRST_TWO))
    model = make_model([node], [("y0", F, ["N", 3])], [("y", F, None), ("steps", F, None)],
                       [("table", weights(5, 3)), ("one", np.array(1, np.int64)), ("zero", np.array([0], np.int64)),
                        ("cond", np.array(True))], opset=13)
    imported = compare_on(model, _feeds(("y0", (N, 3))), {"B": N})
    assert ops_of(imported).count("add") == 2


def test_a_loop_with_a_run_time_condition_compiles_on_every_target():
    node = helper.make_node("Loop", ["trip", "cond", "y0"], ["y", "unread_steps"], body=_loop_body(KEEP_GOING))
    model = make_model([node], [("y0", F, ["N", 3]), ("cond", BOOL, [])], [("y", F, None)],
                       [("table", weights(5, 3)), ("one", np.array(1, np.int64)), ("zero", np.array([0], np.int64)),
                        ("trip", np.array(3, np.int64))], opset=13)
    assert "where" in ops_of(check_everywhere(model, {"B": N}))
