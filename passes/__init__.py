"""Passes: one module per pass (import name rlxir.passes)."""
