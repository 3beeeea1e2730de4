"""Lowerings of core ATen's reductions, scans and softmaxes.

IR reductions take one axis. A reduction over several dims moves them last (transpose), merges them
into one (reshape) and reduces that axis once, so the kernel sees one reduction; when the merged size
would not be one dim (a symbolic dim among them) it reduces axis by axis instead, which gives the same
sum/max/min/prod/mean because every group has the same size. A reduction over all dims reshapes to
1-D first. keepdim is restored with a reshape.
"""
from __future__ import annotations

import math

from .aten_math import as_bool, operand
from .ir_builder import Lazy

REDUCE_OPS = {"sum": "reduce_sum", "mean": "reduce_mean", "amax": "reduce_max", "amin": "reduce_min",
              "prod": "reduce_prod", "max": "reduce_max", "min": "reduce_min"}


def normalize_dims(dims, rank: int) -> list:
    """Sorted non-negative axes; None or [] means every axis."""
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return sorted({d + rank if d < 0 else d for d in dims})


def reduce(cv, x, op: str, dims, keepdim: bool):
    """`op` (an IR reduction) of x over `dims`."""
    rank = x.type.rank
    dims = normalize_dims(dims, rank)
    if rank == 0:
        return x
    if len(dims) == 1:
        return cv.b.op(op, [x], {"axis": dims[0], "keepdim": int(keepdim)})
    kept = [d for d in range(rank) if d not in dims]
    reduced_sizes = [x.type.shape[d] for d in dims]
    kept_shape = tuple(x.type.shape[d] for d in kept)
    keep_shape = tuple(1 if d in dims else x.type.shape[d] for d in range(rank))
    symbolic = [s for s in reduced_sizes if not isinstance(s, int)]
    statics = math.prod(s for s in reduced_sizes if isinstance(s, int))
    merged = statics if not symbolic else symbolic[0] if len(symbolic) == 1 and statics == 1 else None
    if merged is not None:
        moved = cv.b.transpose(x, kept + dims)
        flat = cv.b.reshape(moved, kept_shape + (merged,))
        out = cv.b.op(op, [flat], {"axis": len(kept), "keepdim": 0})
        return cv.b.reshape(out, keep_shape) if keepdim else out
    for d in reversed(dims):
        x = cv.b.op(op, [x], {"axis": d, "keepdim": 1})
    return x if keepdim else cv.b.reshape(x, kept_shape)


def reduced_count(cv, x, dims) -> int:
    """How many elements each reduction group holds (static only)."""
    sizes = [x.type.shape[d] for d in normalize_dims(dims, x.type.rank)]
    if not all(isinstance(s, int) for s in sizes):
        cv.fail("a mean or variance over a symbolic dim needs its size as a number, which the IR cannot express")
    return math.prod(sizes)


def _reduction(name):
    def lower(cv, node, a):
        out = cv.type_of(node).dtype
        x = operand(cv, a["self"], out)  # sum(dtype=...), sum of bools -> the result dtype first
        return reduce(cv, x, REDUCE_OPS[name], a.get("dim"), bool(a.get("keepdim", False)))
    return lower


def _value_and_index(name):
    # max.dim / min.dim -> (values, indices): a reduction and an arg-reduction, each made only if used.
    def lower(cv, node, a):
        x = cv.value(a["self"])
        attrs = {"axis": a["dim"], "keepdim": int(a["keepdim"])}
        return (Lazy(lambda: cv.b.op(REDUCE_OPS[name], [x], attrs)),
                Lazy(lambda: cv.b.op("arg" + name, [x], attrs)))
    return lower


def _arg_reduction(name):
    # argmax/argmin with dim=None look at the flattened tensor.
    def lower(cv, node, a):
        x = cv.value(a["self"])
        dim, keepdim = a["dim"], bool(a["keepdim"])
        if dim is not None:
            return cv.b.op(name, [x], {"axis": dim, "keepdim": int(keepdim)})
        flat = cv.b.reshape(x, (_flat_size(cv, x),))
        out = cv.b.op(name, [flat], {"axis": 0, "keepdim": 0})
        return cv.b.reshape(out, (1,) * x.type.rank) if keepdim else out
    return lower


def _flat_size(cv, x):
    symbolic = [d for d in x.type.shape if not isinstance(d, int)]
    statics = math.prod(d for d in x.type.shape if isinstance(d, int))
    if not symbolic:
        return statics
    if len(symbolic) == 1 and statics == 1:
        return symbolic[0]
    cv.fail(f"flattening {x.type} needs a symbolic size other than T or L")


def wide(cv, x):
    """x in f32 when it is f16/bf16: sums of squares overflow half precision where torch, accumulating
    in f32, does not."""
    return cv.b.cast(x, "f32") if x.type.dtype in ("f16", "bf16") else x


def variance(cv, x, dims, correction: float, keepdim: bool):
    """var = sum((x - mean)^2) / (N - correction), as (var, mean) in x's dtype (computed in f32 for
    half types), both keepdim as asked."""
    dtype, x = x.type.dtype, wide(cv, x)
    mean = reduce(cv, x, "reduce_mean", dims, True)
    centered = cv.b.op("sub", [x, mean])
    total = reduce(cv, cv.b.op("mul", [centered, centered]), "reduce_sum", dims, keepdim)
    count = reduced_count(cv, x, dims) - correction
    var = cv.b.op("div", [total, cv.b.const(count, x.type.dtype)])
    if not keepdim:
        mean = cv.b.reshape(mean, var.type.shape)
    return cv.b.cast(var, dtype), cv.b.cast(mean, dtype)


def _correction(cv, a) -> float:
    correction = a.get("correction")
    if correction is None:
        return 0.0 if a.get("unbiased") is False else 1.0
    return float(cv.scalar(correction))


def _var(cv, node, a):
    x = cv.value(a["self"])
    return variance(cv, x, a["dim"], _correction(cv, a), bool(a["keepdim"]))[0]


def _std(cv, node, a):
    x = cv.value(a["self"])
    return cv.b.op("sqrt", [variance(cv, x, a["dim"], _correction(cv, a), bool(a["keepdim"]))[0]])


def _var_mean(cv, node, a):
    x = cv.value(a["self"])
    return variance(cv, x, a["dim"], _correction(cv, a), bool(a["keepdim"]))


def _vector_norm(cv, node, a):
    # ord 2: sqrt(sum(x^2)); 1: sum|x|; inf: max|x|; -inf: min|x|; 0: count of nonzeros;
    # p: sum(|x|^p)^(1/p).
    # Sums are taken in f32 for half types, as torch accumulates them.
    out = cv.type_of(node).dtype
    x = wide(cv, operand(cv, a["self"], out))
    acc = x.type.dtype
    p = float(cv.scalar(a["ord"]))
    dims, keepdim = a["dim"], bool(a["keepdim"])
    magnitude = cv.b.op("abs", [x])
    if p == 2:
        norm = cv.b.op("sqrt", [reduce(cv, cv.b.op("mul", [x, x]), "reduce_sum", dims, keepdim)])
    elif p == 1:
        norm = reduce(cv, magnitude, "reduce_sum", dims, keepdim)
    elif math.isinf(p):
        norm = reduce(cv, magnitude, "reduce_max" if p > 0 else "reduce_min", dims, keepdim)
    elif p == 0:
        nonzero = cv.b.cast(cv.b.op("ne", [x, cv.b.const(0, acc)]), acc)
        norm = reduce(cv, nonzero, "reduce_sum", dims, keepdim)
    else:
        powered = cv.b.op("pow", [magnitude, cv.b.const(p, acc)])
        norm = cv.b.op("pow", [reduce(cv, powered, "reduce_sum", dims, keepdim), cv.b.const(1 / p, acc)])
    return cv.b.cast(norm, out)


def _any_all(name):
    # any = max over x != 0, all = min over x != 0 (as i32, since IR reductions take numbers).
    def lower(cv, node, a):
        flags = cv.b.cast(as_bool(cv, a["self"]), "i32")
        op = "reduce_max" if name == "any" else "reduce_min"
        return cv.b.cast(reduce(cv, flags, op, a.get("dim"), bool(a.get("keepdim", False))), "bool")
    return lower


def _scan(op):
    def lower(cv, node, a):
        x = operand(cv, a["self"], cv.type_of(node).dtype)
        return cv.b.op(op, [x], {"axis": a["dim"]})
    return lower


def _softmax(op):
    # _softmax(x, dim, half_to_float): half_to_float computes and returns f32.
    def lower(cv, node, a):
        x = operand(cv, a["self"], cv.type_of(node).dtype)
        return cv.b.op(op, [x], {"axis": a["dim"]})
    return lower


LOWERINGS = {
    "aten.sum.dim_IntList": _reduction("sum"), "aten.sum.default": _reduction("sum"),
    "aten.mean.dim": _reduction("mean"), "aten.mean.default": _reduction("mean"),
    "aten.prod.dim_int": _reduction("prod"), "aten.prod.default": _reduction("prod"),
    "aten.amax.default": _reduction("amax"), "aten.amin.default": _reduction("amin"),
    "aten.max.default": _reduction("max"), "aten.min.default": _reduction("min"),
    "aten.max.dim": _value_and_index("max"), "aten.min.dim": _value_and_index("min"),
    "aten.argmax.default": _arg_reduction("argmax"), "aten.argmin.default": _arg_reduction("argmin"),
    "aten.var.correction": _var, "aten.var.dim": _var, "aten.std.correction": _std, "aten.std.dim": _std,
    "aten.var_mean.correction": _var_mean, "aten.var_mean.dim": _var_mean,
    "aten.linalg_vector_norm.default": _vector_norm,
    "aten.any.dim": _any_all("any"), "aten.any.dims": _any_all("any"), "aten.any.default": _any_all("any"),
    "aten.all.dim": _any_all("all"), "aten.all.dims": _any_all("all"), "aten.all.default": _any_all("all"),
    "aten.cumsum.default": _scan("cumsum"), "aten.cumprod.default": _scan("cumprod"),
    "aten._softmax.default": _softmax("softmax"), "aten._log_softmax.default": _softmax("log_softmax"),
}
