"""rlxir: a graph-IR compiler pass framework that answers whether a model fits a device.

Public API (the CLI is a thin layer over it):

- `parse`, `parse_file` -> `Module`; `print_graph`, `print_module`; `verify`
- `Graph`, `Module`, `TensorType`, `DType`, the op registry (`register_op`, `OpDef`, ...)
- `RlxError` and its located subclasses
"""

from rlxir.dtypes import DType
from rlxir.errors import IRTypeError, Location, ParseError, RlxError, UnboundSymbolError, VerifyError
from rlxir.graph import Graph, GraphError, Module
from rlxir.interpreter import interpret
from rlxir.ops import AttrSpec, OpDef, ShapeError, get_op, register_annotation, register_op, registered_ops
from rlxir.parser import parse, parse_file
from rlxir.printer import print_graph, print_module
from rlxir.symbolic import Expr, format_dim, parse_dim
from rlxir.types import TensorType
from rlxir.verifier import find_errors, verify

__version__ = "0.1.0"

__all__ = [
    "AttrSpec", "DType", "Expr", "Graph", "GraphError", "IRTypeError", "Location", "Module", "OpDef", "ParseError",
    "RlxError", "ShapeError", "TensorType", "UnboundSymbolError", "VerifyError", "__version__", "find_errors",
    "format_dim", "get_op", "interpret", "parse", "parse_dim", "parse_file", "print_graph", "print_module", "register_annotation",
    "register_op", "registered_ops", "verify",
]
