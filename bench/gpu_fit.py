"""The fit answer, run on the GPU it was asked about: does the batch `fit` chose run, and does
the next batch's memory fail to allocate?

Usage: python3 bench/gpu_fit.py [--graph examples/gpt2_small.rlx] [-D S=1024] [--max-batch 256]

1. `rlxir fit --target cuda --headroom 1.0 --free` (NVML's free memory as the budget): the
   largest batch B whose arena and side buffers fit.
2. The cuda target's compiled graph at B runs with CuPy in one device allocation of the
   arena plus its side buffers. Measured: CuPy's bytes outside the arena and side buffers
   at the peak (a memory hook), and NVML's device bytes in use at the peak beyond those in
   use before the run. Rows 0 and B-1 of every output are compared with the interpreter
   run at batch 1 on those rows (the graph treats batch rows independently).
3. With B's memory released, the arena and side buffers of batch B + 1 are allocated on
   the same card: they must fail (CuPy's OutOfMemoryError), or `fit` answered too low.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import time

import numpy as np

import rlxir
from rlxir.cli.main import main as cli_main
from rlxir.targets.devices import format_bytes
from rlxir.interpreter import random_fill


def fit_answer(path: str, defines: list[str], max_batch: int) -> dict:
    argv = ["fit", path, "--target", "cuda", "--headroom", "1.0", "--free", "--max-batch", str(max_batch), "--json"]
    for define in defines:
        argv += ["-D", define]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli_main(argv)
    if code != 0:
        raise SystemExit(f"rlxir fit exited {code}: {out.getvalue()}")
    return json.loads(out.getvalue())


def rows_match(graph, batch_graph_feeds, outputs: dict, rows: list[int]) -> tuple[bool, float]:
    """Each listed batch row of every output against the interpreter at batch 1."""
    import cupy

    inputs, params = batch_graph_feeds
    single = graph.bind({"B": 1})
    worst, ok = 0.0, True
    batched = {name for name in graph.inputs() if graph.type(name).rank and str(graph.type(name).shape[0]) == "B"}
    for row in rows:
        rows_in = {name: value[row:row + 1] if name in batched else value for name, value in inputs.items()}
        expected = rlxir.interpret(single, rows_in, params)
        for want, got in zip(expected.values(), outputs.values()):
            have = cupy.asnumpy(got[row:row + 1])
            ok &= bool(np.allclose(have, want, rtol=1e-3, atol=1e-4))
            worst = max(worst, float(np.max(np.abs(have - want))))
    return ok, worst


def try_allocate(arena_bytes: int, side: dict) -> tuple[bool, str]:
    import cupy

    held = []
    try:
        held.append(cupy.empty(arena_bytes, dtype=np.uint8))
        for size in side.values():
            held.append(cupy.empty(size, dtype=np.uint8))
        return True, "allocated"
    except cupy.cuda.memory.OutOfMemoryError as error:
        return False, f"OutOfMemoryError: {str(error).splitlines()[0][:120]}"
    finally:
        del held
        cupy.get_default_memory_pool().free_all_blocks()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", default="examples/gpt2_small.rlx")
    parser.add_argument("-D", dest="defines", action="append", default=[])
    parser.add_argument("--max-batch", type=int, default=256)
    args = parser.parse_args()
    defines = args.defines or ["S=1024"]
    others = {key: int(value) for key, value in (item.split("=") for item in defines)}
    import cupy
    import pynvml

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    name = pynvml.nvmlDeviceGetName(handle)
    memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
    print(f"device: {name}, {format_bytes(memory.total)} total, {format_bytes(memory.free)} free; CuPy {cupy.__version__}")

    started = time.perf_counter()
    fit = fit_answer(args.graph, defines, args.max_batch)
    batch = fit["batch"]
    print(f"rlxir fit --target cuda --headroom 1.0 --free: batch {batch} ({time.perf_counter() - started:.1f} s); "
          f"{json.dumps({key: fit[key] for key in fit if key in ('arena_bytes', 'budget', 'reason')})}")

    graph = rlxir.parse_file(args.graph).main.bind(others)
    at_batch = graph.bind({"B": batch})
    result = rlxir.compile(at_batch, "cuda")
    inputs = {name: random_fill(at_batch, name, 0) for name in at_batch.inputs()}
    params = {name: random_fill(at_batch, name, 0) for name in at_batch.params()}
    run = rlxir.run_in_arena(result, inputs, params, device="gpu", to_host=False)
    matched, worst = rows_match(graph, (inputs, params), run.outputs, [0, batch - 1])
    extra = (run.device_used_peak or 0) - (run.device_used_before or 0)
    side = sum(result.side_buffers.values())
    hooked, seconds, largest = run.outside_peak_bytes, run.seconds, run.outside_largest_bytes
    del run
    cupy.get_default_memory_pool().free_all_blocks()

    following = rlxir.compile(graph.bind({"B": batch + 1}), "cuda")
    free_now = pynvml.nvmlDeviceGetMemoryInfo(handle).free
    allocated, how = try_allocate(following.arena_bytes, dict(following.side_buffers))

    print()
    print("| batch | arena | side buffers | device bytes held (NVML, beyond before) | outside arena + side (CuPy) "
          "| rows match (max abs error) |")
    print("|---:|---:|---:|---:|---:|---|")
    outside = extra - result.arena_bytes - side
    print(f"| {batch} | {format_bytes(result.arena_bytes)} | {format_bytes(side)} | {format_bytes(extra)} "
          f"| {format_bytes(hooked)} (CuPy; largest {format_bytes(largest or 0)}); {format_bytes(outside)} by NVML, "
          f"CUDA context included "
          f"| {'yes' if matched else 'NO'} ({worst:.2g}); run {seconds:.2f} s |")
    need = following.arena_bytes + sum(following.side_buffers.values())
    print(f"| {batch + 1} | {format_bytes(following.arena_bytes)} | "
          f"{format_bytes(sum(following.side_buffers.values()))} | needs {format_bytes(need)}, "
          f"{format_bytes(free_now)} free | {'ALLOCATED (fit answered too low)' if allocated else how} | - |")


if __name__ == "__main__":
    main()
