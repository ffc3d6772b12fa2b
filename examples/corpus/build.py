"""Write the corpus: every model of models.py as ONNX, with onnxruntime's reference output.

    python examples/corpus/build.py            # every model
    python examples/corpus/build.py bert gpt2  # only these (the manifest keeps the others)

For each model NAME this writes, next to this file:

- ``NAME.onnx``: ``torch.onnx.export`` of the model with a dynamic batch (axis 0 of every
  input and of the output is ``B``), by the exporter the model's entry names: the
  TorchScript one (``dynamo=False``, opset 17) or the dynamo one (``dynamo=True``, opset 18);
- ``NAME.npz``: the example inputs (batch 2) as ``input.<input name>`` and onnxruntime's
  outputs for them as ``output.<output name>``;

and ``manifest.json``: per model its family, package, exporter, opset, inputs and outputs
(names, shapes with the batch as ``B``, dtypes), file sizes, node count, and how far
onnxruntime's output is from eager PyTorch's (a check of the export itself).

Needs torch, torchvision, timm, transformers, onnx, onnxruntime (and onnxscript for the
dynamo exporter); no network.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import models  # noqa: E402

OPSETS = {"torchscript": 17, "dynamo": 18}
BATCH_SYMBOL = "B"
# Every stored file stays well below this; a model past it needs a smaller config.
FILE_LIMIT_BYTES = 8 * 1024 * 1024


def export(entry: models.CorpusModel, example: models.Example, path: Path) -> None:
    """Write `example.module` to `path` with a dynamic batch, by `entry.exporter`."""
    names = list(example.input_names)
    common = dict(input_names=names, output_names=[example.output_name], opset_version=OPSETS[entry.exporter])
    if entry.exporter == "torchscript":
        axes = {name: {example.batch_axis: BATCH_SYMBOL} for name in names + [example.output_name]}
        torch.onnx.export(example.module, example.inputs, str(path), dynamo=False, dynamic_axes=axes, **common)
        return
    batch = torch.export.Dim(BATCH_SYMBOL, min=1, max=1024)
    shapes = tuple({example.batch_axis: batch} for _ in names)
    program = torch.onnx.export(example.module, example.inputs, dynamo=True, dynamic_shapes=shapes, **common)
    program.save(str(path), external_data=False)


def strip_provenance(path: Path) -> None:
    """Drop the exporters' doc strings and metadata: the dynamo exporter records Python stack
    traces per node (absolute paths of the sources that ran the export), which change
    nothing a model computes and would tie the stored files to where they were built."""
    model = onnx.load(str(path))
    for proto in [model, model.graph, *model.graph.node, *model.functions,
                  *(node for function in model.functions for node in function.node)]:
        proto.doc_string = ""
        del proto.metadata_props[:]
    onnx.save(model, str(path))


def run_onnxruntime(path: Path, feeds: dict) -> list[np.ndarray]:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    runtime = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return runtime.run(None, feeds)


def value_infos(values, arrays) -> list[dict]:
    """Name, shape (symbolic dims by name) and element type of graph inputs or outputs;
    the element type is that of the array fed or returned for each (`arrays`, in order)."""
    described = []
    for value, array in zip(values, arrays):
        shape = [dim.dim_param if dim.dim_param else dim.dim_value for dim in value.type.tensor_type.shape.dim]
        described.append({"name": value.name, "shape": shape, "dtype": array.dtype.name})
    return described


def build_one(name: str) -> dict:
    """Export model `name`, store its reference, and return its manifest entry."""
    entry = models.MODELS[name]
    example = models.build(name)
    onnx_path, npz_path = HERE / f"{name}.onnx", HERE / f"{name}.npz"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        export(entry, example, onnx_path)
    strip_provenance(onnx_path)
    feeds = {input_name: tensor.numpy() for input_name, tensor in zip(example.input_names, example.inputs)}
    outputs = run_onnxruntime(onnx_path, feeds)
    model = onnx.load(str(onnx_path))
    output_names = [output.name for output in model.graph.output]
    np.savez_compressed(npz_path, **{f"input.{key}": array for key, array in feeds.items()},
                        **{f"output.{key}": array for key, array in zip(output_names, outputs)})
    with torch.no_grad():
        eager = example.module(*example.inputs).numpy()
    for path in (onnx_path, npz_path):
        if path.stat().st_size > FILE_LIMIT_BYTES:
            raise SystemExit(f"{path.name} is {path.stat().st_size} bytes: shrink the config of {name}")
    return {
        "name": name, "family": entry.family, "package": entry.package, "exporter": entry.exporter,
        "opset": next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
        "inputs": value_infos(model.graph.input, [feeds[value.name] for value in model.graph.input]),
        "outputs": value_infos(model.graph.output, outputs),
        "nodes": len(model.graph.node), "onnx_bytes": onnx_path.stat().st_size, "npz_bytes": npz_path.stat().st_size,
        "onnxruntime_vs_torch": float(np.max(np.abs(outputs[0].astype(np.float64) - eager))),
    }


def main(argv: list[str]) -> int:
    names = argv or list(models.MODELS)
    unknown = [name for name in names if name not in models.MODELS]
    if unknown:
        print(f"no corpus model {', '.join(unknown)}; one of {', '.join(models.MODELS)}", file=sys.stderr)
        return 2
    manifest_path = HERE / "manifest.json"
    manifest = {}
    if manifest_path.exists():
        manifest = {entry["name"]: entry for entry in json.loads(manifest_path.read_text())["models"]}
    for name in names:
        manifest[name] = build_one(name)
        entry = manifest[name]
        print(f"{name:20s} {entry['exporter']:11s} {entry['nodes']:5d} nodes {entry['onnx_bytes'] / 1e6:6.2f} MB "
              f"ort-vs-torch {entry['onnxruntime_vs_torch']:.1e}", flush=True)
    ordered = [manifest[name] for name in models.MODELS if name in manifest]
    manifest_path.write_text(json.dumps({"batch": models.BATCH, "models": ordered}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
