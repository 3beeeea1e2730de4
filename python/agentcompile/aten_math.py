"""Lowerings of core ATen's pointwise ops: arithmetic, comparisons, logic, activations.

Torch promotes operand types implicitly; the IR does not, so every binary lowering first decides the
dtype torch computes in (torch.result_type over the operands: 0-dim tensors and Python numbers only
promote across categories) and casts both operands to it. A Python number becomes a scalar `constant`
of that dtype. Activations the IR lacks are written in its primitives, each lowering saying how (softplus, mish,
hardsigmoid, hardswish, softsign and logsigmoid never get here: core ATen decomposes them already).
"""
from __future__ import annotations

import math

import torch

from .dtypes import promoted_dtype

ARITHMETIC = ("add", "sub", "mul", "div", "maximum", "minimum", "pow")
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
UNARY = {"exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1", "sqrt": "sqrt", "rsqrt": "rsqrt",
         "tanh": "tanh", "sigmoid": "sigmoid", "relu": "relu", "erf": "erf", "sin": "sin", "cos": "cos",
         "reciprocal": "reciprocal", "floor": "floor", "ceil": "ceil", "neg": "neg", "abs": "abs",
         "sign": "sign", "sgn": "sign", "silu": "silu"}


def operand(cv, x, dtype: str):
    """An operand as an IR value of `dtype`: a tensor is cast, a number becomes a scalar constant."""
    if isinstance(x, torch.fx.Node) and isinstance(x.meta.get("val"), torch.Tensor):
        return cv.b.cast(cv.value(x), dtype)
    return cv.b.const(cv.scalar(x), dtype)


def binary(cv, op: str, a, b, dtype: str):
    return cv.b.op(op, [operand(cv, a, dtype), operand(cv, b, dtype)])


def _arith(op):
    def lower(cv, node, a):
        out = cv.type_of(node).dtype
        lhs, rhs = a["self"], a["other"] if "other" in a else a["exponent"]
        alpha = cv.scalar(a.get("alpha", 1))
        if alpha not in (None, 1):
            # add/sub with alpha: x + alpha * y
            rhs_value = cv.b.op("mul", [operand(cv, rhs, out), cv.b.const(alpha, out)])
            return cv.b.op(op, [operand(cv, lhs, out), rhs_value])
        if op in ("maximum", "minimum") and out == "i32":
            # IR maximum/minimum take floats (they propagate NaN); on integers they are a select.
            x, y = operand(cv, lhs, out), operand(cv, rhs, out)
            return cv.b.op("where", [cv.b.op("gt" if op == "maximum" else "lt", [x, y]), x, y])
        return binary(cv, op, lhs, rhs, out)
    return lower


def _div_mode(cv, node, a):
    # div with rounding_mode: "trunc" and "floor" of the quotient. IR int division truncates already;
    # floats truncate as floor(|q|) * sign(q), floor with floor; ints floor by stepping a truncated
    # quotient down when the remainder's sign differs from the divisor's.
    out = cv.type_of(node).dtype
    mode = a["rounding_mode"]
    x, y = operand(cv, a["self"], out), operand(cv, a["other"], out)
    q = cv.b.op("div", [x, y])
    if mode is None:
        return q
    if out != "i32":
        if mode == "floor":
            return cv.b.op("floor", [q])
        return cv.b.op("mul", [cv.b.op("floor", [cv.b.op("abs", [q])]), cv.b.op("sign", [q])])
    if mode == "trunc":
        return q
    zero = cv.b.const(0, out)
    remainder = cv.b.op("sub", [x, cv.b.op("mul", [q, y])])
    signs_differ = cv.b.op("ne", [cv.b.op("lt", [remainder, zero]), cv.b.op("lt", [y, zero])])
    step_down = cv.b.op("logical_and", [cv.b.op("ne", [remainder, zero]), signs_differ])
    return cv.b.op("sub", [q, cv.b.cast(step_down, out)])


def _remainder(cv, node, a):
    # remainder(x, y) = x - floor(x / y) * y (Python's %, the sign of y), floats only.
    out = cv.type_of(node).dtype
    if out == "i32":
        cv.fail("integer remainder is not supported")
    x, y = operand(cv, a["self"], out), operand(cv, a["other"], out)
    return cv.b.op("sub", [x, cv.b.op("mul", [cv.b.op("floor", [cv.b.op("div", [x, y])]), y])])


def _fmod(cv, node, a):
    # fmod(x, y) = x - trunc(x / y) * y (C's fmod, the sign of x), floats only.
    out = cv.type_of(node).dtype
    if out == "i32":
        cv.fail("integer fmod is not supported")
    x, y = operand(cv, a["self"], out), operand(cv, a["other"], out)
    return cv.b.op("sub", [x, cv.b.op("mul", [trunc_value(cv, cv.b.op("div", [x, y])), y])])


def _compare(op):
    def lower(cv, node, a):
        dtype = promoted_dtype(a["self"], a["other"])
        return binary(cv, op, a["self"], a["other"], dtype)
    return lower


def as_bool(cv, x):
    """x != 0 for a non-bool tensor."""
    v = cv.value(x)
    if v.type.dtype == "bool":
        return v
    return cv.b.op("ne", [v, cv.b.const(0, v.type.dtype)])


def _logical(op):
    def lower(cv, node, a):
        if op.startswith("bitwise") and any(cv.value(t).type.dtype != "bool" for t in (a["self"], a["other"])):
            cv.fail(f"{op} on integers has no IR equivalent (only on bools)")
        x, y = as_bool(cv, a["self"]), as_bool(cv, a["other"])
        kind = op.split("_")[1]
        if kind == "xor":
            return cv.b.op("ne", [x, y])
        return cv.b.op("logical_" + kind, [x, y])
    return lower


def _logical_not(cv, node, a):
    return cv.b.op("logical_not", [as_bool(cv, a["self"])])


def _bitwise_not(cv, node, a):
    if cv.value(a["self"]).type.dtype != "bool":
        cv.fail("bitwise_not on integers has no IR equivalent (only on bools)")
    return cv.b.op("logical_not", [cv.value(a["self"])])


def _where(cv, node, a):
    out = cv.type_of(node).dtype
    cond = as_bool(cv, a["condition"])
    return cv.b.op("where", [cond, operand(cv, a["self"], out), operand(cv, a["other"], out)])


def _masked_fill(cv, node, a):
    out = cv.type_of(node).dtype
    return cv.b.op("where", [as_bool(cv, a["mask"]), operand(cv, a["value"], out), operand(cv, a["self"], out)])


def _unary(op):
    def lower(cv, node, a):
        out = cv.type_of(node).dtype
        return cv.b.op(op, [operand(cv, a["self"], out)])
    return lower


def _round(cv, node, a):
    if a.get("decimals", 0):
        cv.fail("round with decimals is not supported")
    return cv.b.op("round", [operand(cv, a["self"], cv.type_of(node).dtype)])


def _gelu(cv, node, a):
    return cv.b.op("gelu", [cv.value(a["self"])], {"approximate": a["approximate"]})


def _leaky_relu(cv, node, a):
    return cv.b.op("leaky_relu", [cv.value(a["self"])], {"slope": float(cv.scalar(a["negative_slope"]))})


def _clamp(lo_key, hi_key):
    # clamp/hardtanh with numbers -> clamp {lo, hi}; with tensor bounds -> maximum/minimum.
    def lower(cv, node, a):
        out = cv.type_of(node).dtype
        x = operand(cv, a["self"], out)
        lo, hi = a.get(lo_key), a.get(hi_key)
        if isinstance(lo, torch.fx.Node) or isinstance(hi, torch.fx.Node):
            if lo is not None:
                x = cv.b.op("maximum", [x, operand(cv, lo, out)])
            if hi is not None:
                x = cv.b.op("minimum", [x, operand(cv, hi, out)])
            return x
        attrs = {k: float(cv.scalar(v)) for k, v in (("lo", lo), ("hi", hi)) if v is not None}
        if out == "i32":  # IR clamp takes floats; on integers each bound is a select
            for key, bound in attrs.items():
                limit = cv.b.const(bound, out)
                x = cv.b.op("where", [cv.b.op("lt" if key == "lo" else "gt", [x, limit]), limit, x])
            return x
        return cv.b.op("clamp", [x], attrs) if attrs else x
    return lower


def _elu(cv, node, a):
    # elu(x) = scale * (x > 0 ? x : alpha * expm1(input_scale * x)); SELU is elu with its constants.
    x = cv.value(a["self"])
    dt = x.type.dtype
    alpha, scale, input_scale = (float(cv.scalar(a[k])) for k in ("alpha", "scale", "input_scale"))
    negative = cv.b.op("mul", [cv.b.op("expm1", [cv.b.op("mul", [x, cv.b.const(input_scale, dt)])]),
                               cv.b.const(alpha * scale, dt)])
    positive = cv.b.op("mul", [x, cv.b.const(scale, dt)]) if scale != 1 else x
    return cv.b.op("where", [cv.b.op("gt", [x, cv.b.const(0, dt)]), positive, negative])


def _fmax_fmin(op):
    # fmax/fmin ignore a NaN operand (maximum/minimum propagate it): isnan(x) ? y : isnan(y) ? x : op(x, y)
    def lower(cv, node, a):
        out = cv.type_of(node).dtype
        x, y = operand(cv, a["self"], out), operand(cv, a["other"], out)
        both = cv.b.op(op, [x, y])
        return cv.b.op("where", [cv.b.op("ne", [x, x]), y, cv.b.op("where", [cv.b.op("ne", [y, y]), x, both])])
    return lower


def _isnan(cv, node, a):
    # NaN is the one value that differs from itself.
    x = cv.value(a["self"])
    return cv.b.op("ne", [x, x])


def _isinf(cv, node, a):
    x = cv.value(a["self"])
    return cv.b.op("eq", [cv.b.op("abs", [x]), cv.b.const(math.inf, x.type.dtype)])


def trunc_value(cv, x):
    # trunc(x) = x < 0 ? ceil(x) : floor(x)
    negative = cv.b.op("lt", [x, cv.b.const(0, x.type.dtype)])
    return cv.b.op("where", [negative, cv.b.op("ceil", [x]), cv.b.op("floor", [x])])


def _trunc(cv, node, a):
    return trunc_value(cv, cv.value(a["self"]))


def _scaled_unary(op, factor, pre=False):
    # exp2(x) = exp(x * ln 2); log2(x) = log(x) / ln 2; log10(x) = log(x) / ln 10
    def lower(cv, node, a):
        out = cv.type_of(node).dtype
        x = operand(cv, a["self"], out)
        if pre:
            return cv.b.op(op, [cv.b.op("mul", [x, cv.b.const(factor, out)])])
        return cv.b.op("mul", [cv.b.op(op, [x]), cv.b.const(factor, out)])
    return lower


def _tan(cv, node, a):
    # tan = sin / cos
    x = operand(cv, a["self"], cv.type_of(node).dtype)
    return cv.b.op("div", [cv.b.op("sin", [x]), cv.b.op("cos", [x])])


LOWERINGS = {}
for _name in ARITHMETIC:
    for _overload in ("Tensor", "Scalar", "default", "Tensor_Scalar", "Tensor_Tensor"):
        LOWERINGS[f"aten.{_name}.{_overload}"] = _arith(_name)
LOWERINGS["aten.div.Tensor_mode"] = _div_mode
LOWERINGS["aten.div.Scalar_mode"] = _div_mode
LOWERINGS["aten.remainder"] = _remainder
LOWERINGS["aten.fmod"] = _fmod
for _name in COMPARISONS:
    LOWERINGS[f"aten.{_name}"] = _compare(_name)
for _name in ("logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor"):
    LOWERINGS[f"aten.{_name}"] = _logical(_name)
for _name, _op in UNARY.items():
    LOWERINGS[f"aten.{_name}.default"] = _unary(_op)
LOWERINGS.update({
    "aten.logical_not": _logical_not, "aten.bitwise_not": _bitwise_not,
    "aten.where.self": _where, "aten.masked_fill": _masked_fill,
    "aten.round.default": _round, "aten.round.decimals": _round,
    "aten.gelu.default": _gelu, "aten.leaky_relu.default": _leaky_relu,
    "aten.clamp": _clamp("min", "max"), "aten.clamp_min": _clamp("min", None), "aten.clamp_max": _clamp(None, "max"),
    "aten.hardtanh.default": _clamp("min_val", "max_val"),
    "aten.elu.default": _elu,
    "aten.fmax.default": _fmax_fmin("maximum"), "aten.fmin.default": _fmax_fmin("minimum"),
    "aten.isnan.default": _isnan, "aten.isinf.default": _isinf, "aten.trunc.default": _trunc,
    "aten.exp2.default": _scaled_unary("exp", math.log(2.0), pre=True),
    "aten.log2.default": _scaled_unary("log", 1 / math.log(2.0)),
    "aten.log10.default": _scaled_unary("log", 1 / math.log(10.0)),
    "aten.tan.default": _tan,
})
