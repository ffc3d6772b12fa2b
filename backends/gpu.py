"""gpu (wgpu): one storage binding holds the arena, so it is capped at u32::MAX bytes."""

from rlxir.targets.target import FUSED_KERNELS, PRIMITIVES, Target, register_target

GPU = register_target(Target(
    name="gpu",
    pipeline="legalize-or-rewrite,dce,const-fold,fuse,dce,backend-unfuse,lower",
    claimed_ops=PRIMITIVES | FUSED_KERNELS,
    conv_im2col=True,  # conv2d lowers through an im2col buffer in the arena (docs/lir.md)
    planner="liveness",
    alignment=16,
    sizing="f32",
    arena_ceiling=4294967295,  # one storage-buffer binding
    probe=None,  # wgpu cannot query device memory
    fuse_patterns=("bias_act", "residual_norm", "shared_input_matmul", "swiglu", "regions"),
    shadow_f16_fraction=0.5,  # an f16 shadow of the arena where f16 is supported
    description="wgpu: liveness planner over f32-sized buffers, arena at most u32::MAX bytes",
))
