"""The ONNX backend test suite, run through the ONNX importer and the reference interpreter.

The ``onnx`` package ships its own conformance suite: the node cases
(``onnx.backend.test.case.node.collect_testcases()``, one small model per op and attribute
combination, with inputs and expected outputs) and the model suites stored beside them
(``onnx/backend/test/data/{light,pytorch-operator,pytorch-converted,simple}``). This module
runs a case the way a user's model runs: `import_onnx`, then `rlxir.interpret` on the case's
inputs, outputs compared with the expected ones at the case's own tolerance.

Each case ends as one of:

- ``pass``: every output has the expected shape and values;
- ``refused``: the importer (or the interpreter) said why with an `RlxError`, a located
  message the user sees;
- ``mismatch``: the graph ran but an output differs;
- ``internal``: anything else (an exception that is not an `RlxError`): a bug in rlxir.

Exported models carry shape-like inputs (a Reshape's shape, a Pad's pads, TopK's k, a
Resize's scales) as initializers, while many node cases feed them at run time. A case that
feeds one is therefore also run with those inputs made initializers (``variant
"initializers"``), and `best_of` counts the case as passed when either way passes. Which
inputs are shape-like is a table per op (`SHAPE_LIKE_INPUTS`), from the ONNX operator
specification.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs
import numpy as np

CORE_DTYPES = frozenset({"float32", "float16", "int64", "int32", "bool"})
"""The element types of the suite's headline measure (cases whose every tensor has one)."""

IR_DTYPES = CORE_DTYPES | {"float64", "bfloat16", "int8", "uint8"}
"""Every element type of the suite that the IR can hold."""

MODEL_SUITES = ("light", "pytorch-operator", "pytorch-converted", "simple")

BASELINE = Path(__file__).resolve().parents[2] / "tests" / "importers" / "onnx_conformance_baseline.json"
"""The cases that pass, per suite, as last recorded (``bench/onnx_conformance.py
--write-baseline``); the suite test fails when one of them stops passing."""

SHAPE_LIKE_INPUTS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,), "Expand": (1,), "Tile": (1,), "ConstantOfShape": (0,), "Slice": (1, 2, 3, 4),
    "Pad": (1, 2, 3), "Resize": (1, 2, 3), "Upsample": (1,), "TopK": (1,), "Unsqueeze": (1,), "Squeeze": (1,),
    "ReduceSum": (1,), "ReduceMean": (1,), "ReduceMax": (1,), "ReduceMin": (1,), "ReduceProd": (1,),
    "ReduceL1": (1,), "ReduceL2": (1,), "ReduceLogSum": (1,), "ReduceLogSumExp": (1,), "ReduceSumSquare": (1,), "CumProd": (1,),
    "Split": (1,), "Range": (0, 1, 2), "Loop": (0, 1), "OneHot": (1,), "CumSum": (1,), "Trilu": (1,), "Clip": (1, 2),
    "CenterCropPad": (1,), "GridSample": (), "RandomNormalLike": (), "Col2Im": (1, 2), "DFT": (1, 2),
    "STFT": (1, 3), "MelWeightMatrix": (0, 1, 2, 3, 4), "BlackmanWindow": (0,), "HammingWindow": (0,),
    "HannWindow": (0,), "Compress": (1,), "Dropout": (1, 2), "ReverseSequence": (1,), "RoiAlign": (2,),
    "NonMaxSuppression": (2, 3, 4), "Bernoulli": (), "SplitToSequence": (1,), "Einsum": (), "Optional": (),
    "MaxUnpool": (2,), "AffineGrid": (1,), "DequantizeLinear": (1, 2), "QuantizeLinear": (1, 2),
}


WIDER_TOLERANCE: dict[str, tuple[float, float, str]] = {
    name: (1e-3, 1e-5, "the stored outputs come from a single-precision FFT, 1.5e-6 from the exact inverse "
                       "transform where it is near 0 (outputs reach 54, whose f32 ulp is 3.8e-6); a float32 "
                       "product by the DFT matrix is within one ulp of the largest output")
    for name in ("test_dft_inverse", "test_dft_inverse_opset19")
}
"""Cases whose stored outputs are less exact than the case's own atol: name -> (rtol, atol,
why). tests/importers/test_onnx_conformance.py checks each reason against float64."""


@attrs.frozen
class Case:
    """One conformance case: a model, its inputs and the outputs it must give."""

    name: str
    model: object  # onnx.ModelProto
    inputs: tuple[np.ndarray, ...]
    outputs: tuple[np.ndarray, ...]
    rtol: float = 1e-3
    atol: float = 1e-7

    def dtypes(self) -> set[str]:
        return {str(array.dtype) for array in (*self.inputs, *self.outputs)}

    def op_types(self) -> tuple[str, ...]:
        return tuple(sorted({node.op_type for node in self.model.graph.node}))


@attrs.frozen
class Outcome:
    """How a case ended: `status` is pass, refused, mismatch or internal; `detail` the first
    line of the message; `variant` "given" or "initializers"."""

    case: str
    status: str
    detail: str = ""
    variant: str = "given"


def node_cases() -> list[Case]:
    """Every node case the installed ``onnx`` package generates (first data set of each)."""
    import warnings

    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    found = []
    for case in cases:
        if not case.data_sets:
            continue
        inputs, outputs = case.data_sets[0]
        rtol, atol = WIDER_TOLERANCE.get(case.name, (float(case.rtol), float(case.atol), ""))[:2]
        found.append(Case(case.name, case.model, tuple(_arrays(inputs)), tuple(_arrays(outputs)), rtol, atol))
    return found


def _arrays(values) -> list[np.ndarray]:
    """The case's tensors; a sequence or optional value (which the IR has no type for) is
    kept as a 0-d object array, so the case counts outside every dtype set."""
    arrays = []
    for value in values:
        if isinstance(value, (np.ndarray, np.generic)):
            arrays.append(np.asarray(value))
        elif type(value).__name__ == "TensorProto":  # a case that stores its data as a tensor proto
            from onnx import numpy_helper

            arrays.append(numpy_helper.to_array(value))
        else:
            holder = np.empty((), dtype=object)
            holder[()] = value
            arrays.append(holder)
    return arrays


def suite_directory(suite: str) -> Path:
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data" / suite


def model_suite_cases(suite: str) -> list[Case]:
    """The stored cases of one model suite (`MODEL_SUITES`), first data set of each."""
    import onnx

    found: list[Case] = []
    root = suite_directory(suite)
    if not root.is_dir():
        return found
    if suite == "light":
        return _light_cases(root)
    for directory in sorted(root.iterdir()):
        model_path = directory / "model.onnx"
        data = directory / "test_data_set_0"
        if not model_path.is_file() or not data.is_dir():
            continue
        model = onnx.load(str(model_path))
        found.append(Case(directory.name, model, _stored(data, "input"), _stored(data, "output")))
    return found


def _stored(data: Path, prefix: str) -> tuple[np.ndarray, ...]:
    """The tensors ``PREFIX_0.pb, PREFIX_1.pb, ...`` of a stored data set, in order."""
    import onnx
    from onnx import numpy_helper

    tensors = []
    for path in sorted(data.glob(f"{prefix}_*.pb"), key=lambda path: int(path.stem.split("_")[-1])):
        tensor = onnx.TensorProto()
        tensor.ParseFromString(path.read_bytes())
        tensors.append(numpy_helper.to_array(tensor))
    return tuple(tensors)


def _light_cases(root: Path) -> list[Case]:
    """The light models store no inputs: like the ONNX runner, each float input is
    ``arange(n).reshape(shape) / n`` (unknown dims 1), and the outputs are the stored
    ``light_NAME_output_K.pb`` files."""
    import onnx
    from onnx import numpy_helper

    found = []
    for path in sorted(root.glob("light_*.onnx")):
        model = onnx.load(str(path))
        weights = {tensor.name for tensor in model.graph.initializer}
        inputs = []
        for value in model.graph.input:
            if value.name in weights:
                continue
            shape = tuple(dim.dim_value if dim.HasField("dim_value") else 1 for dim in value.type.tensor_type.shape.dim)
            count = int(np.prod(shape))
            inputs.append((np.arange(count).reshape(shape) / count).astype(np.float32))
        outputs = []
        for index in range(len(model.graph.output)):
            tensor = onnx.TensorProto()
            tensor.ParseFromString(path.with_name(f"{path.stem}_output_{index}.pb").read_bytes())
            outputs.append(numpy_helper.to_array(tensor))
        found.append(Case(path.stem, model, tuple(inputs), tuple(outputs)))
    return found


def shape_like_inputs(model) -> list[str]:
    """The graph inputs whose values reach a shape-like position (`SHAPE_LIKE_INPUTS`),
    read there directly or through arithmetic on them (an expanded function computes a Pad's
    pads from a ``shape`` input with Sub and Div): the inputs an exported model would carry
    as initializers."""
    producers = {output: node for node in model.graph.node for output in node.output if output}
    frontier = [node.input[index] for node in model.graph.node
                for index in SHAPE_LIKE_INPUTS.get(node.op_type, ()) if index < len(node.input) and node.input[index]]
    reached: set[str] = set()
    while frontier:
        name = frontier.pop()
        if name in reached:
            continue
        reached.add(name)
        producer = producers.get(name)
        if producer is not None and producer.op_type != "Shape":  # Shape reads a tensor's dims, not its data
            frontier.extend(operand for operand in producer.input if operand)
    return [value.name for value in model.graph.input if value.name in reached]


def with_initializers(case: Case, names: Sequence[str]) -> Case:
    """`case` with the graph inputs `names` turned into initializers holding the case's values."""
    import onnx
    from onnx import numpy_helper

    model = onnx.ModelProto.FromString(case.model.SerializeToString())
    order = [value.name for value in model.graph.input]
    kept_inputs, kept_arrays = [], []
    for value, array in zip(list(model.graph.input), case.inputs):
        if value.name in names:
            model.graph.initializer.append(numpy_helper.from_array(np.asarray(array), value.name))
        else:
            kept_inputs.append(value)
            kept_arrays.append(array)
    del model.graph.input[:]
    model.graph.input.extend(kept_inputs)
    assert len(order) == len(case.inputs), "a case feeds every graph input"
    return attrs.evolve(case, model=model, inputs=tuple(kept_arrays))


def run_case(case: Case, variant: str = "given") -> Outcome:
    """Import `case.model`, run it on the case's inputs, compare every output."""
    from rlxir.errors import RlxError
    from rlxir.importers.onnx import import_onnx
    from rlxir.interpreter import interpret

    try:
        imported = import_onnx(case.model)
    except RlxError as error:
        return Outcome(case.name, "refused", _first_line(error), variant)
    except Exception as error:  # noqa: BLE001 - classified, never hidden
        return Outcome(case.name, "internal", _internal(error), variant)
    graph_inputs = [value.name for value in case.model.graph.input
                    if value.name not in {tensor.name for tensor in case.model.graph.initializer}]
    feeds = {}
    for onnx_name, array in zip(graph_inputs, case.inputs):
        if onnx_name in imported.inputs:
            feeds[imported.inputs[onnx_name]] = _as_fed(np.asarray(array))
    try:
        with np.errstate(all="ignore"):
            got = interpret(imported.graph, feeds, dict(imported.params))
    except RlxError as error:
        return Outcome(case.name, "refused", "run: " + _first_line(error), variant)
    except Exception as error:  # noqa: BLE001
        return Outcome(case.name, "internal", "run: " + _internal(error), variant)
    output_names = [value.name for value in case.model.graph.output]
    for onnx_name, want in zip(output_names, case.outputs):
        have = got[imported.outputs[onnx_name]]
        problem = _difference(np.asarray(have), np.asarray(want), case.rtol, case.atol)
        if problem:
            return Outcome(case.name, "mismatch", f"output {onnx_name!r}: {problem}", variant)
    return Outcome(case.name, "pass", "", variant)


def best_of(case: Case) -> Outcome:
    """The case as given; when that does not pass and it feeds shape-like inputs at run
    time, the better of that and the case with them as initializers."""
    given = run_case(case)
    if given.status == "pass":
        return given
    names = shape_like_inputs(case.model)
    if not names or any(array.dtype == object for array in case.inputs):
        return given
    folded = run_case(with_initializers(case, names), "initializers")
    if folded.status == "pass":
        return folded
    rank = {"internal": 0, "mismatch": 1, "refused": 2}
    return given if rank[given.status] <= rank[folded.status] else folded


def _as_fed(array: np.ndarray) -> np.ndarray:
    """bf16 data as the interpreter takes it: float32 holding the bf16 values."""
    return array.astype(np.float32) if array.dtype.name == "bfloat16" else array


def _difference(have: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str:
    if want.dtype.name == "bfloat16":
        want = want.astype(np.float32)
        rtol = max(rtol, 2**-6)  # two bf16 ulps, as the ONNX backend runner allows
    if have.shape != want.shape:
        return f"shape {list(have.shape)}, expected {list(want.shape)}"
    if want.dtype == bool or have.dtype == bool:
        if not np.array_equal(have.astype(bool), want.astype(bool)):
            return f"{int(np.sum(have.astype(bool) != want.astype(bool)))} of {want.size} elements differ"
        return ""
    have64, want64 = have.astype(np.float64), want.astype(np.float64)
    if want.dtype.kind in "iu":
        wrong = have64 != want64
    else:
        if want.dtype == np.float16 or have.dtype == np.float16:
            rtol = max(rtol, 1e-3)
        close = np.isclose(have64, want64, rtol=rtol, atol=atol, equal_nan=True)
        wrong = ~close
    if np.any(wrong):
        worst = float(np.nanmax(np.abs(have64 - want64))) if have.size else 0.0
        return f"{int(np.sum(wrong))} of {want.size} elements differ (max abs error {worst:.3g})"
    return ""


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _internal(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"{type(error).__name__}: {_first_line(error)}{where}"


def run_all(cases: Sequence[Case]) -> Iterator[tuple[Case, Outcome]]:
    for case in cases:
        yield case, best_of(case)


def write_baseline(records: Sequence[dict]) -> None:
    """Store the passing cases of `records` (the bench's JSON rows) per suite in `BASELINE`."""
    import json

    passing: dict[str, list[str]] = {}
    for record in records:
        if record["status"] == "pass":
            passing.setdefault(record["suite"], []).append(record["case"])
    BASELINE.write_text(json.dumps({suite: sorted(names) for suite, names in sorted(passing.items())}, indent=1) + "\n")


def read_baseline() -> dict[str, set[str]]:
    import json

    return {suite: set(names) for suite, names in json.loads(BASELINE.read_text()).items()}
