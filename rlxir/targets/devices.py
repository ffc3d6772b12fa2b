"""Capacity probes: how much memory the device a target runs on has.

Each probe tries its sources in order and returns a `Capacity` (total and free bytes, and
where the numbers came from) or a `ProbeMiss` that lists everything it tried and why each
failed. A vendor library that fails to load in any way (missing shared library, a
`KeyError` raised on import, ...) is a miss, never a crash.

Sources, per probe name (the `probe` field of a target):
- ``nvml`` (cuda): NVML through `pynvml` (the nvidia-ml-py package), else
  ``nvidia-smi --query-gpu=memory.total,memory.used,memory.free --format=csv,noheader,nounits``.
- ``amdsmi`` (rocm): the `amdsmi` library, else ``rocm-smi --showmeminfo vram --json``, else
  sysfs ``/sys/class/drm/card*/device/mem_info_vram_total`` (and ``..._used``).
- ``system`` (cpu): ``/proc/meminfo`` (MemTotal, MemAvailable), else ``sysconf``.
- ``metal``: the default Metal device's ``recommendedMaxWorkingSetSize`` through PyObjC (macOS).
- ``vulkan``: the largest device-local heap that ``vulkaninfo`` reports.

Commands and files are read through a `Sources` object so tests can replay recorded
outputs of the real tools.
"""

from __future__ import annotations

import glob
import importlib
import json
import os
import platform
import re
import subprocess
from collections.abc import Callable

import attrs

MIB = 1 << 20


@attrs.frozen
class Capacity:
    """Device memory in bytes. `device` names the device; `source` the tool that said so."""

    total_bytes: int
    free_bytes: int | None
    source: str
    device: str = ""
    devices: int = 1

    def bytes(self, which: str = "total") -> int:
        """`which` is "total" or "free" (free falls back to total when unknown)."""
        if which == "free" and self.free_bytes is not None:
            return self.free_bytes
        return self.total_bytes


@attrs.frozen
class ProbeMiss:
    """No source answered. `tried` holds one "source: reason" line per attempt."""

    probe: str
    tried: tuple

    def explain(self) -> str:
        return f"no {self.probe} capacity found; tried: " + "; ".join(self.tried)


@attrs.define
class Sources:
    """Where probes read from: commands, files, Python modules (replaceable in tests)."""

    run: Callable[[list], str | None] = None
    read: Callable[[str], str | None] = None
    glob: Callable[[str], list] = glob.glob
    import_module: Callable[[str], object] = importlib.import_module
    system: str = platform.system()

    def __attrs_post_init__(self):
        self.run = self.run or _run_command
        self.read = self.read or _read_file


def _run_command(argv: list) -> str | None:
    """stdout of a command, or None when it is missing, fails or hangs."""
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout if result.returncode == 0 else None


def _read_file(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return None


def _import(sources: Sources, name: str):
    """The module, or an error text: any exception on import is a miss."""
    try:
        return sources.import_module(name), None
    except BaseException as error:  # vendor bindings raise KeyError, OSError, ... when their library is missing
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        return None, f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _vendor_binding(sources: Sources, module: str, library: str, read):
    """Import a vendor's Python binding and READ it: (Capacity, None), or (None, why not).

    A missing binding and any error its library raises while it is read are reasons, not
    exceptions, so the next source is tried."""
    binding, error = _import(sources, module)
    if binding is None:
        return None, f"{module} not importable ({error})"
    try:
        return read(binding)
    except Exception as error:
        return None, f"{library} failed ({type(error).__name__}: {error})"


# --- NVIDIA -----------------------------------------------------------------------------
def _read_nvml(pynvml):
    pynvml.nvmlInit()
    try:
        count = pynvml.nvmlDeviceGetCount()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
        name = pynvml.nvmlDeviceGetName(handle)
    finally:
        pynvml.nvmlShutdown()
    name = name.decode() if isinstance(name, bytes) else str(name)
    return Capacity(int(memory.total), int(memory.free), "nvml", name, int(count)), None


def _nvml(sources: Sources):
    return _vendor_binding(sources, "pynvml", "NVML", _read_nvml)


def parse_nvidia_smi(text: str) -> list[tuple[int, int, int]]:
    """(total, used, free) bytes per GPU from the nounits MiB CSV of nvidia-smi."""
    rows = []
    for line in text.strip().splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) == 3 and all(field.isdigit() for field in fields):
            rows.append(tuple(int(field) * MIB for field in fields))
    return rows


def _nvidia_smi(sources: Sources):
    text = sources.run(["nvidia-smi", "--query-gpu=memory.total,memory.used,memory.free",
                        "--format=csv,noheader,nounits"])
    if text is None:
        return None, "nvidia-smi not found or failed"
    rows = parse_nvidia_smi(text)
    if not rows:
        return None, f"nvidia-smi printed nothing usable: {text.strip()[:80]!r}"
    total, _, free = rows[0]
    return Capacity(total, free, "nvidia-smi", "GPU 0", len(rows)), None


# --- AMD --------------------------------------------------------------------------------
def _read_amdsmi(amdsmi):
    amdsmi.amdsmi_init()
    try:
        handles = amdsmi.amdsmi_get_processor_handles()
        if not handles:
            return None, "amdsmi found no GPU"
        usage = amdsmi.amdsmi_get_gpu_vram_usage(handles[0])
    finally:
        amdsmi.amdsmi_shut_down()
    total, used = int(usage["vram_total"]) * MIB, int(usage["vram_used"]) * MIB
    return Capacity(total, total - used, "amdsmi", "GPU 0", len(handles)), None


def _amdsmi(sources: Sources):
    return _vendor_binding(sources, "amdsmi", "amdsmi", _read_amdsmi)


def parse_rocm_smi(text: str) -> list[tuple[int, int]]:
    """(total, used) bytes per card from ``rocm-smi --showmeminfo vram --json``."""
    data = json.loads(text)
    cards = []
    for name in sorted(data, key=lambda key: (len(key), key)):
        fields = data[name]
        if not isinstance(fields, dict):
            continue
        total = next((value for key, value in fields.items() if "Total Memory" in key and "Used" not in key), None)
        used = next((value for key, value in fields.items() if "Total Used Memory" in key), None)
        if total is not None:
            cards.append((int(total), int(used) if used is not None else 0))
    return cards


def _rocm_smi(sources: Sources):
    text = sources.run(["rocm-smi", "--showmeminfo", "vram", "--json"])
    if text is None:
        return None, "rocm-smi not found or failed"
    try:
        cards = parse_rocm_smi(text)
    except (ValueError, TypeError) as error:
        return None, f"rocm-smi printed unreadable JSON ({error})"
    if not cards:
        return None, "rocm-smi reported no VRAM"
    total, used = cards[0]
    return Capacity(total, total - used, "rocm-smi", "card0", len(cards)), None


def _sysfs_vram(sources: Sources):
    paths = sorted(sources.glob("/sys/class/drm/card*/device/mem_info_vram_total"))
    if not paths:
        return None, "no /sys/class/drm/card*/device/mem_info_vram_total"
    total_text = sources.read(paths[0])
    if total_text is None or not total_text.strip().isdigit():
        return None, f"{paths[0]} unreadable"
    used_text = sources.read(paths[0].replace("vram_total", "vram_used"))
    total = int(total_text)
    free = total - int(used_text) if used_text and used_text.strip().isdigit() else None
    return Capacity(total, free, "sysfs", paths[0].split("/")[4], len(paths)), None


# --- host, Apple, Vulkan ----------------------------------------------------------------
def parse_meminfo(text: str) -> tuple[int, int | None] | None:
    values = {}
    for line in text.splitlines():
        match = re.match(r"(\w+):\s+(\d+)\s*kB", line)
        if match:
            values[match.group(1)] = int(match.group(2)) * 1024
    if "MemTotal" not in values:
        return None
    return values["MemTotal"], values.get("MemAvailable")


def _system_memory(sources: Sources):
    text = sources.read("/proc/meminfo")
    parsed = parse_meminfo(text) if text else None
    if parsed is not None:
        return Capacity(parsed[0], parsed[1], "/proc/meminfo", "host"), None
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None, "no /proc/meminfo and no sysconf page counts"
    return Capacity(total, None, "sysconf", "host"), None


def _metal(sources: Sources):
    if sources.system != "Darwin":
        return None, f"Metal needs macOS (this is {sources.system})"
    metal, error = _import(sources, "Metal")
    if metal is None:
        return None, f"PyObjC's Metal not importable ({error})"
    device = metal.MTLCreateSystemDefaultDevice()
    if device is None:
        return None, "no default Metal device"
    return Capacity(int(device.recommendedMaxWorkingSetSize()), None, "metal", str(device.name())), None


def parse_vulkaninfo(text: str) -> list[int]:
    """Sizes of the device-local memory heaps that ``vulkaninfo`` lists."""
    sizes = []
    for block in re.split(r"memoryHeaps\[\d+\]:", text)[1:]:
        size = re.search(r"size\s*=\s*(\d+)", block)
        heap = block.split("memoryHeaps[")[0][:600]
        if size and "DEVICE_LOCAL" in heap:
            sizes.append(int(size.group(1)))
    return sizes


def _vulkan(sources: Sources):
    text = sources.run(["vulkaninfo"])
    if text is None:
        return None, "vulkaninfo not found or failed"
    sizes = parse_vulkaninfo(text)
    if not sizes:
        return None, "vulkaninfo listed no device-local heap"
    return Capacity(max(sizes), None, "vulkaninfo", "device-local heap"), None


PROBES: dict[str, tuple] = {
    "nvml": (_nvml, _nvidia_smi),
    "amdsmi": (_amdsmi, _rocm_smi, _sysfs_vram),
    "system": (_system_memory,),
    "metal": (_metal,),
    "vulkan": (_vulkan,),
}


def probe_capacity(probe: str | None, sources: Sources | None = None) -> Capacity | ProbeMiss:
    """Run a probe's sources in order; the first answer wins."""
    if probe is None:
        return ProbeMiss("device", ("this target cannot query device memory",))
    sources = sources or Sources()
    tried = []
    for source in PROBES[probe]:
        capacity, reason = source(sources)
        if capacity is not None:
            return capacity
        tried.append(reason)
    return ProbeMiss(probe, tuple(tried))


MAX_BYTES = 2**64 - 1  # what a 64-bit device address can reach


def parse_bytes(text: str) -> int:
    """``24GiB``, ``80GB``, ``512MiB``, ``25769803776`` -> bytes (binary and decimal units)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B|B)?\s*", text, re.IGNORECASE | re.ASCII)
    if match is None:
        raise ValueError(f"expected a byte count such as 24GiB, 80GB or 25769803776, got {text!r}")
    whole, _, fraction = match.group(1).partition(".")
    unit = (match.group(2) or "B").upper()
    scale = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
             "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}[unit]
    # Exact integer arithmetic: a float would overflow (or round) on long digit strings.
    count = (int(whole + fraction) * scale) // 10 ** len(fraction)
    if count > MAX_BYTES:
        raise ValueError(f"a byte count of at most 2^64 - 1 (16 EiB), got {text.strip()[:40]!r}"
                         f"{'...' if len(text.strip()) > 40 else ''}")
    return count


def format_bytes(count: int) -> str:
    """``10.40 GiB``-style text for reports."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{count} B" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    return f"{count} B"
