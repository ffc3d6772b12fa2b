"""Capacity probes, replayed on recorded outputs of the real tools (no GPU needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlxir.targets.devices import Capacity, ProbeMiss, Sources, parse_bytes, probe_capacity

DATA = Path(__file__).parent / "data" / "probes"
MIB = 1 << 20


def recorded(commands=None, files=None, modules=None, system="Linux"):
    """Sources that answer from recordings; anything not recorded is missing."""
    commands, files, modules = commands or {}, files or {}, modules or {}

    def run(argv):
        return commands.get(argv[0])

    def import_module(name):
        found = modules.get(name)
        if found is None:
            raise ModuleNotFoundError(f"No module named {name!r}")
        if isinstance(found, BaseException):
            raise found
        return found

    return Sources(run=run, read=files.get, glob=lambda pattern: sorted(p for p in files if "vram_total" in p),
                   import_module=import_module, system=system)


def test_nvidia_smi_when_nvml_is_missing():
    text = (DATA / "nvidia_smi_h200.txt").read_text()
    capacity = probe_capacity("nvml", recorded(commands={"nvidia-smi": text}))
    assert capacity == Capacity(143771 * MIB, 143156 * MIB, "nvidia-smi", "GPU 0", 1)


def test_nvml_is_preferred_when_it_loads():
    class Memory:  # what NVML reported on an H200 (tests/data/probes/README.md)
        total, used, free = 150_754_820_096, 644_939_776, 150_109_880_320

    class FakeNvml:
        nvmlInit = nvmlShutdown = staticmethod(lambda: None)
        nvmlDeviceGetCount = staticmethod(lambda: 1)
        nvmlDeviceGetHandleByIndex = staticmethod(lambda index: object())
        nvmlDeviceGetMemoryInfo = staticmethod(lambda handle: Memory)
        nvmlDeviceGetName = staticmethod(lambda handle: b"NVIDIA H200")

    capacity = probe_capacity("nvml", recorded(modules={"pynvml": FakeNvml}))
    assert (capacity.total_bytes, capacity.source, capacity.device) == (150_754_820_096, "nvml", "NVIDIA H200")


def test_amdsmi_that_raises_keyerror_on_import_is_a_miss_not_a_crash():
    text = (DATA / "rocm_smi_vram.json").read_text()
    sources = recorded(commands={"rocm-smi": text}, modules={"amdsmi": KeyError("ROCM_PATH")})
    capacity = probe_capacity("amdsmi", sources)
    assert capacity.total_bytes == 68702699520 and capacity.source == "rocm-smi" and capacity.devices == 2
    assert capacity.free_bytes == 68702699520 - 10960896


def test_sysfs_is_the_last_rocm_source():
    files = {"/sys/class/drm/card1/device/mem_info_vram_total": "17163091968\n",
             "/sys/class/drm/card1/device/mem_info_vram_used": "1073741824\n"}
    capacity = probe_capacity("amdsmi", recorded(files=files))
    assert capacity == Capacity(17163091968, 17163091968 - 1073741824, "sysfs", "card1", 1)


def test_a_probe_that_finds_nothing_says_what_it_tried():
    miss = probe_capacity("amdsmi", recorded())
    assert isinstance(miss, ProbeMiss)
    text = miss.explain()
    assert "amdsmi not importable" in text and "rocm-smi not found" in text and "mem_info_vram_total" in text


def test_system_memory_from_meminfo():
    capacity = probe_capacity("system", recorded(files={"/proc/meminfo": (DATA / "meminfo.txt").read_text()}))
    assert capacity.total_bytes == 24608348 * 1024 and capacity.bytes("free") == 24012776 * 1024


def test_vulkan_takes_the_device_local_heap():
    capacity = probe_capacity("vulkan", recorded(commands={"vulkaninfo": (DATA / "vulkaninfo_heaps.txt").read_text()}))
    assert capacity.total_bytes == 25769803776


def test_metal_needs_macos():
    miss = probe_capacity("metal", recorded(system="Linux"))
    assert isinstance(miss, ProbeMiss) and "needs macOS" in miss.explain()


def test_target_without_a_probe():
    assert "cannot query" in probe_capacity(None).explain()


def test_free_falls_back_to_total_when_unknown():
    assert Capacity(100, None, "x").bytes("free") == 100


@pytest.mark.parametrize("text, expected", [
    ("24GiB", 24 * 2**30), ("80GB", 80 * 10**9), ("25769803776", 25769803776), ("512MiB", 512 * 2**20),
    ("1.5GiB", 3 * 2**29), ("64 gib", 64 * 2**30)])
def test_parse_bytes(text, expected):
    assert parse_bytes(text) == expected


def test_parse_bytes_rejects_nonsense():
    with pytest.raises(ValueError, match="24GiB"):
        parse_bytes("lots")


def test_a_probed_cuda_capacity_leaves_room_for_the_runtime():
    """The arena may not have the bytes a running process's CUDA context holds; --vram is as given."""
    from rlxir.compiler.budget import RUNTIME_RESERVE, arena_budget
    from rlxir.targets.target import get_target

    sources = recorded(commands={"nvidia-smi": (DATA / "nvidia_smi_h200.txt").read_text()})
    probed = probe_capacity("nvml", sources)
    budget = arena_budget("cuda", 1.0, which="free", sources=sources)
    side = sum(size for _, size in get_target("cuda").side_buffers)
    assert budget.bytes == probed.bytes("free") - RUNTIME_RESERVE["nvidia-smi"] - side
    assert "the runtime holds" in budget.source
    given = arena_budget("cuda", 1.0, vram=80 << 30)
    assert given.bytes == (80 << 30) - side


def test_an_arena_that_cannot_be_allocated_is_refused_with_its_size():
    import numpy as np

    from rlxir.executor.arena import ExecutionError, allocate

    with pytest.raises(ExecutionError, match=r"the arena of 1125899906842624 B \(1024.00 TiB\) cannot be allocated"):
        allocate(np, 1 << 50, "the arena")
