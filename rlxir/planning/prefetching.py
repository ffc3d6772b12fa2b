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


def _emit_prefetch(context: Any, builder: Any, array_type: Any, array: Any, indices: list[Any]) -> None:
    view = context.make_array(array_type)(context, builder, array)
    pointer = cgutils.get_item_pointer(context, builder, array_type, view, indices, wraparound=False)
    byte_pointer = builder.bitcast(pointer, lir.IntType(8).as_pointer())
    i32 = lir.IntType(32)
    signature = lir.FunctionType(lir.VoidType(), [byte_pointer.type, i32, i32, i32])
    function = cgutils.get_or_insert_function(builder.module, signature, "llvm.prefetch.p0")
    builder.call(function, [byte_pointer, lir.Constant(i32, _READ), lir.Constant(i32, _KEEP), lir.Constant(i32, _DATA)])


@intrinsic
def prefetch(typing_context: Any, array: Any, index: Any) -> Any:
    """Ask for the cache line of ``array[index]`` (a 1-D array; `index` in its bounds)."""
    signature = types.void(array, index)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        position = context.cast(builder, args[1], sig.args[1], types.intp)
        _emit_prefetch(context, builder, sig.args[0], args[0], [position])
        return context.get_dummy_value()

    return signature, codegen


@intrinsic
def prefetch_row(typing_context: Any, array: Any, row: Any) -> Any:
    """Ask for the cache line of ``array[row, 0]`` (a 2-D array; `row` in its bounds)."""
    signature = types.void(array, row)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        position = context.cast(builder, args[1], sig.args[1], types.intp)
        _emit_prefetch(context, builder, sig.args[0], args[0], [position, context.get_constant(types.intp, 0)])
        return context.get_dummy_value()

    return signature, codegen


def _no_hint(array: Any, index: int) -> None:
    """What a hint does in loops run as Python: nothing (an intrinsic cannot run there)."""


if config.DISABLE_JIT:
    prefetch = prefetch_row = _no_hint  # the loops call these names either way
