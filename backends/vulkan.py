"""vulkan: as gpu (wgpu), with a capacity probe on the device-local heap."""

from rlxir.backends.gpu import GPU
from rlxir.targets.target import register_target

VULKAN = register_target(GPU.derive(
    "vulkan",
    probe="vulkan",
    description="Vulkan: as gpu, with the device-local heap as capacity",
))
