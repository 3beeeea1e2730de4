"""Result types of IR ops, the Python mirror of src/ir/infer.cpp.

The capture types every node it writes with these rules, so a lowering that would not verify in C++
fails here, at the ATen node that caused it, with its source line. Keep this in step with infer.cpp;
the checker test (python/tests) catches any drift, because the C++ verifier re-infers every type.
"""
from __future__ import annotations

from .ir_text import FLOAT_DTYPES, TensorType

BINARY = ("add", "sub", "mul", "div", "pow", "maximum", "minimum",
          "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or")
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
FLOAT_UNARY = ("silu", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "erf",
               "sin", "cos", "reciprocal", "floor", "ceil", "round", "leaky_relu", "clamp", "gelu")
NUMERIC_UNARY = ("neg", "abs", "sign")
REDUCTIONS = ("reduce_sum", "reduce_max", "reduce_min", "reduce_mean", "reduce_prod", "argmax", "argmin")


class IRTypeError(Exception):
    """A node the C++ verifier would reject; the message names the op and what disagrees."""


def _fail(op: str, what: str):
    raise IRTypeError(f"{op}: {what}")


def _numeric(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES or dtype == "i32"


def _axis(op: str, axis: int, rank: int, t: TensorType) -> int:
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < rank:
        _fail(op, f"axis {axis} out of range for {t}")
    return a


def broadcast_shapes(op: str, a: tuple, b: tuple) -> tuple:
    """Numpy broadcasting over trailing dims; only a static 1 stretches."""
    rank = max(len(a), len(b))
    a = (None,) * (rank - len(a)) + tuple(a)
    b = (None,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x is None or (x == 1 and y is not None):
            out.append(y)
        elif y is None or y == 1 or x == y:
            out.append(x)
        else:
            _fail(op, f"cannot broadcast {list(a)} with {list(b)}")
    return tuple(out)


def same_elements(a: tuple, b: tuple) -> bool:
    def count(shape, sym):
        return sum(1 for d in shape if d == sym)
    statics = [1, 1]
    for i, shape in enumerate((a, b)):
        for d in shape:
            if isinstance(d, int):
                statics[i] *= d
    return statics[0] == statics[1] and all(count(a, s) == count(b, s) for s in ("T", "L"))


def infer(op: str, ins: list, attrs: dict, params: dict, states: dict) -> TensorType:
    """The result type of `op` over operand types `ins`; params/states map names to types."""
    if op == "weight":
        name = attrs["name"]
        if name not in params:
            _fail(op, f"module has no parameter named '{name}'")
        return params[name]
    if op in BINARY:
        a, b = ins
        if a.dtype != b.dtype:
            _fail(op, f"dtypes differ: {a} vs {b}")
        logical = op in ("logical_and", "logical_or")
        if logical and a.dtype != "bool":
            _fail(op, f"needs bool operands, got {a}")
        if op in ("pow", "maximum", "minimum") and a.dtype not in FLOAT_DTYPES:
            _fail(op, f"needs float operands, got {a}")
        if not logical and op not in COMPARISONS and not _numeric(a.dtype):
            _fail(op, f"needs float or i32 operands, got {a}")
        shape = broadcast_shapes(op, a.shape, b.shape)
        return TensorType("bool" if logical or op in COMPARISONS else a.dtype, shape)
    if op == "where":
        c, a, b = ins
        if c.dtype != "bool":
            _fail(op, f"condition must be bool, got {c}")
        if a.dtype != b.dtype:
            _fail(op, f"dtypes differ: {a} vs {b}")
        return TensorType(a.dtype, broadcast_shapes(op, c.shape, broadcast_shapes(op, a.shape, b.shape)))
    if op in FLOAT_UNARY:
        if ins[0].dtype not in FLOAT_DTYPES:
            _fail(op, f"needs a float operand, got {ins[0]}")
        return ins[0]
    if op in NUMERIC_UNARY:
        if not _numeric(ins[0].dtype):
            _fail(op, f"needs a float or i32 operand, got {ins[0]}")
        return ins[0]
    if op == "logical_not":
        if ins[0].dtype != "bool":
            _fail(op, f"needs a bool operand, got {ins[0]}")
        return ins[0]
    if op == "cast":
        return TensorType(attrs["dtype"], ins[0].shape)
    if op == "embedding":
        table, ids = ins
        if table.rank != 2 or ids.dtype != "i32" or ids.rank != 1:
            _fail(op, f"expects table[V,H] and ids i32[N], got {table} and {ids}")
        return TensorType(table.dtype, (ids.shape[0], table.shape[1]))
    if op == "matmul":
        a, b = ins
        if a.rank < 2 or a.rank != b.rank:
            _fail(op, f"operands must have equal rank >= 2, got {a} and {b}")
        if a.shape[:-2] != b.shape[:-2]:
            _fail(op, f"batch dims differ: {a} vs {b}")
        if a.shape[-1] != b.shape[-2]:
            _fail(op, f"inner dims differ: {a} vs {b}")
        if a.dtype != b.dtype:
            _fail(op, f"dtypes differ: {a} vs {b}")  # infer.cpp does not check; the kernels need it
        return TensorType(a.dtype, a.shape[:-1] + (b.shape[-1],))
    if op == "layer_norm":
        x = ins[0]
        if x.rank == 0 or x.dtype not in FLOAT_DTYPES:
            _fail(op, f"x must be a float tensor of rank >= 1, got {x}")
        for t in ins[1:]:
            if t.shape != (x.shape[-1],):
                _fail(op, f"{t} does not match last axis of {x}")
        return x
    if op in ("reshape", "view"):
        target = tuple(attrs["shape"])
        if not same_elements(ins[0].shape, target):
            _fail(op, f"cannot reshape {ins[0]} to {list(target)}")
        return TensorType(ins[0].dtype, target)
    if op == "transpose":
        perm = tuple(attrs["perm"])
        if sorted(perm) != list(range(ins[0].rank)):
            _fail(op, f"perm {list(perm)} is not a permutation for {ins[0]}")
        return TensorType(ins[0].dtype, tuple(ins[0].shape[p] for p in perm))
    if op == "slice":
        x = ins[0]
        axis = _axis(op, attrs["axis"], x.rank, x)
        start, length = attrs["start"], attrs["length"]
        dim = x.shape[axis]
        if length < 1:
            _fail(op, "attr length must be >= 1")
        if isinstance(dim, int):
            begin = start + dim if start < 0 else start
            if begin < 0 or length > dim - begin:
                _fail(op, f"slice [{start}, +{length}) out of range of {x}")
        elif -length < start < 0:
            _fail(op, "slice from the end runs past the end")
        return TensorType(x.dtype, x.shape[:axis] + (length,) + x.shape[axis + 1:])
    if op == "broadcast":
        target = tuple(attrs["shape"])
        if broadcast_shapes(op, ins[0].shape, target) != target:
            _fail(op, f"cannot broadcast {ins[0]} to {list(target)}")
        return TensorType(ins[0].dtype, target)
    if op == "concat":
        first = ins[0]
        axis = _axis(op, attrs["axis"], first.rank, first)
        total = 0
        for t in ins:
            if t.dtype != first.dtype or t.rank != first.rank or any(
                    t.shape[d] != first.shape[d] for d in range(first.rank) if d != axis):
                _fail(op, f"operand {t} does not match {first}")
            if not isinstance(t.shape[axis], int):
                _fail(op, f"concat along a symbolic dim ({t}) is not supported")
            total += t.shape[axis]
        return TensorType(first.dtype, first.shape[:axis] + (total,) + first.shape[axis + 1:])
    if op == "flip":
        _axis(op, attrs["axis"], ins[0].rank, ins[0])
        return ins[0]
    if op == "constant":
        shape = tuple(attrs["shape"])
        if not all(isinstance(d, int) for d in shape):
            _fail(op, f"attr shape must be static, got {list(shape)}")
        if ("value" in attrs) == ("values" in attrs):
            _fail(op, "needs exactly one of attr value and attr values")
        if "values" in attrs and len(attrs["values"]) != TensorType("f32", shape).static_elements():
            _fail(op, f"attr values holds {len(attrs['values'])} numbers for shape {list(shape)}")
        return TensorType(attrs["dtype"], shape)
    if op == "arange":
        if attrs["dtype"] == "bool":
            _fail(op, "attr dtype must be i32 or a float")
        return TensorType(attrs["dtype"], tuple(attrs["length"]))
    if op == "random_uniform":
        seed = attrs.get("seed")
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**53:
            _fail(op, f"attr seed must be an integer in [0, 2^53), got {seed!r}")
        return TensorType("f32", tuple(attrs["shape"]))
    if op == "index_select":
        x, idx = ins
        axis = _axis(op, attrs["axis"], x.rank, x)
        if idx.dtype != "i32" or idx.rank != 1:
            _fail(op, f"index must be i32[n], got {idx}")
        return TensorType(x.dtype, x.shape[:axis] + (idx.shape[0],) + x.shape[axis + 1:])
    if op == "gather":
        x, idx = ins
        _axis(op, attrs["axis"], x.rank, x)
        if idx.dtype != "i32" or idx.rank != x.rank:
            _fail(op, f"index must be i32 of x's rank, got {idx} for {x}")
        return TensorType(x.dtype, idx.shape)
    if op == "index_copy":
        src, idx = ins
        state = states.get(attrs["state"])
        if state is None:
            _fail(op, f"module has no state named '{attrs['state']}'")
        axis = _axis(op, attrs["axis"], state.rank, state)
        if idx.dtype != "i32" or idx.rank != 1:
            _fail(op, f"index must be i32[n], got {idx}")
        expected = TensorType(state.dtype, state.shape[:axis] + (idx.shape[0],) + state.shape[axis + 1:])
        if src != expected:
            _fail(op, f"source {src} does not fit state {attrs['state']} {state} (expected {expected})")
        return state
    if op == "sdpa":
        return _infer_sdpa(ins, attrs)
    if op in ("softmax", "log_softmax", "cumsum", "cumprod"):
        x = ins[0]
        _axis(op, attrs.get("axis", -1), x.rank, x)
        ok = x.dtype in FLOAT_DTYPES if op in ("softmax", "log_softmax") else _numeric(x.dtype)
        if not ok:
            _fail(op, f"cannot apply to {x}")
        return x
    if op in REDUCTIONS:
        x = ins[0]
        axis = _axis(op, attrs.get("axis", -1), x.rank, x)
        ok = x.dtype in FLOAT_DTYPES if op == "reduce_mean" else _numeric(x.dtype)
        if not ok:
            _fail(op, f"cannot reduce {x}")
        shape = list(x.shape)
        if attrs.get("keepdim", 0):
            shape[axis] = 1
        else:
            del shape[axis]
        return TensorType("i32" if op in ("argmax", "argmin") else x.dtype, tuple(shape))
    _fail(op, "the capture has no type rule for this op")


def _infer_sdpa(ins: list, attrs: dict) -> TensorType:
    q, k, v = ins[:3]
    r = q.rank
    if r < 3 or k.rank != r or v.rank != r:
        _fail("sdpa", f"expects q[..., NH, S, D], k and v of the same rank >= 3, got {q}, {k}, {v}")
    if q.dtype not in FLOAT_DTYPES or k.dtype != q.dtype or v.dtype != q.dtype:
        _fail("sdpa", "q, k and v must share one float dtype")
    if q.shape[:-3] != k.shape[:-3] or q.shape[:-3] != v.shape[:-3]:
        _fail("sdpa", f"batch dims differ: {q} vs {k}")
    if q.shape[-1] != k.shape[-1]:
        _fail("sdpa", f"head dims of q and k differ: {q} vs {k}")
    if k.shape[-2] != v.shape[-2] or k.shape[-3] != v.shape[-3]:
        _fail("sdpa", f"k and v disagree: {k} vs {v}")
    heads, kv_heads = q.shape[-3], k.shape[-3]
    if attrs.get("gqa", 0):
        if not (isinstance(heads, int) and isinstance(kv_heads, int) and kv_heads > 0 and heads % kv_heads == 0):
            _fail("sdpa", f"query heads must be a multiple of kv heads: {q} vs {k}")
    elif heads != kv_heads:
        _fail("sdpa", f"query and key heads differ without attr gqa: {q} vs {k}")
    if len(ins) == 4:
        mask = ins[3]
        if mask.dtype not in ("bool", q.dtype):
            _fail("sdpa", f"mask must be bool or q's dtype, got {mask}")
        scores = q.shape[:-1] + (k.shape[-2],)
        if broadcast_shapes("sdpa", mask.shape, scores) != scores:
            _fail("sdpa", f"mask {mask} does not broadcast to {list(scores)}")
    return TensorType(q.dtype, q.shape[:-1] + (v.shape[-1],))

