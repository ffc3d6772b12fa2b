"""cpu: reuse-planned arena in host memory; regions run as primitives."""

from rlxir.dtypes import DType
from rlxir.targets.target import FUSED_KERNELS, PRIMITIVES, Target, register_target

CPU = register_target(Target(
    name="cpu",
    pipeline="legalize-or-rewrite,dce,const-fold,fuse,unfuse-regions,dce,lower",
    claimed_ops=PRIMITIVES | FUSED_KERNELS | {"attention", "selective_scan"},
    last_axis_reductions=False,
    dtypes=frozenset(DType),
    planner="liveness",
    alignment=64,  # a cache line
    sizing="dtype",
    arena_ceiling=None,
    probe="system",
    fuse_patterns=("bias_act", "residual_norm", "shared_input_matmul", "swiglu", "regions"),
    description="host CPU: liveness planner with reuse, 64-byte alignment, dtype-sized buffers",
))
