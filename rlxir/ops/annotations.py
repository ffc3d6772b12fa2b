"""Stage annotations of the built-in backends: attributes valid on every op.

They are registered with the core (not by the passes that write them) so that a lowered
graph read from a file parses in any process, whether or not a pipeline ran there.
docs/lir.md documents each key.
"""

from __future__ import annotations

from rlxir.ops.registry import AttrSpec, register_annotation

KERNELS = ("gemm", "elementwise", "region", "reduce", "softmax", "norm", "copy", "gather", "conv", "pool",
           "attention", "scan", "view", "custom")

LIR_ANNOTATIONS = {
    # Not `kernel`: the pooling ops already have a `kernel` attribute (their window).
    "kernel_family": AttrSpec("str", None, KERNELS, doc="the kernel family that runs the op (docs/lir.md)"),
    "view_of": AttrSpec("str", None, doc="a view: the root buffer it aliases, as \"%name\""),
    "view_offset": AttrSpec("int", None, doc="a view: its byte offset inside the root buffer"),
    "workspace": AttrSpec("int", None, doc="scratch bytes the kernel needs during its step"),
    "side_buffer": AttrSpec("str", None, doc="the target side buffer (outside the arena) the kernel uses"),
}
"""The keys `lower` writes; any earlier values of them are replaced."""

IN_PLACE_OF = AttrSpec("str", None, doc="the op writes its result over this param's bytes, written \"%name\" "
                                        "(an optimizer's update in place; set by the training plan)")

SCAN_KERNEL = AttrSpec("bool", False, doc="selective_scan runs as the scan kernel that saves its state trajectory "
                                          "(set by backend-unfuse{scan-kernel=true} on rocm, read by lower)")

for _key, _spec in {**LIR_ANNOTATIONS, "scan_kernel": SCAN_KERNEL, "in_place_of": IN_PLACE_OF}.items():
    register_annotation(_key, _spec)
del _key, _spec
