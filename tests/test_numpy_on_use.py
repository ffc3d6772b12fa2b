"""NumPy is imported by the first use of it: text-only commands never load it, and a module
that names it through `numpy_on_use` holds NumPy itself once it has been used."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout


def test_a_check_of_a_text_never_imports_numpy():
    probe = ("import sys; from rlxir.cli import main; code = main(['check', 'examples/mlp.rlx']); "
             "print(code, 'numpy' in sys.modules, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stderr.split()[-2:] == ["0", "False"]


def test_the_first_use_puts_numpy_itself_in_every_waiting_module():
    probe = ("import sys; import rlxir.dtypes as d, rlxir.ops.reference as r; from rlxir.numpy_on_use import _STAND_IN; "
             "before = (d.np is _STAND_IN, r.np is _STAND_IN, 'numpy' in sys.modules); "
             "kind = d.DType.f16.numpy; import numpy; "
             "print(before, d.np is numpy, r.np is numpy, str(kind))")
    assert _run(probe).split() == ["(True,", "True,", "False)", "True", "True", "float16"]


def test_tables_of_numpy_functions_call_numpy():
    probe = ("from rlxir.ops.reference import BINARY_FUNCTIONS, UNARY_FUNCTIONS; import numpy as np; "
             "x = np.array([-2.0, 3.0]); "
             "print(UNARY_FUNCTIONS['abs'](x).tolist(), BINARY_FUNCTIONS['maximum'](x, np.zeros(2)).tolist(), "
             "UNARY_FUNCTIONS['neg'].__name__)")
    assert _run(probe).split() == ["[2.0,", "3.0]", "[0.0,", "3.0]", "negative"]
