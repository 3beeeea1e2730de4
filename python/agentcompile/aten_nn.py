"""Lowerings of core ATen's matmuls, gathers, attention, cache writes, norms and pools.

Norms the IR has no node for are written in its primitives: layer_norm covers native_layer_norm over
one axis (several normalized dims are merged into one by a reshape) and group norm (a reshape to
[N, G, rest] normalized without affine, then the per-channel affine); batch norm in training mode uses
the batch's statistics (mean and biased variance over every dim but the channel), in eval mode the
running ones. Statistics outputs (mean, rstd) are computed only when something reads them.
"""
from __future__ import annotations

import math

import torch

from .aten_layout import slice_axis
from .aten_math import operand
from .aten_reduce import reduce, variance
from .ir_builder import Lazy


# -- matmuls --------------------------------------------------------------------------------------------
def _mm(cv, node, a):
    # mm / bmm: both operands already have equal ranks (2 / 3).
    out = cv.type_of(node).dtype
    return cv.b.op("matmul", [operand(cv, a["self"], out), operand(cv, a["mat2"], out)])


def _addmm(cv, node, a):
    # addmm / baddbmm: beta * bias + alpha * (mat1 @ mat2)
    out = cv.type_of(node).dtype
    first, second = ("mat1", "mat2") if "mat1" in a else ("batch1", "batch2")
    product = cv.b.op("matmul", [operand(cv, a[first], out), operand(cv, a[second], out)])
    alpha, beta = cv.scalar(a["alpha"]), cv.scalar(a["beta"])
    if alpha != 1:
        product = cv.b.op("mul", [product, cv.b.const(alpha, out)])
    if beta == 0:
        return product
    bias = operand(cv, a["self"], out)
    if beta != 1:
        bias = cv.b.op("mul", [bias, cv.b.const(beta, out)])
    return cv.b.op("add", [product, bias])


# -- gathers --------------------------------------------------------------------------------------------
def flat_index(cv, index):
    """An index tensor as i32[n] (rank 0 or > 1 is reshaped to 1-D)."""
    idx = cv.b.cast(cv.value(index), "i32")
    if idx.type.rank == 1:
        return idx
    n = math.prod(d for d in idx.type.shape if isinstance(d, int))
    symbols = [d for d in idx.type.shape if not isinstance(d, int)]
    if symbols and (len(symbols) > 1 or n != 1):
        cv.fail(f"an index of shape {idx.type} cannot be flattened to one T or L dim")
    return cv.b.reshape(idx, (symbols[0] if symbols else n,))


def _embedding(cv, node, a):
    # embedding(table, ids): ids flattened to i32[N], the rows gathered, the ids' shape restored.
    table = cv.value(a["weight"])
    rows = cv.b.op("embedding", [table, flat_index(cv, a["indices"])])
    return cv.b.reshape(rows, cv.type_of(node).shape)


def _index_select(cv, node, a):
    x = cv.value(a["self"])
    out = cv.b.op("index_select", [x, flat_index(cv, a["index"])], {"axis": a["dim"]})
    return cv.b.reshape(out, cv.type_of(node).shape)


def _gather(cv, node, a):
    index = cv.b.cast(cv.value(a["index"]), "i32")
    return cv.b.op("gather", [cv.value(a["self"]), index], {"axis": a["dim"]})


def _single_index(cv, indices):
    """(axis, index node) of advanced indexing with one index tensor after leading Nones."""
    tensors = [(axis, t) for axis, t in enumerate(indices) if t is not None]
    if len(tensors) != 1:
        cv.fail("advanced indexing with several index tensors has no IR equivalent")
    axis, index = tensors[0]
    if cv.meta(index).dtype == torch.bool:
        cv.fail("indexing with a boolean mask has a data-dependent shape, which the IR cannot express")
    return axis, index


def _index(cv, node, a):
    # x[..., idx] with one index tensor = index_select along its axis (idx of any rank, flattened).
    axis, index = _single_index(cv, a["indices"])
    out = cv.b.op("index_select", [cv.value(a["self"]), flat_index(cv, index)], {"axis": axis})
    return cv.b.reshape(out, cv.type_of(node).shape)


def _write_state(cv, node, target, axis, index, source):
    state = cv.state_of(target)
    if state is None:
        cv.fail(f"{node.target} into a tensor that is not a module input has no IR equivalent "
                "(index_copy only writes module states)")
    idx = flat_index(cv, index)
    state_type = cv.module.states[state]
    src_shape = state_type.shape[:axis] + idx.type.shape + state_type.shape[axis + 1:]
    src = cv.b.broadcast(cv.b.cast(cv.value(source), state_type.dtype), src_shape)
    out = cv.b.op("index_copy", [src, idx], {"state": state, "axis": axis})
    cv.wrote_state(state, out)
    return out


def _index_put(cv, node, a):
    # cache.index_put_([rows], src) -> index_copy into the state: the write stays a side effect.
    if a["accumulate"]:
        cv.fail("index_put with accumulate=True has no IR equivalent")
    axis, index = _single_index(cv, a["indices"])
    return _write_state(cv, node, a["self"], axis, index, a["values"])


def _index_copy(cv, node, a):
    x_rank = cv.meta(a["self"]).dim()
    axis = a["dim"] + x_rank if a["dim"] < 0 else a["dim"]
    return _write_state(cv, node, a["self"], axis, a["index"], a["source"])


# -- attention ------------------------------------------------------------------------------------------
def _sdpa(cv, node, a):
    q, k, v = (cv.value(a[n]) for n in ("query", "key", "value"))
    if cv.scalar(a["dropout_p"]):
        cv.fail("scaled_dot_product_attention with dropout is random; capture in eval mode")
    scale = a["scale"]
    if scale is None:
        head_dim = q.type.shape[-1]
        if not isinstance(head_dim, int):
            cv.fail("the default attention scale needs a static head dim")
        scale = 1.0 / math.sqrt(head_dim)
    attrs = {"scale": float(scale), "causal": int(bool(a["is_causal"])), "gqa": int(bool(a["enable_gqa"]))}
    operands = [q, k, v]
    if a["attn_mask"] is not None:
        mask = cv.value(a["attn_mask"])
        operands.append(mask if mask.type.dtype == "bool" else cv.b.cast(mask, q.type.dtype))
    return cv.b.op("sdpa", operands, attrs)


# -- norms ----------------------------------------------------------------------------------------------
def _merge_last(cv, x, count: int):
    """x with its last `count` dims merged into one (static)."""
    if count == 1:
        return x
    tail = x.type.shape[-count:]
    if not all(isinstance(d, int) for d in tail):
        cv.fail("normalizing over a symbolic dim is not supported")
    return cv.b.reshape(x, x.type.shape[:-count] + (math.prod(tail),))


def _stats(cv, x, eps: float, dtype: str, shape):
    """(mean, rstd) of x over its last axis, in `dtype`, reshaped to `shape`."""
    x = cv.b.cast(x, dtype)
    var, mean = variance(cv, x, [-1], 0.0, True)
    rstd = cv.b.op("rsqrt", [cv.b.op("add", [var, cv.b.const(eps, dtype)])])
    return cv.b.reshape(mean, shape), cv.b.reshape(rstd, shape)


def _layer_norm(cv, node, a):
    x = cv.value(a["input"])
    count = len(a["normalized_shape"])
    eps = float(cv.scalar(a["eps"]))
    flat = _merge_last(cv, x, count)
    affine = [_merge_last(cv, cv.b.cast(cv.value(a[n]), x.type.dtype), count) for n in ("weight", "bias")
              if a[n] is not None]
    if a["weight"] is None and a["bias"] is not None:
        cv.fail("layer norm with a bias but no weight is not supported")
    out = cv.b.reshape(cv.b.op("layer_norm", [flat, *affine], {"eps": eps}), x.type.shape)
    mean_type = cv.type_of(node.meta["val"][1])
    stats = Lazy(lambda: _stats(cv, flat, eps, mean_type.dtype, mean_type.shape))
    return out, Lazy(lambda: stats.get()[0]), Lazy(lambda: stats.get()[1])


def _group_norm(cv, node, a):
    # [N, C, *] -> [N, G, C/G * rest] normalized without affine -> [N, C, rest] * w[C, 1] + b[C, 1].
    x = cv.value(a["input"])
    n, c, groups = x.type.shape[0], x.type.shape[1], a["group"]
    rest = math.prod(x.type.shape[2:])
    eps = float(cv.scalar(a["eps"]))
    if not all(isinstance(d, int) for d in x.type.shape):
        cv.fail("group norm over symbolic dims is not supported")
    grouped = cv.b.reshape(x, (n, groups, (c // groups) * rest))
    normed = cv.b.reshape(cv.b.op("layer_norm", [grouped], {"eps": eps}), (n, c, rest))
    if a["weight"] is not None:
        normed = cv.b.op("mul", [normed, cv.b.reshape(cv.b.cast(cv.value(a["weight"]), x.type.dtype), (c, 1))])
    if a["bias"] is not None:
        normed = cv.b.op("add", [normed, cv.b.reshape(cv.b.cast(cv.value(a["bias"]), x.type.dtype), (c, 1))])
    out = cv.b.reshape(normed, x.type.shape)
    stat_type = cv.type_of(node.meta["val"][1])
    stats = Lazy(lambda: _stats(cv, grouped, eps, stat_type.dtype, stat_type.shape))
    return out, Lazy(lambda: stats.get()[0]), Lazy(lambda: stats.get()[1])


def _per_channel(cv, x, value):
    """A [C] tensor shaped [C, 1, ...] to broadcast against x[N, C, *]."""
    v = cv.b.cast(cv.value(value), x.type.dtype)
    return cv.b.reshape(v, (x.type.shape[1],) + (1,) * (x.type.rank - 2))


def _batch_norm(cv, node, a, training: bool):
    # Computed in the statistics' dtype (f32 for half inputs, as torch does), cast back at the end.
    out_dtype = cv.type_of(node.meta["val"][0]).dtype
    stat_dtype = cv.type_of(node.meta["val"][1]).dtype
    x = cv.b.cast(cv.value(a["input"]), stat_dtype)
    eps = float(cv.scalar(a["eps"]))
    dims = [0] + list(range(2, x.type.rank))
    if training:  # the batch's statistics: mean and biased variance over every dim but the channel
        var, mean = variance(cv, x, dims, 0.0, True)
    else:
        mean, var = _per_channel(cv, x, a["running_mean"]), _per_channel(cv, x, a["running_var"])
    rstd = cv.b.op("rsqrt", [cv.b.op("add", [var, cv.b.const(eps, stat_dtype)])])
    out = cv.b.op("mul", [cv.b.op("sub", [x, mean]), rstd])
    if a.get("weight") is not None:
        out = cv.b.op("mul", [out, _per_channel(cv, x, a["weight"])])
    if a.get("bias") is not None:
        out = cv.b.op("add", [out, _per_channel(cv, x, a["bias"])])
    out = cv.b.cast(out, out_dtype)
    channels = (x.type.shape[1],)
    save_mean = Lazy(lambda: cv.b.reshape(mean, channels) if training else cv.b.const(0, stat_dtype, channels))
    save_rstd = Lazy(lambda: cv.b.reshape(rstd, channels) if training else cv.b.const(0, stat_dtype, channels))
    dropped = Lazy(lambda: cv.fail("the updated running statistics of a batch norm are read; they are not captured"))
    return out, save_mean, save_rstd, dropped, dropped


def _batch_norm_functional(cv, node, a):
    return _batch_norm(cv, node, a, bool(a["training"]))


def _batch_norm_eval(cv, node, a):
    return _batch_norm(cv, node, a, False)[:3]


def _batch_norm_no_stats(cv, node, a):
    # InstanceNorm's path: batch statistics of an input torch already reshaped to [1, N*C, *].
    return _batch_norm(cv, node, a, True)[:3]


# -- pools ----------------------------------------------------------------------------------------------
def _window_reduce(cv, node, a, op: str):
    # Non-overlapping windows (stride == kernel, no padding or dilation): each spatial dim of size S
    # becomes [S // k, k] (trailing rows dropped as torch does) and the k axes are reduced at once.
    x = cv.value(a["self"])
    kernel = list(a["kernel_size"])
    stride = list(a["stride"]) or kernel
    padding = a["padding"] if isinstance(a["padding"], (list, tuple)) else [a["padding"]]
    dilation = a.get("dilation", [1])
    dilation = dilation if isinstance(dilation, (list, tuple)) else [dilation]
    if stride != kernel or any(padding) or any(d != 1 for d in dilation) or a.get("divisor_override"):
        cv.fail(f"{node.target} with overlapping or padded windows has no IR equivalent "
                "(only stride == kernel, no padding, no dilation)")
    first = x.type.rank - len(kernel)
    shape, window_axes = list(x.type.shape[:first]), []
    for i, k in enumerate(kernel):
        axis, size = first + i, x.type.shape[first + i]
        if not isinstance(size, int):
            cv.fail("pooling over a symbolic dim is not supported")
        if size % k and a.get("ceil_mode"):
            cv.fail("pooling with ceil_mode over a partial window is not supported")
        x = slice_axis(cv, x, axis, 0, (size // k) * k, 1, (size // k) * k)
        shape += [size // k, k]
        window_axes.append(len(shape) - 1)
    split = cv.b.reshape(x, tuple(shape))
    return reduce(cv, split, op, window_axes, False)


def _max_pool(cv, node, a):
    indices = Lazy(lambda: cv.fail("the indices of a max pool are read; they are not captured"))
    return Lazy(lambda: _window_reduce(cv, node, a, "reduce_max")), indices


def _avg_pool(cv, node, a):
    return _window_reduce(cv, node, a, "reduce_mean")


def _adaptive_avg_pool(cv, node, a):
    # An output size that divides the input evenly is a plain average pool with kernel = in / out.
    x = cv.meta(a["self"])
    sizes = [int(s) for s in x.shape[-len(a["output_size"]):]]
    kernel = [s // o for s, o in zip(sizes, a["output_size"])]
    if any(s % o for s, o in zip(sizes, a["output_size"])):
        cv.fail("adaptive average pooling with uneven windows has no IR equivalent")
    return _window_reduce(cv, node, {"self": a["self"], "kernel_size": kernel, "stride": kernel, "padding": [0]},
                          "reduce_mean")


LOWERINGS = {
    "aten.mm.default": _mm, "aten.bmm.default": _mm,
    "aten.addmm.default": _addmm, "aten.baddbmm.default": _addmm,
    "aten.embedding.default": _embedding, "aten.index_select.default": _index_select,
    "aten.gather.default": _gather, "aten.index.Tensor": _index,
    "aten.index_put.default": _index_put, "aten.index_copy.default": _index_copy,
    "aten.scaled_dot_product_attention.default": _sdpa,
    "aten.native_layer_norm.default": _layer_norm, "aten.native_group_norm.default": _group_norm,
    "aten._native_batch_norm_legit_functional.default": _batch_norm_functional,
    "aten._native_batch_norm_legit_no_training.default": _batch_norm_eval,
    "aten._native_batch_norm_legit.no_stats": _batch_norm_no_stats,
    "aten.max_pool2d_with_indices.default": _max_pool, "aten.max_pool3d_with_indices.default": _max_pool,
    "aten.avg_pool1d.default": _avg_pool, "aten.avg_pool2d.default": _avg_pool, "aten.avg_pool3d.default": _avg_pool,
    "aten._adaptive_avg_pool2d.default": _adaptive_avg_pool, "aten.adaptive_avg_pool1d.default": _adaptive_avg_pool,
}
