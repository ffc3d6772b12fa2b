"""cuda: bump-allocated arena (no reuse), every buffer sized as f32."""

from rlxir.targets.target import FUSED_KERNELS, PRIMITIVES, Target, register_target

MIB = 1 << 20

CUDA = register_target(Target(
    name="cuda",
    pipeline="backend-unfuse,legalize-or-rewrite,dce,const-fold,fuse,dce,backend-unfuse,lower",
    claimed_ops=PRIMITIVES | FUSED_KERNELS | {"attention", "selective_scan"},
    conv_im2col=True,  # conv2d lowers through an im2col buffer in the arena (docs/lir.md)
    planner="bump",
    alignment=16,
    sizing="f32",
    arena_ceiling=None,  # 64-bit offsets
    probe="nvml",
    side_buffers=(("blas_workspace", 4 * MIB), ("dnn_workspace", 32 * MIB)),
    description="NVIDIA GPUs: bump planner (no reuse), 16-byte alignment, 4 bytes per element",
))
