"""metal: reuse-planned arena with 128-byte alignment; scratch at the aligned tail."""

from rlxir.dtypes import DType
from rlxir.targets.target import FUSED_KERNELS, PRIMITIVES, Target, register_target

METAL = register_target(Target(
    name="metal",
    pipeline="legalize-or-rewrite,dce,const-fold,fuse,dce,lower",
    claimed_ops=PRIMITIVES | FUSED_KERNELS | {"attention", "selective_scan"},
    dtypes=frozenset(DType) - {DType.f64},  # Metal has no double precision
    conv_im2col=True,  # conv2d lowers through an im2col buffer in the arena (docs/lir.md)
    planner="liveness",
    alignment=128,
    sizing="dtype",
    arena_ceiling=None,
    probe="metal",
    fuse_patterns=("bias_act", "residual_norm", "shared_input_matmul", "swiglu", "regions"),
    description="Apple GPUs: liveness planner, 128-byte alignment, dtype-sized buffers",
))
