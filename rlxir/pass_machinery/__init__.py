"""Running passes: the pass base class and registry (pass_base.py), the instruments hooked
around each pass (instruments.py), pipelines from text and the pass runner (pipeline.py),
and the greedy pattern rewriter (rewriter.py). The passes themselves live in passes/
(installed as rlxir.passes) and are found by name."""
