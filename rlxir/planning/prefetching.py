"""Cache hints for the planner's compiled loops (rlxir/planning/kernels.py): a prefetch of
one array element, for loops whose next reads are known before the current step needs its
own. A hint changes no value a loop computes, only when memory arrives. Importing this
module imports Numba (and llvmlite, which comes with it). With Numba's JIT turned off
(``NUMBA_DISABLE_JIT=1``, for debugging) the loops run as Python and the hints do nothing."""

from __future__ import annotations

from typing import Any

import llvmlite.ir as lir
from numba.core import cgutils, config, types
from numba.extending import intrinsic

# llvm.prefetch(address, rw = read, locality = keep in every cache level, cache = data)
_READ, _KEEP, _DATA = 0, 3, 1


@intrinsic
def prefetch(typing_context: Any, array: Any, index: Any) -> Any:
    """Ask for the cache line of ``array[index]`` (a 1-D array; `index` in its bounds)."""
    signature = types.void(array, index)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        position = context.cast(builder, args[1], sig.args[1], types.intp)
        view = context.make_array(sig.args[0])(context, builder, args[0])
        pointer = cgutils.get_item_pointer(context, builder, sig.args[0], view, [position], wraparound=False)
        byte_pointer = builder.bitcast(pointer, lir.IntType(8).as_pointer())
        i32 = lir.IntType(32)
        function = cgutils.get_or_insert_function(
            builder.module, lir.FunctionType(lir.VoidType(), [byte_pointer.type, i32, i32, i32]), "llvm.prefetch.p0")
        builder.call(function, [byte_pointer, lir.Constant(i32, _READ), lir.Constant(i32, _KEEP),
                                lir.Constant(i32, _DATA)])
        return context.get_dummy_value()

    return signature, codegen


def _no_hint(array: Any, index: int) -> None:
    """What a hint does in loops run as Python: nothing (an intrinsic cannot run there)."""


if config.DISABLE_JIT:
    prefetch = _no_hint  # the loops call this name either way
