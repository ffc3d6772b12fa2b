"""Targets: one module per backend (import name rlxir.backends)."""
