"""The PyTorch importer's one converter table, and the values every converter speaks.

A converter is ``convert(ctx, node, args, kwargs) -> result``: `args` and `kwargs` are the
fx node's arguments with every node replaced by what it is to the importer (an rlx value
name, a `Static` tensor, a Python number or dim, a list of those); the result is the same
kind of thing (lists stand for ops with several results). A converter module registers
each converter with `converter` (or `register`) when it is imported; the route module
(`rlxir.importers.torch`) imports every converter module and reads `CONVERTERS`. This
module imports no other module of the PyTorch importer, so the table has no import circle.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel

TORCH_DTYPES = {
    torch.float32: DType.f32, torch.float64: DType.f64, torch.float16: DType.f16, torch.bfloat16: DType.bf16,
    torch.int64: DType.i64, torch.int32: DType.i32, torch.int16: DType.i16, torch.int8: DType.i8,
    torch.uint8: DType.u8, torch.uint64: DType.u64, torch.bool: DType.bool,
    torch.complex64: DType.c64,
}
RLX_TO_TORCH = {dtype: torch_dtype for torch_dtype, dtype in TORCH_DTYPES.items()}

CONVERTERS: dict[str, Callable] = {}
"""op key (`op_key`) -> converter; every op the PyTorch importer accepts."""

NEVER_FOLD: set[str] = set()
"""Op keys the importer never evaluates with PyTorch, even on static operands (they compute
nothing, pick from lists, or are random)."""


def register(key: str, convert: Callable, fold: bool = True) -> Callable:
    """Put `convert` in the table under `key`; a key registered twice is an error (two
    converters for one op would leave the table's answer to import order)."""
    if key in CONVERTERS:
        raise ValueError(f"the PyTorch op {key} has two converters: {CONVERTERS[key].__name__} and "
                         f"{convert.__name__}")
    CONVERTERS[key] = convert
    if not fold:
        NEVER_FOLD.add(key)
    return convert


def converter(*keys: str, fold: bool = True) -> Callable[[Callable], Callable]:
    """Decorator: register the function as the converter of each op key in `keys`."""
    def decorate(convert: Callable) -> Callable:
        for key in keys:
            register(key, convert, fold)
        return convert

    return decorate


def op_key(target) -> str:
    """``aten.linear`` for every overload of aten::linear; ``operator.mul`` for Python's."""
    if isinstance(target, torch._ops.OpOverload):
        return target.overloadpacket._qualified_op_name.replace("::", ".")
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__name__", str(target))
    return f"operator.{name}" if module in ("_operator", "operator") else f"{module}.{name}"


def torch_dtype(dtype: torch.dtype) -> DType:
    """The IR's dtype of a torch dtype; refused when the IR has none."""
    found = TORCH_DTYPES.get(dtype)
    if found is None:
        raise UnsupportedModel(f"the IR has no dtype for {dtype}", expected=", ".join(map(str, TORCH_DTYPES)))
    return found


class Static:
    """A tensor known while importing (a weight, or the result of ops on known values).
    A weight of a module built under ``FakeTensorMode`` has a shape and no values."""

    __slots__ = ("node", "tensor", "weight", "fake")

    def __init__(self, node: str, tensor: torch.Tensor, weight: bool):
        from torch._subclasses.fake_tensor import is_fake

        self.node, self.tensor, self.weight = node, tensor, weight
        self.fake = is_fake(tensor)


__all__ = ["CONVERTERS", "NEVER_FOLD", "RLX_TO_TORCH", "Static", "TORCH_DTYPES", "converter", "op_key", "register",
           "torch_dtype"]
