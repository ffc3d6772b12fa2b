"""rocm: bump-allocated arena (no reuse), f32 execution, a u32 arena ceiling."""

from rlxir.targets.target import FUSED_KERNELS, PRIMITIVES, Target, register_target

MIB = 1 << 20

ROCM = register_target(Target(
    name="rocm",
    pipeline=("backend-unfuse{scan-kernel=true},legalize-or-rewrite{share-constants=true},scan-unroll,simplify,cse,dce,const-fold,"
              "legalize-broadcast,fuse,legalize-or-rewrite,f32-exec,lower"),
    claimed_ops=PRIMITIVES | FUSED_KERNELS | {"selective_scan"},
    conv_im2col=True,  # conv2d lowers through an im2col buffer in the arena (docs/lir.md)
    planner="bump",
    alignment=16,
    sizing="f32",
    arena_ceiling=4294967295,  # offsets are u32 in the kernel ABI
    probe="amdsmi",
    side_buffers=(("blas_workspace", 4 * MIB), ("dnn_workspace", 32 * MIB)),
    description="AMD GPUs: bump planner (no reuse), f32 execution, arena at most u32::MAX bytes",
))
