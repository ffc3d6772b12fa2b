"""Import an ONNX model as an rlx graph (``rlxir import MODEL.onnx``; needs the ``onnx`` extra).

`import_onnx(model, batch_dim="B", batch_size=None)` reads the model with the ``onnx``
package, runs ``onnx.shape_inference``, and maps every node to core ops
(each converter module registers its op types in `rlxir.importers.onnx_registry`; this
module imports them all and reads that one table). Contracts:

- **All or nothing.** Before anything is built, every node's op type is checked; a model
  with unsupported ops is one `UnsupportedModel` error listing each unsupported op type
  with its count. Anything else the IR cannot express (a Slice with a step, a value that
  needs a symbolic dim at run time) is an error naming the ONNX node.
- **Weights.** Initializers become params (their values are in `ImportedGraph.params`);
  so do ``ConstantOfShape`` results of static shape, which is how the onnx backend test
  models store their weights. Static tensors of at most `LITERAL_LIMIT` elements that are
  not weights (shape arithmetic, scalars) become const literals.
- **Static values.** Shape arithmetic (Shape, Gather, Concat, Unsqueeze, Slice, Cast,
  arithmetic on integers, Range, ...) is evaluated while importing, symbolically where a
  dim is a symbol, so a Reshape whose target comes from ``Shape(x)`` gets a dims attribute
  such as ``[B, 128, 12, 64]``.
- **The batch.** The leading dim of every graph input is the batch, named `batch_dim`.
  A dynamic one becomes that symbol. A static one becomes the symbol too, with the model's
  value as its default (``graph resnet50(B=1)``), unless the model does not let it vary (an
  op broadcasts it against a fixed dim of the same size, or reads it as data through
  Shape): then the graph keeps the fixed size, has no batch symbol, and
  `ImportedGraph.notes` says why, and a Reshape target whose first entry
  is that static batch while its operand's first dim is the batch symbol reads the
  symbol (the Caffe2-era models flatten with a constant ``[1, 9216]``). `batch_size=N`
  fixes the batch to N instead (a static batch is imported as the symbol, then bound).
  Other dynamic dims become symbols named after their ``dim_param``.
- **Checked against ONNX.** Every value's type is compared with the shape ONNX infers
  (the batch symbol at the model's static value); a difference is an error, never a
  silently different graph.
- **Names** are the ONNX value names, sanitized (`builder.sanitize_name`) and made unique
  in node order, so the same model always imports to the same text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import attrs
import onnx

from rlxir.importers import (  # noqa: F401  (each converter module registers its op types)
    onnx_attention,
    onnx_bits,
    onnx_control,
    onnx_decoder,
    onnx_deform,
    onnx_einsum,
    onnx_flex_attention,
    onnx_grid,
    onnx_linear_attention,
    onnx_loop,
    onnx_loss,
    onnx_math,
    onnx_ml,
    onnx_ml_linear,
    onnx_nn,
    onnx_norm,
    onnx_ops,
    onnx_optimizers,
    onnx_pool,
    onnx_pool_dilated,
    onnx_qconv,
    onnx_quant,
    onnx_rearrange,
    onnx_recurrent,
    onnx_reduce,
    onnx_refused,
    onnx_resize,
    onnx_roi,
    onnx_scatter,
    onnx_sequence,
    onnx_shape,
    onnx_signal,
    onnx_tfidf,
    onnx_trees,
    onnx_upsample,
)
from rlxir.errors import RlxError
from rlxir.importers.builder import ImportedGraph, UnsupportedModel
from rlxir.importers.onnx_context import (ONNX_DTYPES, OnnxContext, concrete, load_model, node_attributes,  # noqa: F401
                                          normalize_static, onnx_dtype, op_key, opset_version)
from rlxir.importers.onnx_registry import CONVERTERS


def import_onnx(model: str | Path | onnx.ModelProto, *, batch_dim: str = "B", batch_size: int | None = None,
                name: str | None = None) -> ImportedGraph:
    """The rlx graph of an ONNX model (see the module docstring for the contracts)."""
    source = str(model) if not isinstance(model, onnx.ModelProto) else "the model"
    model = load_model(model)
    refuse_unsupported(model.graph, CONVERTERS, source)
    try:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception as error:  # the checker's InferenceError: the model itself is inconsistent
        raise RlxError(f"ONNX shape inference failed on {source}: {error}") from None
    graph_name = name or model.graph.name or (Path(source).stem if source != "the model" else "model")
    with _invalid_models_refused(model, source):
        return _import_inferred(inferred, batch_dim, batch_size, graph_name)


@contextmanager
def _invalid_models_refused(model: onnx.ModelProto, source: str) -> Iterator[None]:
    """An unexpected exception while converting is a bug in rlxir, unless the model is
    itself invalid (attributes that contradict each other or the inputs' shapes, which the
    lenient shape inference above lets through): ONNX's strict shape inference decides, and
    an invalid model is refused with its finding."""
    try:
        yield
    except RlxError:
        raise
    except Exception:
        try:
            onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
        except Exception as finding:  # onnx's InferenceError and the checker's errors
            raise RlxError(f"{source} is not a valid ONNX model: {str(finding).strip().splitlines()[0]}",
                           expected="a model that ONNX's strict shape inference accepts") from None
        raise


def _import_inferred(inferred: onnx.ModelProto, batch_dim: str, batch_size: int | None,
                     graph_name: str) -> ImportedGraph:
    try:
        imported = _convert(inferred, batch_dim, batch_size, graph_name, symbolic_batch=True)
    except RlxError as error:
        if batch_size is not None or not _static_leading_dim(inferred):
            raise
        # The model fixes its batch, and some op does not let it vary (a broadcast against a
        # fixed dim of the same size, a Shape read as data): import it as the fixed size.
        imported = _convert(inferred, batch_dim, batch_size, graph_name, symbolic_batch=False)
        note = (f"the batch stays static ({_static_leading_dim(inferred)}), since it cannot be the symbol "
                f"{batch_dim}: {error.message}")
        return attrs.evolve(imported, notes=(*imported.notes, note))
    if batch_size is not None and batch_dim in imported.graph.symbols:
        # A static batch was imported as the symbol (so constant reshape targets follow
        # it); now it takes the asked size.
        return attrs.evolve(imported, graph=imported.graph.bind({batch_dim: batch_size}))
    return imported


def _convert(inferred: onnx.ModelProto, batch_dim: str, batch_size: int | None, graph_name: str,
             symbolic_batch: bool) -> ImportedGraph:
    context = OnnxContext(inferred, batch_dim, batch_size, graph_name, symbolic_batch=symbolic_batch)
    for node in inferred.graph.node:
        context.convert(node, CONVERTERS)
    outputs = {output.name: context.value(output.name) for output in inferred.graph.output}
    for onnx_name, value in outputs.items():
        context.check_type(onnx_name, value)
    return context.builder.finish(outputs.values(), context.input_names, outputs)


def _static_leading_dim(model: onnx.ModelProto) -> int | None:
    """The static leading dim of the first graph input that has dims (the batch the model
    fixes, as `OnnxContext` reads it), or None."""
    weights = {tensor.name for tensor in model.graph.initializer}
    for info in model.graph.input:
        dims = info.type.tensor_type.shape.dim
        if info.name in weights or not dims:
            continue
        return dims[0].dim_value if dims[0].HasField("dim_value") and dims[0].dim_value > 0 else None
    return None


def refuse_unsupported(graph: onnx.GraphProto, converters: Mapping, source: str) -> None:
    """One error listing every op type without a converter (with its count), or nothing."""
    missing = Counter(op_key(node) for node in graph.node if op_key(node) not in converters)
    if not missing:
        return
    listed = ", ".join(f"{op} x{count}" for op, count in sorted(missing.items()))
    kinds = len(missing)
    raise UnsupportedModel(f"cannot import {source}: {kinds} ONNX op type{'s' if kinds > 1 else ''} "
                           f"{'have' if kinds > 1 else 'has'} no rlx mapping: {listed}",
                           expected="ops rlxir imports: " + ", ".join(sorted(converters)))


