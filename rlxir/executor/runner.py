"""Run a compiled graph inside its planned arena (docs/execution.md).

`run_in_arena` takes a `CompileResult` (or a `TrainingResult`: its training step) and runs
the target's final graph in schedule order with one arena of exactly `arena_bytes`:

1. inputs, params and consts are written into their slots at their step;
2. each op reads its operands from their slots (views read their root's bytes at the
   view's offset; nothing is copied for a view) and its kernel writes the result into
   the op's slot, with the op's workspace slot as scratch;
3. after each step the buffers whose lifetime ended are poisoned (0xFF bytes), so a later
   read of dead memory — a lifetime too short, two live buffers sharing bytes — turns into
   NaN or a wrong answer instead of passing silently; a float operand that still holds the
   poison pattern when it is read is recorded as a poisoned read.

Side buffers are separate allocations of their declared sizes. What kernels hold beyond
the arena and the side buffers is measured (`rlxir.executor.meters`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from rlxir.dtypes import DType
from rlxir.errors import RlxError
from rlxir.executor.arena import Arena, ArenaLayout, ExecutionError, allocate
from rlxir.executor.kernels import KERNELS, Kernel, finish_dtype, run_reference
from rlxir.executor.meters import DeviceMeter, HostMeter
from rlxir.executor.storage import StorageLoss, decode, encode_into, is_direct
from rlxir.executor.tiling import TILE, operand_tile, tiles, whole_from
from rlxir.ir.graph import Graph
from rlxir.interpreter import _checked_feeds, const_array, random_fill
from rlxir.autodiff.training import TrainingResult

if TYPE_CHECKING:
    from rlxir.compiler.compile import CompileResult

DEVICES = ("cpu", "gpu")
Array = Any
"""A NumPy array, or a CuPy one on a GPU: whatever the run's array module makes."""


@attrs.frozen
class ArenaRun:
    """What one run in the planned arena produced and measured."""

    outputs: dict
    target: str
    device: str
    sizing: str
    arena_bytes: int
    side_buffer_bytes: int
    outside_peak_bytes: int  # held beyond the arena and the side buffers, at the peak
    poisoned_reads: tuple  # (node, operand) pairs that read the poison pattern
    storage_losses: tuple  # StorageLoss per value the storage changed
    reference_ops: tuple  # ops that ran through the host reference instead of a kernel
    steps: int
    seconds: float
    poisoned_bytes: int
    device_used_peak: int | None = None  # NVML: bytes in use on the device at the peak (GPU runs)
    device_used_before: int | None = None  # NVML: bytes in use before the arena was allocated
    outside_largest_bytes: int | None = None  # GPU runs: the largest single allocation outside the arena

    def summary(self) -> dict:
        data = attrs.asdict(self, recurse=False)
        data.pop("outputs")
        data["storage_losses"] = [attrs.asdict(loss) for loss in self.storage_losses]
        data["poisoned_reads"] = [list(pair) for pair in self.poisoned_reads]
        data["reference_ops"] = sorted(set(self.reference_ops))
        data["outside_fraction"] = round(self.outside_peak_bytes / self.arena_bytes, 6) if self.arena_bytes else 0.0
        return data


def array_module(device: str) -> ModuleType:
    """NumPy for "cpu", CuPy for "gpu" (an `ExecutionError` when CuPy or CUDA is absent)."""
    if device not in DEVICES:
        raise ExecutionError(f"unknown device {device!r}", expected=" or ".join(DEVICES))
    if device == "cpu":
        return np
    reason = gpu_unavailable_reason()
    if reason is not None:
        raise ExecutionError(f"--device gpu needs CuPy and a CUDA device: {reason}",
                             expected="pip install 'rlxir[cuda]' on a machine with an NVIDIA GPU")
    import cupy

    return cupy


def gpu_unavailable_reason() -> str | None:
    """Why `device="gpu"` cannot run here (CuPy missing, no driver, no device), or None."""
    try:
        import cupy

        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # ImportError, or CuPy without a driver or device
        return str(error) or type(error).__name__
    return None if count > 0 else "no CUDA device"


def compiled_step(result: CompileResult | TrainingResult) -> CompileResult:
    """The `CompileResult` that runs: a training result runs its training step."""
    return result.backward if isinstance(result, TrainingResult) else result


def run_in_arena(result: CompileResult | TrainingResult, inputs: Mapping | None = None, params: Mapping | None = None,
                 seed: int = 0, device: str = "cpu", check_reads: bool = True, to_host: bool = True) -> ArenaRun:
    """Run `result`'s final graph in one arena of its planned size (see the module docstring).

    `inputs` / `params` are arrays as `rlxir.interpret` takes them (missing ones are filled
    from `seed` as it fills them, from the final graph). Returns the outputs, by the final
    graph's output names, with what the run measured: host copies, or with `to_host=False`
    the output slots themselves (views that keep the arena alive; on a GPU, device arrays).
    """
    step = compiled_step(result)
    graph, plan = step.graph, step.plan
    xp = array_module(device)
    layout = ArenaLayout.of(graph, plan)
    feeds = {**_checked_feeds(graph, inputs, "input"), **_checked_feeds(graph, params, "param")}
    for name in graph.inputs() + graph.params():
        if name not in feeds:
            feeds[name] = random_fill(graph, name, seed)
    meter = HostMeter() if xp is np else DeviceMeter(xp)
    used_before = meter.device_used() if isinstance(meter, DeviceMeter) else None
    arena = Arena(xp, layout)
    side = {name: allocate(xp, size, f"side buffer {name}") for name, size in step.side_buffers.items()}
    runner = _Runner(xp, graph, plan.sizing, arena, check_reads)
    meter.start()
    began = time.perf_counter()
    try:
        with np.errstate(all="ignore"):
            for index, name in enumerate(graph.schedule()):
                runner.step(name, feeds)
                runner.poisoned_bytes += arena.poison_after(index)
                meter.sample()
        if xp is not np:
            xp.cuda.Device().synchronize()
        seconds = time.perf_counter() - began
    finally:
        meter.stop()
    outputs = {name: decode(xp, arena.view(name), graph.type(name).dtype, plan.sizing) for name in graph.outputs}
    if to_host:
        outputs = {name: _to_host(xp, value) for name, value in outputs.items()}
    del side
    return ArenaRun(outputs, step.target.name, device, plan.sizing, plan.arena_bytes, sum(step.side_buffers.values()),
                    meter.peak, tuple(runner.poisoned_reads), tuple(runner.losses), tuple(runner.reference_ops),
                    len(graph), seconds, runner.poisoned_bytes,
                    getattr(meter, "device_used_peak", None), used_before, getattr(meter, "largest", None))


def _to_host(xp: ModuleType, array: Array) -> np.ndarray:
    """A host array of its own (never a view of the arena): one copy either way."""
    return array.copy() if xp is np else xp.asnumpy(array)


class _Runner:
    """The per-node work of a run: place feeds, read operands, run kernels, store results."""

    def __init__(self, xp: ModuleType, graph: Graph, sizing: str, arena: Arena, check_reads: bool):
        self.xp, self.graph, self.sizing, self.arena = xp, graph, sizing, arena
        self.check_reads = check_reads
        self.poisoned_reads: list[tuple[str, str]] = []
        self.losses: list[StorageLoss] = []
        self.reference_ops: list[str] = []
        self.poisoned_bytes = 0
        self._views = {name: arena.view(name) for name in arena.layout.slots}
        self._roots = arena.layout.roots
        # buffers live for the whole run are never poisoned (a live buffer owns its bytes), so
        # reading them needs no poison check: a plan that overlaps them shows as a wrong answer
        self._unpoisoned = {name for name in arena.layout.slots
                            if self._roots.get(name, (name, 0))[0] in arena.whole_run}

    def step(self, name: str, feeds: Mapping) -> None:
        graph = self.graph
        kind = graph.kind(name)
        if kind in ("input", "param"):
            self._place(name, np.asarray(feeds[name]))
        elif kind == "const":
            self._place(name, const_array(graph, name))
        elif name in self._roots and not self._computes_in_place(name):
            return  # a view: its bytes are its root's, already in place
        else:
            self._run_op(name)

    def _computes_in_place(self, name: str) -> bool:
        """A bump-rule cast aliases its operand's slot yet changes the values, and an update
        written over its param (`in_place_of`) shares the param's slot: both run, in place."""
        graph = self.graph
        if "in_place_of" in graph.attrs(name):
            return True
        return graph.op(name) == "cast" and graph.type(name).dtype is not graph.type(graph.operands(name)[0]).dtype

    def _check(self, reader: str, operand: str) -> None:
        if self.check_reads and operand not in self._unpoisoned and _holds_poison(self.xp, self._views[operand]):
            self.poisoned_reads.append((reader, operand))

    def _decoded(self, operand: str, stored: Array | None = None) -> Array:
        stored = self._views[operand] if stored is None else stored
        return decode(self.xp, stored, self.graph.type(operand).dtype, self.sizing)

    def _run_op(self, name: str) -> None:
        graph = self.graph
        op, operands = graph.op(name), graph.operands(name)
        for operand in operands:
            self._check(name, operand)
        attrs_ = graph.full_attrs(name)
        kernel = KERNELS.get(op)
        try:
            written = kernel is not None and self._run_kernel(name, op, kernel, operands, attrs_)
            if not written:
                opdef = graph.opdef(name)
                if opdef is None or opdef.reference is None:
                    raise ExecutionError(f"%{name} = {op}: the op has neither a kernel nor a NumPy reference, so it "
                                         "cannot run", graph.location(name))
                self.reference_ops.append(op)
                args = [self._decoded(operand) for operand in operands]
                self._store_result(name, self.xp.asarray(run_reference(self.xp, opdef, args, attrs_,
                                                                       graph.type(name).dtype)))
        except RlxError as error:
            raise error.with_location(graph.location(name)) from None
        except (ArithmeticError, ValueError, TypeError, IndexError) as error:
            raise ExecutionError(f"%{name} = {op} failed in the arena run: {error}", graph.location(name)) from error
        except MemoryError as error:  # CuPy's OutOfMemoryError is one too
            where = "host" if self.xp is np else "device"
            raise ExecutionError(f"%{name} = {op}: the {where} ran out of memory for the kernel's temporaries "
                                 f"beside the arena ({str(error).strip() or 'no detail'})", graph.location(name),
                                 "a smaller batch or sequence (rlxir fit's answer keeps a reserve for these)") from None

    def _run_kernel(self, name: str, op: str, kernel: Kernel, operands: Sequence[str], attrs_: dict) -> bool:
        """Run `kernel` into %name's slot; False when it leaves the op to its reference."""
        xp, graph = self.xp, self.graph
        stored = self._views[name]
        dtype = graph.type(name).dtype
        aliased = name in self._roots  # a bump-rule cast converting in place
        if not aliased and op in MOVES_VALUES and all(self._views[operand].dtype == stored.dtype
                                                      for operand in operands[:MOVED_OPERANDS.get(op, None)]):
            # values only move: the slots' own elements go straight across, whatever the storage
            return kernel(xp, [self._views[operand] for operand in operands], attrs_, stored, None) is not None
        keep = whole_from(op, attrs_, stored.ndim)
        # an in-place cast goes tile by tile too where each element keeps its position
        same_positions = not aliased or self._views[operands[0]].dtype.itemsize == stored.dtype.itemsize
        if same_positions and keep is not False and stored.size > TILE:
            return self._run_tiles(name, kernel, operands, attrs_, keep)
        direct = is_direct(dtype, self.sizing) and not aliased
        out = stored if direct else None
        result = kernel(xp, [self._decoded(operand) for operand in operands], attrs_, out,
                        self._views.get(f"{name}.workspace"))
        if result is None:
            return False
        if result is out:
            finish_dtype(xp, out, dtype)
        else:
            self._store_result(name, result)
        return True

    def _run_tiles(self, name: str, kernel: Kernel, operands: Sequence[str], attrs_: dict, keep: int | None) -> bool:
        """Tile by tile (`tiling`): each tile's operands decoded, its result written or encoded."""
        xp, graph = self.xp, self.graph
        stored = self._views[name]
        dtype = graph.type(name).dtype
        direct = is_direct(dtype, self.sizing) and name not in self._roots  # an in-place cast computes, then writes
        changed, worst = 0, 0.0
        for index in tiles(stored.shape, keep):
            args = [self._decoded(operand, operand_tile(self._views[operand], index, stored.ndim))
                    for operand in operands]
            target = stored[index]
            result = kernel(xp, args, attrs_, target if direct else None, None)
            if result is None:
                return False
            if direct:
                finish_dtype(xp, target, dtype)
                continue
            change = encode_into(xp, target, _as_dtype(xp, result, dtype), dtype, self.sizing)
            del args, result  # this tile's temporaries go before the next tile's are made
            if change is not None:
                changed, worst = changed + change[0], max(worst, change[1])
        if changed:
            self.losses.append(StorageLoss(name, dtype.value, str(stored.dtype), changed, worst))
        return True

    def _store_result(self, name: str, result: Array) -> None:
        if tuple(result.shape) != self._views[name].shape:
            raise ExecutionError(f"the kernel of {self.graph.op(name)} gave shape {list(result.shape)} for %{name} "
                                 f": {self.graph.type(name)}", self.graph.location(name))
        self._store(name, result)

    def _place(self, name: str, values: np.ndarray) -> None:
        """Write a host array (a feed or a const, already in the interpreter's type for its
        dtype: bf16 rounded) into its slot, with no copy of it on the way; on a GPU it is
        encoded on the host and copied straight into the slot, so no device temporary holds it."""
        stored = self._views[name]
        dtype = self.graph.type(name).dtype
        staged = stored if self.xp is np else np.empty(stored.shape, stored.dtype)
        change = encode_into(np, staged, np.asarray(values, dtype.numpy), dtype, self.sizing)
        if change is not None:
            self.losses.append(StorageLoss(name, dtype.value, str(stored.dtype), *change))
        if self.xp is not np:
            stored.set(staged)

    def _store(self, name: str, values: Array) -> None:
        dtype = self.graph.type(name).dtype
        stored = self._views[name]
        values = _as_dtype(self.xp, values, dtype)
        change = encode_into(self.xp, stored, values, dtype, self.sizing)
        if change is not None:
            self.losses.append(StorageLoss(name, dtype.value, str(stored.dtype), *change))


def _as_dtype(xp: ModuleType, values: Array, dtype: DType) -> Array:
    """`values` as the interpreter holds `dtype` (bf16: float32 rounded to bf16, a copy)."""
    if values.dtype != np.dtype(dtype.numpy):
        values = values.astype(dtype.numpy)
    return finish_dtype(xp, values.copy(), dtype) if dtype is DType.bf16 else values


MOVES_VALUES = frozenset({"transpose", "expand", "slice", "concat", "reshape", "gather"})
"""Ops whose result holds operand elements unchanged: they copy slot to slot in any storage."""
MOVED_OPERANDS = {"gather": 1}
"""How many leading operands carry the moved values (gather's indices are only read)."""


_ALL_ONES = {2: (np.uint16, 0xFFFF), 4: (np.uint32, 0xFFFFFFFF), 8: (np.uint64, 0xFFFFFFFFFFFFFFFF)}


def _holds_poison(xp: ModuleType, stored: Array) -> bool:
    """Whether a float slot (or a bf16 pattern) holds the all-ones poison anywhere."""
    if stored.size == 0 or not (np.issubdtype(stored.dtype, np.floating) or stored.dtype == np.uint16):
        return False
    bits, pattern = _ALL_ONES[stored.dtype.itemsize]
    return int(stored.view(bits).max()) == pattern  # a reduction: no temporary of the operand's size
