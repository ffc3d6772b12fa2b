"""Shape rules and schemas of the core ops of the rlx IR (IR.md, "Core ops")."""

from __future__ import annotations

from rlxir.dtypes import DType
from rlxir.ops.registry import AttrSpec, OpDef, ShapeError, register_op
from rlxir.symbolic import Dim, Expr, add, exact_div, floordiv, format_dim, mul, sub
from rlxir.types import TensorType


def _dim(dim: Dim) -> str:
    return format_dim(dim)


def _shape(shape) -> str:
    return "[" + ", ".join(_dim(dim) for dim in shape) + "]"


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    """`axis` in ``[0, rank)``; negative counts from the end."""
    if not -rank <= axis < rank:
        raise ShapeError(f"{what} {axis} is out of range for rank {rank}", expected=f"an axis in [{-rank}, {rank})")
    return axis % rank


def broadcast_shapes(*shapes) -> tuple:
    """NumPy broadcasting over dims; symbolic dims broadcast only with 1 or themselves."""
    rank = max(len(shape) for shape in shapes)
    result = []
    for position in range(rank):
        dim: Dim = 1
        for index, shape in enumerate(shapes):
            offset = position - (rank - len(shape))
            if offset < 0:
                continue
            other = shape[offset]
            if other == 1 or other == dim:
                continue
            if dim == 1:
                dim = other
                continue
            raise ShapeError(
                f"cannot broadcast {' and '.join(_shape(s) for s in shapes)}: dim {_dim(dim)} against {_dim(other)}",
                operand=index,
                expected="equal dims, or 1 on one side",
            )
        result.append(dim)
    return tuple(result)


def _broadcasts_to(shape, target) -> bool:
    """Whether `shape` broadcasts to exactly `target` (a bias, a mask, a norm parameter).

    Callers raise their own error, naming the operand at fault: `broadcast_shapes` only
    knows positions in its own argument list, not the op's operand indices.
    """
    try:
        return broadcast_shapes(tuple(target), tuple(shape)) == tuple(target)
    except ShapeError:
        return False


def _same_dtype(types, opname: str, first_operand: int = 0) -> DType:
    """The one dtype of `types`, which are the op's operands from index `first_operand` on."""
    first = types[0].dtype
    for index, operand in enumerate(types[1:], start=1):
        if operand.dtype is not first:
            raise ShapeError(
                f"{opname} mixes {first.value} and {operand.dtype.value}",
                operand=first_operand + index,
                expected=f"every operand {first.value} (insert a cast)",
            )
    return first


# --- elementwise -----------------------------------------------------------------------
def unary_rule(types, attrs) -> TensorType:
    return types[0]


def binary_rule(types, attrs) -> TensorType:
    dtype = _same_dtype(types, "this op")
    return TensorType(dtype, broadcast_shapes(types[0].shape, types[1].shape))


def compare_rule(types, attrs) -> TensorType:
    _same_dtype(types, "a comparison")
    return TensorType(DType.bool, broadcast_shapes(types[0].shape, types[1].shape))


def where_rule(types, attrs) -> TensorType:
    cond, left, right = types
    if cond.dtype is not DType.bool:
        raise ShapeError(f"where's condition is {cond.dtype.value}", operand=0, expected="a bool condition")
    dtype = _same_dtype((left, right), "where", first_operand=1)
    return TensorType(dtype, broadcast_shapes(cond.shape, left.shape, right.shape))


def cast_rule(types, attrs) -> TensorType:
    return types[0].with_dtype(attrs["to"])


# --- reductions and scans --------------------------------------------------------------
def reduced_axes(rank: int, axes) -> tuple[int, ...]:
    normalized = tuple(normalize_axis(axis, rank, "reduction axis") for axis in axes)
    if len(set(normalized)) != len(normalized):
        raise ShapeError(f"reduction axes {list(axes)} repeat an axis", expected="distinct axes")
    if not normalized:
        raise ShapeError("a reduction needs at least one axis", expected="axes = [AXIS, ...]")
    return normalized


def reduce_rule(types, attrs) -> TensorType:
    operand = types[0]
    axes = reduced_axes(operand.rank, attrs["axes"])
    if attrs["keepdims"]:
        shape = tuple(1 if index in axes else dim for index, dim in enumerate(operand.shape))
    else:
        shape = tuple(dim for index, dim in enumerate(operand.shape) if index not in axes)
    return operand.with_shape(shape)


def axis_rule(types, attrs) -> TensorType:
    operand = types[0]
    if operand.rank == 0:
        raise ShapeError("this op needs a tensor of rank at least 1, got a scalar", operand=0)
    normalize_axis(attrs["axis"], operand.rank)
    return operand


# --- linear algebra --------------------------------------------------------------------
def _matmul_shape(a: TensorType, b: TensorType, transpose_a: bool, transpose_b: bool) -> tuple:
    if a.rank == 0 or b.rank == 0:
        raise ShapeError("matmul operands must have rank at least 1", operand=0 if a.rank == 0 else 1)
    # A vector has no second axis to swap with; reading [K] as [1, K] first and then
    # transposing would contract over the unit axis, which no caller means.
    if transpose_a and a.rank == 1 or transpose_b and b.rank == 1:
        raise ShapeError("matmul cannot transpose a rank-1 operand", operand=0 if transpose_a and a.rank == 1 else 1,
                         expected="transpose_a/transpose_b only on operands of rank >= 2")
    a_shape, b_shape = list(a.shape), list(b.shape)
    squeeze_front = a.rank == 1
    squeeze_back = b.rank == 1
    if squeeze_front:
        a_shape = [1, a_shape[0]]
    if squeeze_back:
        b_shape = [b_shape[0], 1]
    if transpose_a:
        a_shape[-2], a_shape[-1] = a_shape[-1], a_shape[-2]
    if transpose_b:
        b_shape[-2], b_shape[-1] = b_shape[-1], b_shape[-2]
    if a_shape[-1] != b_shape[-2]:
        raise ShapeError(
            f"matmul contracts {_dim(a_shape[-1])} against {_dim(b_shape[-2])} ({_shape(a.shape)} x {_shape(b.shape)})",
            operand=1,
            expected="[..., M, K] x [..., K, N]",
        )
    batch = broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2]))
    shape = list(batch) + [a_shape[-2], b_shape[-1]]
    if squeeze_back:
        shape.pop()
    if squeeze_front:
        shape.pop(-2 if not squeeze_back else -1)
    return tuple(shape)


def matmul_rule(types, attrs) -> TensorType:
    a, b = types
    dtype = _same_dtype(types, "matmul")
    return TensorType(dtype, _matmul_shape(a, b, attrs["transpose_a"], attrs["transpose_b"]))


def _bias_check(result: TensorType, bias: TensorType, operand: int) -> None:
    if not _broadcasts_to(bias.shape, result.shape):
        raise ShapeError(f"bias {_shape(bias.shape)} does not broadcast to {_shape(result.shape)}", operand=operand,
                         expected=f"[{_dim(result.shape[-1])}]")


def linear_rule(types, attrs) -> TensorType:
    x, w = types[0], types[1]
    dtype = _same_dtype(types, "linear")
    if w.rank != 2:
        raise ShapeError(f"linear's weight must be [K, N], got {_shape(w.shape)}", operand=1, expected="a rank-2 weight")
    result = TensorType(dtype, _matmul_shape(x, w, False, False))
    if len(types) == 3:
        _bias_check(result, types[2], 2)
    return result


def fused_matmul_bias_act_rule(types, attrs) -> TensorType:
    return linear_rule(types, attrs)


# --- normalisation ---------------------------------------------------------------------
def _norm_params(x: TensorType, params, first_operand: int, axis: int) -> None:
    start = normalize_axis(axis, x.rank)
    normalized = x.shape[start:]
    for offset, param in enumerate(params):
        if not _broadcasts_to(param.shape, normalized):
            raise ShapeError(
                f"norm parameter {_shape(param.shape)} does not match the normalised dims {_shape(normalized)}",
                operand=first_operand + offset,
                expected=_shape(normalized),
            )


def layernorm_rule(types, attrs) -> TensorType:
    x = types[0]
    _same_dtype(types, "layernorm")
    _norm_params(x, types[1:], 1, attrs["axis"])
    return x


def rmsnorm_rule(types, attrs) -> TensorType:
    x = types[0]
    _same_dtype(types, "rmsnorm")
    _norm_params(x, types[1:], 1, attrs["axis"])
    return x


def fused_residual_norm_rule(types, attrs) -> TensorType:
    x, residual = types[0], types[1]
    _same_dtype(types, "a residual norm")
    if residual.shape != x.shape:
        raise ShapeError(
            f"residual {_shape(residual.shape)} differs from {_shape(x.shape)}", operand=1, expected=_shape(x.shape)
        )
    _norm_params(x, types[2:], 2, -1)
    return x


def batchnorm_rule(types, attrs) -> TensorType:
    x = types[0]
    _same_dtype(types, "batchnorm")
    if x.rank < 2:
        raise ShapeError(f"batchnorm needs NCHW-like input, got {_shape(x.shape)}", operand=0, expected="rank >= 2")
    channels = x.shape[1]
    for index, param in enumerate(types[1:], start=1):
        if param.shape != (channels,):
            raise ShapeError(
                f"batchnorm parameter {_shape(param.shape)} must be [C] = [{_dim(channels)}]", operand=index
            )
    return x


# --- attention and sequences -----------------------------------------------------------
def attention_rule(types, attrs) -> TensorType:
    q, k, v = types[0], types[1], types[2]
    _same_dtype(types[:3], "attention")
    if q.rank < 2 or k.rank != q.rank or v.rank != q.rank:
        raise ShapeError("attention takes q, k, v of one rank (>= 2), [B, H, S, D]", operand=0)
    if q.shape[-1] != k.shape[-1]:
        raise ShapeError(f"q's head dim {_dim(q.shape[-1])} differs from k's {_dim(k.shape[-1])}", operand=1)
    if k.shape[-2] != v.shape[-2]:
        raise ShapeError(f"k has {_dim(k.shape[-2])} positions, v {_dim(v.shape[-2])}", operand=2)
    batch = broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    if len(types) == 4:
        scores = batch + (q.shape[-2], k.shape[-2])
        if not _broadcasts_to(types[3].shape, scores):
            raise ShapeError(f"mask {_shape(types[3].shape)} does not broadcast to {_shape(scores)}", operand=3,
                             expected="a mask that broadcasts to [..., Sq, Sk]")
    return TensorType(q.dtype, batch + (q.shape[-2], v.shape[-1]))


def selective_scan_rule(types, attrs) -> TensorType:
    x, delta, a, bm, c = types
    _same_dtype(types, "selective_scan")
    if x.rank != 3:
        raise ShapeError(f"selective_scan's x must be [B, S, H], got {_shape(x.shape)}", operand=0)
    batch, seq, hidden = x.shape
    state = attrs["state_size"]
    if state < 1:
        raise ShapeError(f"selective_scan's state_size must be positive, got {state}", expected="state_size >= 1")
    expected = {1: (batch, seq, hidden), 2: (hidden, state), 3: (batch, seq, state), 4: (batch, seq, state)}
    for index, shape in expected.items():
        if types[index].shape != shape:
            raise ShapeError(
                f"selective_scan operand {index + 1} is {_shape(types[index].shape)}", operand=index, expected=_shape(shape)
            )
    return x


# --- shape ops -------------------------------------------------------------------------
def reshape_rule(types, attrs) -> TensorType:
    operand = types[0]
    target = list(attrs["shape"])
    holes = [index for index, dim in enumerate(target) if dim == -1]
    if len(holes) > 1:
        raise ShapeError("reshape allows one -1", expected="at most one -1 in shape")
    for dim in target:
        if isinstance(dim, int) and dim < -1:
            raise ShapeError(f"reshape dim {dim} is negative", expected="non-negative dims or one -1")
    numel = operand.numel
    if holes:
        known: Dim = 1
        for index, dim in enumerate(target):
            if index != holes[0]:
                known = mul(known, dim)
        if known == 0:
            raise ShapeError("reshape cannot infer -1 next to a zero dim")
        inferred = exact_div(numel, known)
        if inferred is None and isinstance(numel, int) and isinstance(known, int):
            raise ShapeError(f"reshape of {numel} elements cannot fill {_shape(target)}", expected="a divisor")
        target[holes[0]] = inferred if inferred is not None else floordiv(numel, known)
    new_numel: Dim = 1
    for dim in target:
        new_numel = mul(new_numel, dim)
    if isinstance(numel, int) and isinstance(new_numel, int) and numel != new_numel:
        raise ShapeError(
            f"reshape from {_shape(operand.shape)} ({numel} elements) to {_shape(target)} ({new_numel})",
            expected="the same element count",
        )
    if not (isinstance(numel, int) and isinstance(new_numel, int)) and numel != new_numel:
        # Symbolic counts that differ as polynomials can still agree once bound (via //):
        # the check runs again on the bound graph, where every dim is a number.
        if not _may_agree(numel, new_numel):
            raise ShapeError(
                f"reshape from {_shape(operand.shape)} to {_shape(target)} changes the element count",
                expected="the same element count",
            )
    return operand.with_shape(target)


def _may_agree(left: Dim, right: Dim) -> bool:
    def has_floordiv(dim):
        return isinstance(dim, Expr) and any(not isinstance(atom, str) for mono, _ in dim.terms for atom, _ in mono)

    return has_floordiv(left) or has_floordiv(right)


def transpose_rule(types, attrs) -> TensorType:
    operand = types[0]
    perm = attrs["perm"]
    if sorted(perm) != list(range(operand.rank)):
        raise ShapeError(
            f"perm {list(perm)} is not a permutation of the {operand.rank} axes",
            expected=f"a permutation of {list(range(operand.rank))}",
        )
    return operand.with_shape(operand.shape[axis] for axis in perm)


def expand_rule(types, attrs) -> TensorType:
    operand = types[0]
    target = tuple(attrs["shape"])
    negative = [dim for dim in target if isinstance(dim, int) and dim < 0]
    if negative:
        raise ShapeError(f"expand dim {negative[0]} is negative", expected="non-negative dims")
    if len(target) < operand.rank or not _broadcasts_to(operand.shape, target):
        raise ShapeError(
            f"cannot expand {_shape(operand.shape)} to {_shape(target)}",
            expected="a shape the operand broadcasts to",
        )
    return operand.with_shape(target)


def concat_rule(types, attrs) -> TensorType:
    first = types[0]
    dtype = _same_dtype(types, "concat")
    if first.rank == 0:
        raise ShapeError("concat needs tensors of rank at least 1", operand=0)
    axis = normalize_axis(attrs["axis"], first.rank)
    total: Dim = 0
    for index, operand in enumerate(types):
        same_rank = operand.rank == first.rank
        if not same_rank or any(a != b for i, (a, b) in enumerate(zip(operand.shape, first.shape)) if i != axis):
            raise ShapeError(
                f"concat operand {_shape(operand.shape)} does not match {_shape(first.shape)} off axis {axis}",
                operand=index,
            )
        total = add(total, operand.shape[axis])
    shape = list(first.shape)
    shape[axis] = total
    return TensorType(dtype, shape)


def slice_rule(types, attrs) -> TensorType:
    operand = types[0]
    if operand.rank == 0:
        raise ShapeError("cannot slice a scalar", operand=0)
    axis = normalize_axis(attrs["axis"], operand.rank)
    start, length = attrs["start"], attrs["len"]
    if start < 0 or length < 0:
        raise ShapeError(f"slice start {start} and len {length} must be non-negative")
    dim = operand.shape[axis]
    if isinstance(dim, int) and start + length > dim:
        raise ShapeError(
            f"slice [{start}, {start + length}) is out of bounds for dim {dim} on axis {axis}",
            expected=f"start + len <= {dim}",
        )
    shape = list(operand.shape)
    shape[axis] = length
    return operand.with_shape(shape)


def gather_rule(types, attrs) -> TensorType:
    table, index = types
    if not index.dtype.is_integer:
        raise ShapeError(f"gather indices are {index.dtype.value}", operand=1, expected="an integer dtype")
    if table.rank == 0:
        raise ShapeError("cannot gather from a scalar", operand=0)
    axis = normalize_axis(attrs["axis"], table.rank)
    return table.with_shape(table.shape[:axis] + index.shape + table.shape[axis + 1:])


# --- convolution and pooling -----------------------------------------------------------
def _window(size: Dim, kernel: int, stride: int, before: int, after: int, dilation: int = 1) -> Dim:
    span = dilation * (kernel - 1) + 1
    padded = add(size, before + after)
    if isinstance(padded, int) and padded < span:
        raise ShapeError(f"window of {span} is larger than the padded input {padded}")
    return add(floordiv(sub(padded, span), stride), 1)


def _pairs(attrs, names):
    for name in names:
        value = attrs[name]
        want = 4 if name == "padding" else 2
        if len(value) != want:
            raise ShapeError(f"{name} needs {want} integers, got {list(value)}")
        if any(item < (0 if name == "padding" else 1) for item in value):
            raise ShapeError(f"{name} {list(value)} has a value out of range")


def conv2d_rule(types, attrs) -> TensorType:
    x, w = types[0], types[1]
    dtype = _same_dtype(types, "conv2d")
    _pairs(attrs, ("stride", "padding", "dilation"))
    if x.rank != 4 or w.rank != 4:
        raise ShapeError("conv2d takes x [N, C, H, W] and w [O, C/groups, KH, KW]", operand=0 if x.rank != 4 else 1)
    groups = attrs["groups"]
    if groups < 1:
        raise ShapeError(f"groups must be positive, got {groups}")
    channels = x.shape[1]
    if mul(w.shape[1], groups) != channels:
        raise ShapeError(
            f"conv2d weight has {_dim(w.shape[1])} input channels per group for {_dim(channels)} channels in {groups} group(s)",
            operand=1,
        )
    if isinstance(w.shape[0], int) and w.shape[0] % groups:
        raise ShapeError(f"conv2d has {w.shape[0]} output channels, not a multiple of its {groups} groups", operand=1,
                         expected=f"an output channel count divisible by {groups}")
    kernel_h, kernel_w = w.shape[2], w.shape[3]
    if not isinstance(kernel_h, int) or not isinstance(kernel_w, int):
        raise ShapeError("conv2d kernel sizes must be integers", operand=1)
    top, left, bottom, right = attrs["padding"]
    height = _window(x.shape[2], kernel_h, attrs["stride"][0], top, bottom, attrs["dilation"][0])
    width = _window(x.shape[3], kernel_w, attrs["stride"][1], left, right, attrs["dilation"][1])
    if len(types) == 3 and types[2].shape != (w.shape[0],):
        raise ShapeError(f"conv2d bias must be [{_dim(w.shape[0])}], got {_shape(types[2].shape)}", operand=2)
    return TensorType(dtype, (x.shape[0], w.shape[0], height, width))


def pool_rule(types, attrs) -> TensorType:
    x = types[0]
    if x.rank != 4:
        raise ShapeError(f"pooling takes NCHW input, got {_shape(x.shape)}", operand=0)
    kernel = attrs["kernel"]
    stride = attrs["stride"] or kernel
    if len(kernel) != 2 or len(stride) != 2 or min(kernel + stride) < 1:
        raise ShapeError(f"pool kernel {list(kernel)} and stride {list(stride)} need two positive integers each")
    _pairs({"padding": attrs["padding"]}, ("padding",))
    top, left, bottom, right = attrs["padding"]
    height = _window(x.shape[2], kernel[0], stride[0], top, bottom)
    width = _window(x.shape[3], kernel[1], stride[1], left, right)
    return x.with_shape((x.shape[0], x.shape[1], height, width))


# --- registration ----------------------------------------------------------------------
def _register(name, arity, rule, traits=(), attributes=None, operands=(), doc=""):
    low, high = arity
    register_op(OpDef(name, low, high, rule, attributes or {}, frozenset(traits), tuple(operands), doc))


UNARY_OPS = ("neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "silu", "sin", "cos", "erf")
BINARY_OPS = ("add", "sub", "mul", "div", "pow", "maximum", "minimum")
COMPARE_OPS = ("eq", "ne", "lt", "le", "gt", "ge")
REDUCE_OPS = ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min")
POOL_OPS = ("max_pool2d", "avg_pool2d")

for _name in UNARY_OPS:
    _register(_name, (1, 1), unary_rule, ("elementwise", "unary"), doc=f"elementwise {_name}")
_register("gelu", (1, 1), unary_rule, ("elementwise", "unary", "fused"),
          {"approximate": AttrSpec("bool", False, doc="tanh approximation instead of erf")}, doc="GELU activation")
_register("cast", (1, 1), cast_rule, ("elementwise", "unary"),
          {"to": AttrSpec("dtype", doc="the result dtype")}, doc="convert elements to another dtype; same dtype is a view")
for _name in BINARY_OPS:
    traits = ("elementwise", "binary") + (("commutative",) if _name in ("add", "mul", "maximum", "minimum") else ())
    _register(_name, (2, 2), binary_rule, traits, doc=f"broadcasting {_name}")
for _name in COMPARE_OPS:
    traits = ("elementwise", "compare") + (("commutative",) if _name in ("eq", "ne") else ())
    _register(_name, (2, 2), compare_rule, traits, doc=f"broadcasting comparison {_name} (bool result)")
_register("where", (3, 3), where_rule, ("elementwise", "select"), operands=("cond", "a", "b"),
          doc="select a where cond else b, broadcasting")
for _name in REDUCE_OPS:
    _register(_name, (1, 1), reduce_rule, ("reduction",),
              {"axes": AttrSpec("ints", doc="axes to reduce"),
               "keepdims": AttrSpec("bool", False, doc="keep reduced axes as size 1")},
              doc=f"{_name.removeprefix('reduce_')} over axes")
_register("softmax", (1, 1), axis_rule, ("fused",), {"axis": AttrSpec("int", -1, doc="the normalised axis")},
          doc="softmax along an axis")
_register("cumsum", (1, 1), axis_rule, ("scan",),
          {"axis": AttrSpec("int", doc="the scanned axis"),
           "exclusive": AttrSpec("bool", False, doc="exclude the current element")},
          doc="running sum along an axis")
_register("matmul", (2, 2), matmul_rule, ("linalg",),
          {"transpose_a": AttrSpec("bool", False, doc="use a's last two axes swapped"),
           "transpose_b": AttrSpec("bool", False, doc="use b's last two axes swapped")},
          operands=("a", "b"), doc="[..., M, K] x [..., K, N] with broadcast batch dims")
_register("linear", (2, 3), linear_rule, ("linalg", "fused"), operands=("x", "w", "b"),
          doc="x @ w (+ b); w is [K, N]")
_register("layernorm", (3, 3), layernorm_rule, ("norm", "fused"),
          {"axis": AttrSpec("int", -1, doc="first normalised axis"), "eps": AttrSpec("float", 1e-5, doc="variance epsilon")},
          operands=("x", "gamma", "beta"), doc="layer normalisation over the axes from `axis` on")
_register("rmsnorm", (2, 2), rmsnorm_rule, ("norm", "fused"),
          {"axis": AttrSpec("int", -1, doc="first normalised axis"), "eps": AttrSpec("float", 1e-6, doc="epsilon")},
          operands=("x", "gamma"), doc="RMS normalisation")
_register("batchnorm", (5, 5), batchnorm_rule, ("norm", "fused"), {"eps": AttrSpec("float", 1e-5, doc="epsilon")},
          operands=("x", "scale", "bias", "mean", "var"), doc="inference batch normalisation over axis 1 (NCHW)")
_register("attention", (3, 4), attention_rule, ("fused",),
          {"causal": AttrSpec("bool", False, doc="mask out future positions"),
           "scale": AttrSpec("float", None, doc="score scale; 1/sqrt(D) when absent")},
          operands=("q", "k", "v", "mask"), doc="softmax(q k^T * scale [+ mask]) v over [B, H, S, D]")
_register("reshape", (1, 1), reshape_rule, ("shape", "view", "layout"),
          {"shape": AttrSpec("dims", doc="the new shape; one -1 is inferred")}, doc="same elements, new shape (a view)")
_register("transpose", (1, 1), transpose_rule, ("shape", "layout"),
          {"perm": AttrSpec("ints", doc="result axis i is operand axis perm[i]")}, doc="permute axes (a copy)")
_register("expand", (1, 1), expand_rule, ("shape", "layout"),
          {"shape": AttrSpec("dims", doc="the broadcast target shape")}, doc="broadcast to a shape (a copy)")
_register("concat", (1, None), concat_rule, ("shape", "layout"), {"axis": AttrSpec("int", doc="the joined axis")},
          doc="join tensors along an axis")
_register("slice", (1, 1), slice_rule, ("shape", "layout"),
          {"axis": AttrSpec("int", doc="the sliced axis"), "start": AttrSpec("int", doc="first index"),
           "len": AttrSpec("int", doc="number of indices")},
          doc="a contiguous range of one axis; axis 0 is a view")
_register("gather", (2, 2), gather_rule, ("shape",), {"axis": AttrSpec("int", 0, doc="the indexed axis")},
          operands=("table", "idx"), doc="rows of table selected by integer indices (embedding lookup)")
_register("conv2d", (2, 3), conv2d_rule, ("conv",),
          {"stride": AttrSpec("ints", (1, 1), doc="[sh, sw]"),
           "padding": AttrSpec("ints", (0, 0, 0, 0), doc="[top, left, bottom, right]"),
           "dilation": AttrSpec("ints", (1, 1), doc="[dh, dw]"),
           "groups": AttrSpec("int", 1, doc="channel groups")},
          operands=("x", "w", "b"), doc="2-D convolution, NCHW input, OIHW weight")
for _name in POOL_OPS:
    _register(_name, (1, 1), pool_rule, ("pool",),
              {"kernel": AttrSpec("ints", doc="[kh, kw]"),
               "stride": AttrSpec("ints", (), doc="[sh, sw]; the kernel when absent"),
               "padding": AttrSpec("ints", (0, 0, 0, 0), doc="[top, left, bottom, right]")},
              doc=f"2-D {_name.split('_')[0]} pooling, NCHW")
_register("selective_scan", (5, 5), selective_scan_rule, ("fused", "scan"),
          {"state_size": AttrSpec("int", doc="N, the state width")},
          operands=("x", "delta", "A", "Bm", "C"), doc="Mamba selective scan over the sequence axis")
_register("fused_matmul_bias_act", (3, 3), fused_matmul_bias_act_rule, ("fused", "linalg"),
          {"activation": AttrSpec("str", "none", ("none", "gelu", "silu"), doc="activation after the bias")},
          operands=("x", "w", "b"), doc="act(x @ w + b), made by fuse")
_register("fused_residual_layernorm", (4, 4), fused_residual_norm_rule, ("fused", "norm"),
          {"eps": AttrSpec("float", 1e-5, doc="variance epsilon")},
          operands=("x", "res", "gamma", "beta"), doc="layernorm(x + res), made by fuse")
_register("fused_residual_rmsnorm", (3, 3), fused_residual_norm_rule, ("fused", "norm"),
          {"eps": AttrSpec("float", 1e-6, doc="epsilon")},
          operands=("x", "res", "gamma"), doc="rmsnorm(x + res), made by fuse")

del _name
