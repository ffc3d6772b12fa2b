"""One path from graph to plan to verdict: compile (compile.py), what an arena may use on a
device (budget.py), the batch search of fit (fit.py, on the fork pool of workers.py), the
memory plan and its picture (memory_plan.py, plan_plot.py), buffer lifetimes (lifetimes.py)
and params from .npy files (params.py)."""
