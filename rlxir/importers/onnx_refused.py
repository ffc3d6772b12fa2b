"""ONNX ops the IR cannot hold, each refused at its node with the reason.

Every default-domain op of the opsets the importer reads either has a converter or is
listed here, so a model that uses one is told *why* it does not import, at the node that
uses it, rather than only that the op has no mapping:

- **Data-dependent shapes**: NonMaxSuppression. Every IR value has a shape fixed while
  importing (at most symbolic in the graph's dims); its output length is a count of the
  data. (NonZero, Unique and Compress have converters: of constants they are evaluated
  while importing, of run-time tensors they refuse for this same reason.)
- **Random numbers**: RandomNormal, RandomUniform, RandomNormalLike, RandomUniformLike,
  Bernoulli, Multinomial. The IR has no random source, and a sample drawn while
  importing would freeze one draw into the graph as a constant.
- **Strings**: StringNormalizer, StringConcat, StringSplit, RegexFullMatch; **encoded
  images**: ImageDecoder. The IR has no string or byte dtype (and a decoded image's shape
  is in its bytes).
- Of the ``ai.onnx.ml`` domain, **maps**: CastMap, DictVectorizer, ZipMap (the IR has only
  tensors; ZipMap ends scikit-learn classifiers exported with their probabilities as maps),
  and **strings**: CategoryMapper.
"""

from __future__ import annotations

from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_registry import register

DATA_SHAPED = "its output's shape depends on the values of its input ({what}), but every IR value has a shape " \
              "fixed while importing"
RANDOM = "it draws random numbers, which the IR has no op for (a sample drawn while importing would freeze one draw " \
         "into the graph)"
STRINGS = "it works on strings, which the IR has no dtype for"

REASONS = {
    "NonMaxSuppression": (DATA_SHAPED.format(what="the number of boxes it keeps"),
                          "a model that ends before NonMaxSuppression (run it on the outputs)"),
    "RandomNormal": (RANDOM, "a model without random ops (or their samples fed as inputs)"),
    "RandomUniform": (RANDOM, "a model without random ops (or their samples fed as inputs)"),
    "RandomNormalLike": (RANDOM, "a model without random ops (or their samples fed as inputs)"),
    "RandomUniformLike": (RANDOM, "a model without random ops (or their samples fed as inputs)"),
    "Bernoulli": (RANDOM, "a model without random ops (or their samples fed as inputs)"),
    "Multinomial": (RANDOM, "a model without random ops (or their samples fed as inputs)"),
    "StringNormalizer": (STRINGS, "a model that takes token ids, not text"),
    "StringConcat": (STRINGS, "a model that takes token ids, not text"),
    "StringSplit": (STRINGS, "a model that takes token ids, not text"),
    "RegexFullMatch": (STRINGS, "a model that takes token ids, not text"),
    "ImageDecoder": ("it decodes encoded image bytes (JPEG, PNG, ...), which the IR has no dtype for, into a shape "
                     "those bytes decide", "a model that takes decoded pixels"),
}
"""Op type -> (why the IR cannot hold it, what a model should do instead)."""

MAPS = "it works on maps (or sequences of maps), which the IR has no type for: its values are tensors"
ML_REASONS = {
    "CastMap": (MAPS, "a model that takes its features as a tensor"),
    "DictVectorizer": (MAPS, "a model that takes its features as a tensor"),
    "ZipMap": (MAPS, "the classifier's probabilities as a tensor (scikit-learn's converter: options "
                     "{'zipmap': False})"),
    "CategoryMapper": (STRINGS, "categories given as integers"),
}
"""The same for ``ai.onnx.ml`` op types."""


def refuse(ctx, node, attrs):
    """Refuse `node` with its op type's reason (a converter that never converts)."""
    reason, expected = (ML_REASONS if node.domain == "ai.onnx.ml" else REASONS)[node.op_type]
    raise UnsupportedModel(f"{node.op_type} cannot be imported: {reason}", expected=expected)


register(dict.fromkeys(REASONS, refuse))
register(dict.fromkeys((f"ai.onnx.ml.{op_type}" for op_type in ML_REASONS), refuse))
