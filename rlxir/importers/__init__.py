"""Importers: foreign models as rlx graphs.

- `rlxir.importers.onnx.import_onnx` (extra ``onnx``): an ONNX model file or ``ModelProto``.
- `rlxir.importers.torch.import_torch` (extra ``torch``): an ``nn.Module`` traced with
  ``torch.export``.

Both return an `ImportedGraph`: the verified graph, the values of its params, and the
model's input and output names mapped to value names. This package imports neither
``onnx`` nor ``torch``; each importer module does, so a missing extra is an
``ImportError`` only when that importer is used.
"""

from rlxir.importers.builder import LITERAL_LIMIT, ImportedGraph, UnsupportedModel, sanitize_name

__all__ = ["LITERAL_LIMIT", "ImportedGraph", "UnsupportedModel", "sanitize_name"]
