"""The ONNX backend test suite that ships inside the onnx package, run through
`import_onnx` and the interpreter (rlxir.testing.onnx_conformance; the full tables come from
``python bench/onnx_conformance.py --by-op``).

Coverage only grows: every case recorded as passing in onnx_conformance_baseline.json must
still pass, and no case may end in an internal error or a wrong answer (a case rlxir cannot
express must be refused with a located message instead)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from rlxir.testing.onnx_conformance import (MODEL_SUITES, WIDER_TOLERANCE, Case, best_of,  # noqa: E402
                                            model_suite_cases, node_cases, read_baseline, run_case,
                                            shape_like_inputs, with_initializers)


def outcomes(cases):
    return {case.name: best_of(case) for case in cases}


def broken(found) -> list[str]:
    return [f"{name}: {outcome.status}: {outcome.detail}" for name, outcome in sorted(found.items())
            if outcome.status in ("internal", "mismatch")]


def test_the_node_cases_pass_as_recorded_and_none_ends_in_a_wrong_answer_or_a_crash():
    found = outcomes(node_cases())
    assert len(found) > 1500  # the onnx package generated its cases
    assert broken(found) == []
    passing = {name for name, outcome in found.items() if outcome.status == "pass"}
    lost = sorted(read_baseline()["node"] - passing)
    assert lost == [], f"node cases that passed before and no longer do: {lost}"


def test_every_refusal_names_the_node_or_the_op_types():
    found = outcomes([case for case in node_cases() if case.name.startswith(("test_lstm", "test_nonzero",
                                                                                "test_unique", "test_det"))])
    refused = {name: outcome.detail for name, outcome in found.items() if outcome.status == "refused"}
    assert refused
    for name, detail in refused.items():
        assert "ONNX node" in detail or "no rlx mapping" in detail or "ONNX input" in detail, (name, detail)


@pytest.mark.parametrize("suite", MODEL_SUITES)
def test_a_model_suite_passes_as_recorded(suite):
    found = outcomes(model_suite_cases(suite))
    assert found, f"the onnx package ships the {suite} suite"
    assert broken(found) == []
    passing = {name for name, outcome in found.items() if outcome.status == "pass"}
    lost = sorted(read_baseline().get(suite, set()) - passing)
    assert lost == [], f"{suite} cases that passed before and no longer do: {lost}"


# --- the harness itself ----------------------------------------------------------------
def relu_case(expected: np.ndarray) -> Case:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.array([[-1, 0, 2], [3, -4, 5]], dtype=np.float32)
    return Case("relu", model, (x,), (expected,))


def test_the_harness_tells_a_pass_from_a_mismatch():
    right = np.array([[0, 0, 2], [3, 0, 5]], dtype=np.float32)
    assert run_case(relu_case(right)).status == "pass"
    wrong = run_case(relu_case(right + np.float32(0.01)))
    assert wrong.status == "mismatch" and "6 of 6 elements differ" in wrong.detail
    assert run_case(relu_case(right[:1])).status == "mismatch"


def test_a_run_time_shape_input_is_also_tried_as_an_initializer():
    graph = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["y"])], "reshape",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                               helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    case = Case("reshape", model, (x, np.array([3, 2], dtype=np.int64)), (x.reshape(3, 2),))
    assert shape_like_inputs(model) == ["shape"]
    assert run_case(case).status == "refused"
    folded = with_initializers(case, ["shape"])
    assert [value.name for value in folded.model.graph.input] == ["x"] and len(folded.inputs) == 1
    outcome = best_of(case)
    assert (outcome.status, outcome.variant) == ("pass", "initializers")


def test_each_wider_tolerance_is_for_stored_outputs_less_exact_than_the_case_asks():
    """The inverse DFT cases: against the exact transform in float64, the stored outputs are
    off by more than the case's atol of 1e-7, so no float32 result can match them to it."""
    cases = {case.name: case for case in node_cases() if case.name in WIDER_TOLERANCE}
    assert set(cases) == set(WIDER_TOLERANCE)
    for case in cases.values():
        signal = case.inputs[0].astype(np.float64)
        exact = np.fft.ifft(signal[..., 0] + 1j * signal[..., 1], axis=1)
        stored = case.outputs[0].astype(np.float64)
        error = np.abs(stored - np.stack([exact.real, exact.imag], axis=-1)).max()
        assert 1e-7 < error < case.atol, (case.name, error)
