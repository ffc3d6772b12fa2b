"""Memory held outside the arena and the side buffers while a plan runs.

On the CPU, NumPy reports every array allocation to `tracemalloc`; the meter starts after
the arena, the side buffers and the feeds exist, so its peak is what kernels held besides
them (temporaries, row statistics, host copies of references) plus a few kilobytes of
Python objects. On a GPU, a CuPy memory hook counts the bytes CuPy's pool hands out after
the arena, and NVML reads the bytes the device holds for this process.
"""

from __future__ import annotations

import tracemalloc


class HostMeter:
    """Peak bytes allocated on the host between `start` and `stop`."""

    def __init__(self):
        self.peak = 0
        self._was_tracing = False
        self._baseline = 0

    def start(self) -> None:
        self._was_tracing = tracemalloc.is_tracing()
        if not self._was_tracing:
            tracemalloc.start()
        tracemalloc.reset_peak()
        self._baseline = tracemalloc.get_traced_memory()[0]

    def sample(self) -> None:
        """Nothing to do: tracemalloc keeps its own peak."""

    def stop(self) -> None:
        self.peak = max(0, tracemalloc.get_traced_memory()[1] - self._baseline)
        if not self._was_tracing:
            tracemalloc.stop()


class DeviceMeter:
    """Peak bytes CuPy allocated after `start`, and the device bytes NVML saw in use."""

    def __init__(self, cupy):
        from cupy.cuda import memory_hook

        meter = self

        class _Hook(memory_hook.MemoryHook):
            name = "rlxir-outside-arena"

            def malloc_postprocess(self, device_id, size, mem_size, mem_ptr, pmem_id):
                meter._current += mem_size
                meter.peak = max(meter.peak, meter._current)
                meter.largest = max(meter.largest, mem_size)

            def free_postprocess(self, device_id, mem_size, mem_ptr, pmem_id):
                meter._current -= mem_size

        self.cupy = cupy
        self.peak = 0
        self.largest = 0  # the largest single allocation (what to look at when the peak is high)
        self._current = 0
        self._hook = _Hook()
        self.device_used_peak = None
        self._nvml = _nvml_handle(cupy)

    def device_used(self) -> int | None:
        if self._nvml is None:
            return None
        import pynvml

        return int(pynvml.nvmlDeviceGetMemoryInfo(self._nvml).used)

    def start(self) -> None:
        self.cupy.cuda.Device().synchronize()
        self._hook.__enter__()
        self.sample()

    def sample(self) -> None:
        used = self.device_used()
        if used is not None:
            self.device_used_peak = max(self.device_used_peak or 0, used)

    def stop(self) -> None:
        self.cupy.cuda.Device().synchronize()
        self.sample()
        self._hook.__exit__(None, None, None)


def _nvml_handle(cupy):
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetHandleByIndex(cupy.cuda.Device().id)
    except Exception:  # no NVML on this machine: the hook's count still stands
        return None
