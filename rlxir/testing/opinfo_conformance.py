"""PyTorch's OpInfo database, run through the PyTorch importer and the reference interpreter.

PyTorch describes its operators in ``torch.testing._internal.common_methods_invocations.op_db``:
one `OpInfo` per operator variant, each with a function (``op.op``) and a generator of sample
arguments. This module runs a sample the way a user's module runs: the call wrapped in a
small ``nn.Module``, exported by ``torch.export`` (static shapes: nothing declared dynamic, so
samples with dims of size 0 or 1 keep them), imported by `import_torch`, run by
`rlxir.interpret`, and compared with eager PyTorch on the same arguments.

Each sample ends as one of:

- ``pass``: every output has eager PyTorch's shape and values (within `tolerances`);
- ``refused``: the importer or the interpreter said why with an `RlxError`, a located message;
- ``mismatch``: the graph ran but an output differs;
- ``internal``: any other exception (a bug in rlxir);
- ``no export``: ``torch.export`` could not export the wrapped call, or the call returns no
  tensor; such samples are outside the measure.

Samples are float32 on CPU, at most `SAMPLES_PER_OP` per OpInfo. Tensor arguments become
the module's forward arguments when they are floating point (values the graph reads at run
time) and its buffers otherwise (integer indices, boolean masks: values a model holds),
every other argument a constant of the call.
"""

from __future__ import annotations

import math
import traceback
import warnings
from collections.abc import Iterator

import attrs
import numpy as np

SAMPLES_PER_OP = 3
"""The samples taken from each OpInfo's generator (the first ones)."""

RTOL, ATOL = 1.3e-6, 1e-5
"""The tolerance of most ops: float32's, as ``torch.testing.assert_close`` uses."""

LOOSE_RTOL, LOOSE_ATOL = 1e-5, 1e-5
"""The tolerance of ops whose value goes through a transcendental function, a long sum or a
decomposition into several rounding steps (NumPy's and PyTorch's kernels round differently)."""

LOOSE_OPS = ("acos", "acosh", "asin", "asinh", "atan", "atanh", "atan2", "cosh", "sinh", "tan", "tanh", "erf",
             "erfc", "erfinv", "exp", "expm1", "exp2", "log", "log10", "log1p", "log2", "logit", "logaddexp",
             "logsumexp", "lgamma", "digamma", "pow", "float_power", "sigmoid", "softmax", "log_softmax", "norm",
             "gelu", "silu", "mish", "elu", "selu", "celu", "softplus", "cumprod", "prod", "var", "std", "sinc",
             "layer_norm", "rms_norm", "group_norm", "batch_norm", "instance_norm", "local_response_norm",
             "matmul", "mm", "bmm", "addmm", "addmv", "addbmm", "baddbmm", "linear", "conv", "einsum",
             "cross_entropy", "nll_loss", "kl_div", "scaled_dot_product_attention", "cosine_similarity",
             "pdist", "cdist", "dist", "renorm", "normalize", "mean", "sum", "cumsum", "avg_pool", "interpolate",
             "upsample", "rsqrt", "sqrt", "reciprocal", "div", "true_divide", "hypot", "polar", "tensordot",
             "inner", "outer", "dot", "vdot", "mv", "trace", "pairwise_distance", "triplet_margin", "loss",
             "xlogy", "special", "sin", "cos", "nan_to_num", "lerp", "addcdiv", "addcmul", "hardswish",
             "glu", "logsigmoid", "hardsigmoid", "tanhshrink", "softsign", "var_mean", "std_mean", "frexp",
             "ldexp", "rad2deg", "deg2rad", "cummax", "cummin", "logcumsumexp", "nansum", "nanmean",
             "adaptive_avg_pool", "pixel", "bilinear", "grid_sample", "affine_grid", "vector_norm",
             "matrix_norm", "multi_margin", "margin_ranking", "hinge", "poisson", "gaussian", "smooth_l1",
             "huber", "binary_cross_entropy", "soft_margin", "multilabel", "prelu", "rrelu", "leaky_relu")
"""OpInfo names holding any of these words use `LOOSE_RTOL` / `LOOSE_ATOL`."""

SPECIAL_RTOL, SPECIAL_ATOL = 1e-4, 1e-5
"""Special functions (gamma family, Bessel, erfinv): PyTorch's float32 kernels are accurate to
about 2e-5 relative near poles (polygamma(1, -7.9506) is 412.7526 in float32, 412.74422 in
float64); the importer computes them in f64."""

SPECIAL_OPS = ("gamma", "special.", "erfinv", "i0", "erfcx")

ATTENTION_RTOL, ATTENTION_ATOL = 1e-4, 1e-5
"""Attention: PyTorch's CPU kernel is a blocked online softmax (its running maximum and sums
round differently from one softmax over the whole row)."""


UNINITIALIZED = frozenset({"empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided",
                           "empty_permuted"})
"""OpInfos whose result is uninitialized memory in PyTorch: only shape and dtype compare."""


@attrs.frozen
class Sample:
    """One sample of one OpInfo: the call's arguments as PyTorch's generator gave them."""

    op: object  # the OpInfo
    index: int
    input: object
    args: tuple
    kwargs: dict

    @property
    def name(self) -> str:
        variant = f".{self.op.variant_test_name}" if self.op.variant_test_name else ""
        return f"{self.op.name}{variant}[{self.index}]"


@attrs.frozen
class Outcome:
    name: str
    status: str  # pass, refused, mismatch, internal, no export
    detail: str = ""


def opinfos(substring: str = "") -> list:
    """Every OpInfo that supports float32 on CPU whose name contains `substring`."""
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    return [op for op in op_db if substring in op_name(op) and torch.float32 in op.supported_dtypes("cpu")]


def op_name(op) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def samples(op, count: int = SAMPLES_PER_OP) -> list[Sample]:
    """The first `count` float32 CPU samples of `op` (fewer when it has fewer)."""
    import torch

    found = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            for index, sample in enumerate(op.sample_inputs("cpu", torch.float32)):
                if index >= count:
                    break
                found.append(Sample(op, index, sample.input, tuple(sample.args), dict(sample.kwargs)))
        except Exception:  # a generator PyTorch's own build cannot run (a missing optional library)
            pass
    return found


def core_aten_ops() -> frozenset[str]:
    """Every ATen op packet (``aten.add``) with an overload tagged ``torch.Tag.core``."""
    import torch

    found = set()
    for name in dir(torch.ops.aten):
        packet = getattr(torch.ops.aten, name, None)
        if not isinstance(packet, torch._ops.OpOverloadPacket):
            continue
        for overload in packet.overloads():
            if torch.Tag.core in getattr(packet, overload).tags:
                found.add(f"aten.{name}")
                break
    return frozenset(found)


def is_core_aten(op, core: frozenset[str]) -> bool:
    """Whether the OpInfo's ATen op (``op.aten_name``) is a Core ATen op."""
    return f"aten.{op.aten_name}" in core


def tolerances(op) -> tuple[float, float]:
    name = op_name(op)
    if "attention" in name:
        return ATTENTION_RTOL, ATTENTION_ATOL
    if any(word in name for word in SPECIAL_OPS):
        return SPECIAL_RTOL, SPECIAL_ATOL
    if any(word in name for word in LOOSE_OPS):
        return LOOSE_RTOL, LOOSE_ATOL
    return RTOL, ATOL


class Call:
    """The call of one sample as a module: `forward` takes the floating-point tensors, the
    other tensors are buffers, every other argument is a constant."""

    def __init__(self, sample: Sample):
        import torch.utils._pytree as pytree

        leaves, self.spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
        self.leaves = leaves
        self.arguments = [index for index, leaf in enumerate(leaves) if _runs(leaf)]
        self.buffers = [index for index, leaf in enumerate(leaves) if _is_tensor(leaf) and not _runs(leaf)]
        self.function = sample.op.op

    def module(self):
        import torch

        call = self

        class OpCall(torch.nn.Module):
            def __init__(self):
                super().__init__()
                for index in call.buffers:
                    self.register_buffer(f"b{index}", call.leaves[index].clone())

            def forward(self, *tensors):
                return call.apply(tensors, {index: getattr(self, f"b{index}") for index in call.buffers})

        return OpCall().eval()

    def example(self) -> tuple:
        return tuple(self.leaves[index].clone() for index in self.arguments)

    def apply(self, tensors, buffers):
        import torch.utils._pytree as pytree

        leaves = list(self.leaves)
        for index, tensor in zip(self.arguments, tensors):
            leaves[index] = tensor
        for index, tensor in buffers.items():
            leaves[index] = tensor
        input_, args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return self.function(input_, *args, **kwargs)


def _is_tensor(leaf) -> bool:
    import torch

    return isinstance(leaf, torch.Tensor)


def _runs(leaf) -> bool:
    return _is_tensor(leaf) and leaf.is_floating_point()


def run_sample(sample: Sample) -> Outcome:
    """Export, import and interpret one sample; compare with eager PyTorch."""
    import torch
    import torch.utils._pytree as pytree

    from rlxir.errors import RlxError

    call = Call(sample)
    module = call.module()
    example = call.example()
    try:
        with torch.no_grad():
            expected = module(*example)
        program = torch.export.export(module, example, strict=False)
    except Exception as error:  # an op or sample torch.export (or PyTorch itself) cannot run
        return Outcome(sample.name, "no export", _first_line(error))
    outputs = pytree.tree_leaves(expected)
    if not outputs or not all(_is_tensor(item) for item in outputs):
        return Outcome(sample.name, "no export", "the call returns no tensor, or a value that is not one")
    try:
        have = _imported_outputs(program, sample.name, example, len(outputs))
        outcome = _compare(sample, have, outputs)
        if outcome.status == "mismatch":
            outcome = _against_float64(sample, call, module, example, have, outputs) or outcome
        return outcome
    except RlxError as error:
        return Outcome(sample.name, "refused", _first_line(error))
    except Exception as error:  # anything else is a bug in rlxir
        return Outcome(sample.name, "internal", _internal(error))


def _imported_outputs(program, name: str, example: tuple, count: int) -> list[np.ndarray]:
    """The graph's last `count` outputs on the example: the call's results (a program that
    writes into an argument, a batch norm's running statistics, lists those writes first)."""
    from rlxir.importers.torch import import_program
    from rlxir.interpreter import interpret

    imported = import_program(program, name)
    feeds = {value: _array(tensor) for value, tensor in zip(imported.inputs.values(), example)}
    results = interpret(imported.graph, feeds, imported.params)
    return [results[value] for value in imported.graph.outputs[len(imported.graph.outputs) - count:]]


def _array(tensor) -> np.ndarray:
    """A tensor's values as NumPy (bf16 as float32, as the interpreter holds it; complex32,
    which NumPy has no dtype for, as complex64, exactly)."""
    import torch

    tensor = tensor.detach().cpu()
    wider = {torch.bfloat16: torch.float32, torch.complex32: torch.complex64}.get(tensor.dtype, tensor.dtype)
    return tensor.to(wider).resolve_conj().resolve_neg().numpy()


def _compare(sample: Sample, have: list[np.ndarray], want: list) -> Outcome:
    if len(have) != len(want):
        return Outcome(sample.name, "mismatch", f"{len(have)} outputs, eager PyTorch gives {len(want)}")
    rtol, atol = tolerances(sample.op)
    for index, (got, tensor) in enumerate(zip(have, want)):
        expected = _as_pairs(_array(tensor), np.asarray(got))
        if sample.op.name in UNINITIALIZED:
            got, expected = np.zeros_like(got), np.zeros_like(expected)
        problem = _difference(np.asarray(got), expected, rtol, atol)
        if problem:
            return Outcome(sample.name, "mismatch", f"output {index}: {problem}")
    return Outcome(sample.name, "pass")


def _against_float64(sample: Sample, call, module, example: tuple, have: list, want: list) -> Outcome | None:
    """A pass when the imported outputs agree with eager PyTorch run in float64 (arguments and
    buffers cast up) and eager float32 itself does not: float32 PyTorch is the one that is
    off (``matrix_exp`` scales and squares in float32). None when that is not the case."""
    import torch
    import torch.utils._pytree as pytree

    try:
        with torch.no_grad():
            buffers = {index: _up(getattr(module, f"b{index}")) for index in call.buffers}
            truth = pytree.tree_leaves(call.apply(tuple(_up(tensor) for tensor in example), buffers))
    except Exception:  # an op without a float64 kernel: the float32 comparison stands
        return None
    if len(truth) != len(have) or not all(_is_tensor(item) for item in truth):
        return None
    rtol, atol = tolerances(sample.op)
    for got, precise in zip(have, truth):
        expected = _as_pairs(_array(precise), np.asarray(got))
        if _difference(np.asarray(got), expected.astype(np.asarray(got).dtype), rtol, atol):
            return None
    wrong = next(index for index, (got, eager) in enumerate(zip(have, want))
                 if _difference(np.asarray(got), _as_pairs(_array(eager), np.asarray(got)), rtol, atol))
    return Outcome(sample.name, "pass", f"output {wrong} agrees with eager float64, which eager float32 does not")


def _up(tensor):
    """A floating-point tensor in float64 (complex in complex128); others as they are."""
    import torch

    if tensor.is_complex():
        return tensor.to(torch.complex128)
    return tensor.double() if tensor.is_floating_point() else tensor


def _as_pairs(expected: np.ndarray, got: np.ndarray) -> np.ndarray:
    """A complex eager output as the importer carries complex values (its real view: a
    trailing dim of 2, real and imaginary parts) when the imported output is that real
    pair; otherwise as it is (a complex output compared as complex)."""
    if not np.iscomplexobj(expected) or np.iscomplexobj(got) or got.shape != expected.shape + (2,):
        return expected
    return np.stack([expected.real, expected.imag], axis=-1)


def _difference(have: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str:
    """What differs between two outputs ("" when they agree): shape, dtype kind, values."""
    if have.shape != want.shape:
        return f"shape {list(have.shape)}, eager PyTorch {list(want.shape)}"
    if want.dtype == np.bool_ or want.dtype.kind in "iu":
        wrong = have != want
    else:
        have64, want64 = have.astype(np.float64), want.astype(np.float64)
        close = np.isclose(have64, want64, rtol=rtol, atol=atol, equal_nan=True)
        wrong = ~close
    if not wrong.any():
        return ""
    at = tuple(int(index) for index in np.argwhere(wrong)[0])
    return (f"{int(wrong.sum())} of {want.size} values differ (rtol {rtol}, atol {atol}); "
            f"at {list(at)}: {have[at]!r}, eager PyTorch {want[at]!r}")


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"[:300]


def _internal(error: BaseException) -> str:
    frame = traceback.extract_tb(error.__traceback__)[-1]
    return f"{_first_line(error)} ({frame.filename.rsplit('/', 1)[-1]}:{frame.lineno})"


def run_all(ops) -> Iterator[tuple[Sample, Outcome]]:
    for op in ops:
        for sample in samples(op):
            yield sample, run_sample(sample)


def share(passed: int, total: int) -> float:
    return 100.0 * passed / total if total else math.nan


__all__ = ["Outcome", "Sample", "core_aten_ops", "is_core_aten", "opinfos", "run_all", "run_sample", "samples",
           "tolerances"]
