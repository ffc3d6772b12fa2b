"""NumPy, imported the first time a module that needs it uses it.

The op registry and the dtypes carry NumPy code (the interpreter's reference kernels, a
dtype's NumPy type) that commands which only read and check text never run, and NumPy's
import is about 0.1 s of the 0.35 s every `rlxir` process pays before its work. Such a
module names NumPy through `numpy_on_use`:

    if TYPE_CHECKING:
        import numpy as np
    else:
        np = numpy_on_use(__name__)

and uses ``np`` only inside functions (nothing at module level reads an attribute of it;
a table of NumPy functions holds `numpy_function` of their names instead).
The first attribute read imports NumPy and puts the module itself in place of the
stand-in in every module that asked for one, so from then on ``np`` is NumPy there, with
no cost per use.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

_WAITING: list[str] = []  # modules whose `np` is still the stand-in


class _NumpyOnUse:
    """What ``np`` is in a module until NumPy is first used there (or anywhere)."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        import numpy

        for module_name in _WAITING:
            module = sys.modules.get(module_name)
            if module is not None and getattr(module, "np", None) is _STAND_IN:
                module.np = numpy
        _WAITING.clear()
        return getattr(numpy, name)

    def __repr__(self) -> str:
        return "<numpy, imported on first use>"


_STAND_IN = _NumpyOnUse()


def numpy_on_use(module_name: str) -> Any:
    """The ``np`` of module `module_name`: NumPy itself where it is imported already, else a
    stand-in that imports it on the first attribute read (see the module's docstring)."""
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        return numpy
    _WAITING.append(module_name)
    return _STAND_IN


def numpy_function(name: str) -> Callable[..., Any]:
    """A function that calls NumPy's `name` (a ufunc or function of the top-level module),
    looked up at the call: for tables of NumPy functions built when a module is imported."""

    def call(*args: Any, **keywords: Any) -> Any:
        import numpy  # a lookup in sys.modules once NumPy is in

        return getattr(numpy, name)(*args, **keywords)

    call.__name__ = name
    return call
