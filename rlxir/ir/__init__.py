"""The language and the graph: the Graph and Module, the .rlx parser and its syntax errors,
the printer, the verifier, a graph's interface, and the default-fill annotations.

Imports the op layer (rlxir.ops) and the base modules (types, dtypes, symbolic, errors)."""
