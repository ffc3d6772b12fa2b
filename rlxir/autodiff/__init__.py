"""Differentiation: the backward graph of a loss (backward.py, with its per-op rules in
rules.py and vjp.py and the backward ops in backward_ops.py), and training on top of it
(training.py, optimizers.py, arena_breakdown.py)."""
