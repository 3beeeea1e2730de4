"""Lowerings of core ATen's layout, copy and source ops to IR nodes.

Each lowering takes (converter, fx node, bound args) and returns the IR value (or a tuple of values for
multi-output ops). Where torch's metadata already knows the result shape (view, expand, squeeze), the
lowering reads it rather than re-deriving -1 entries and symbolic sizes.
"""
from __future__ import annotations

from .ir_builder import Lazy
from .ir_text import Dims

INT64_MAX = 2**63 - 1


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _reshape(cv, node, a):
    # view, _unsafe_view, reshape, unsqueeze, squeeze, flatten: one reshape to torch's result shape.
    return cv.b.reshape(cv.value(a["self"]), cv.type_of(node).shape)


def _expand(cv, node, a):
    # expand(-1 keeps a dim) is numpy broadcasting to torch's result shape.
    return cv.b.broadcast(cv.value(a["self"]), cv.type_of(node).shape)


def _permute(cv, node, a):
    x = cv.value(a["self"])
    return cv.b.transpose(x, [_axis(d, x.type.rank) for d in a["dims"]])


def _transpose(cv, node, a):
    x = cv.value(a["self"])
    perm = list(range(x.type.rank))
    d0, d1 = _axis(a["dim0"], x.type.rank), _axis(a["dim1"], x.type.rank)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return cv.b.transpose(x, perm)


def slice_axis(cv, x, axis: int, start, end, step: int, out_dim):
    """x[start:end:step] along `axis`; out_dim is torch's size of the result (int, T or L)."""
    size = x.type.shape[axis]
    if step < 1:
        cv.fail(f"slice step {step} is not supported")
    if isinstance(size, int):
        rows = range(size)[slice(start, end, step)]
        if len(rows) == 0:
            cv.fail("an empty slice has no IR equivalent (tensors have no zero-size dims)")
        if step == 1:
            if len(rows) == size:
                return x
            return cv.b.op("slice", [x], {"axis": axis, "start": rows.start, "length": len(rows)})
        # A strided slice of a static dim reads a constant list of rows.
        index = cv.b.const_values(list(rows), "i32", (len(rows),))
        return cv.b.op("index_select", [x, index], {"axis": axis})
    start = 0 if start is None else start
    if out_dim == size and start == 0 and step == 1:
        return x  # the whole symbolic dim
    if isinstance(out_dim, int) and step == 1:
        return cv.b.op("slice", [x], {"axis": axis, "start": start, "length": out_dim})
    cv.fail(f"slicing [{start}:{end}:{step}] of the symbolic dim {size} is not supported")


def _slice(cv, node, a):
    x = cv.value(a["self"])
    axis = _axis(a["dim"], x.type.rank)
    start, end = cv.scalar(a["start"]), cv.scalar(a["end"])
    end = None if end is None or end >= INT64_MAX else end
    return slice_axis(cv, x, axis, start, end, cv.scalar(a["step"]), cv.type_of(node).shape[axis])


def _select(cv, node, a):
    # select = a slice of one row, then a reshape that drops the axis.
    x = cv.value(a["self"])
    axis = _axis(a["dim"], x.type.rank)
    index = cv.scalar(a["index"])
    row = cv.b.op("slice", [x], {"axis": axis, "start": index, "length": 1})
    return cv.b.reshape(row, cv.type_of(node).shape)


def _split_pieces(cv, node, x, axis, sizes):
    pieces, start = [], 0
    for size in sizes:
        pieces.append(Lazy(lambda s=start, n=size: slice_axis(cv, x, axis, s, s + n, 1, n)))
        start += size
    return tuple(pieces)


def _split_with_sizes(cv, node, a):
    # split = one slice per piece, made only for the pieces something reads.
    x = cv.value(a["self"])
    axis = _axis(a["dim"], x.type.rank)
    return _split_pieces(cv, node, x, axis, [cv.scalar(s) for s in a["split_sizes"]])


def _split(cv, node, a):
    x = cv.value(a["self"])
    axis = _axis(a["dim"], x.type.rank)
    sizes = [cv.dim(t.shape[axis]) for t in node.meta["val"]]
    return _split_pieces(cv, node, x, axis, sizes)


def _unbind(cv, node, a):
    x = cv.value(a["self"])
    axis = _axis(a["dim"], x.type.rank)
    shape = x.type.shape[:axis] + x.type.shape[axis + 1:]
    count = x.type.shape[axis]
    return tuple(Lazy(lambda i=i: cv.b.reshape(cv.b.op("slice", [x], {"axis": axis, "start": i, "length": 1}), shape))
                 for i in range(count))


def _cat(cv, node, a):
    # torch's cat skips zero-size tensors (Phi-3 concatenates an empty pass-through part of RoPE).
    out = cv.type_of(node)
    parts = [cv.b.cast(cv.value(t), out.dtype) for t in a["tensors"] if not cv.is_empty(t)]
    if len(parts) == 1:
        return parts[0]
    return cv.b.op("concat", parts, {"axis": _axis(a["dim"], out.rank)})


def _copy_like(cv, node, a):
    # clone, alias, contiguous, detach, _to_copy: no data movement in the IR, only a dtype change.
    return cv.b.cast(cv.value(a["self"]), cv.type_of(node).dtype)


def _copy(cv, node, a):
    # copy(dst, src) is src in dst's dtype and shape.
    out = cv.type_of(node)
    return cv.b.broadcast(cv.b.cast(cv.value(a["src"]), out.dtype), out.shape)


def _repeat(cv, node, a):
    # x.repeat(r...) = each dim s of x becomes [r, s], broadcast from [1, s], then merged into r * s.
    x = cv.value(a["self"])
    repeats = [cv.scalar(r) for r in a["repeats"]]
    shape = (1,) * (len(repeats) - x.type.rank) + x.type.shape
    if not all(isinstance(d, int) for d in shape):
        cv.fail("repeating a symbolic dim is not supported")
    spread = cv.b.reshape(x, tuple(d for s in shape for d in (1, s)))
    tiled = cv.b.broadcast(spread, tuple(d for r, s in zip(repeats, shape) for d in (r, s)))
    return cv.b.reshape(tiled, cv.type_of(node).shape)


def _flip(cv, node, a):
    x = cv.value(a["self"])
    for d in a["dims"]:
        x = cv.b.op("flip", [x], {"axis": _axis(d, x.type.rank)})
    return x


def _constant_pad(cv, node, a):
    # constant_pad_nd = a concat of constant blocks before and after x, one dim at a time from the last.
    x = cv.value(a["self"])
    pad = [cv.scalar(p) for p in a["pad"]]
    value = cv.scalar(a["value"])
    for i in range(0, len(pad), 2):
        axis = x.type.rank - 1 - i // 2
        before, after = pad[i], pad[i + 1]
        if before < 0 or after < 0:
            cv.fail("negative padding is not supported")
        if before == 0 and after == 0:
            continue
        if not isinstance(x.type.shape[axis], int):
            cv.fail("padding a symbolic dim is not supported")
        parts = []
        for count in (before, None, after):
            if count is None:
                parts.append(x)
            elif count > 0:
                shape = x.type.shape[:axis] + (count,) + x.type.shape[axis + 1:]
                parts.append(cv.b.const(value, x.type.dtype, shape))
        x = cv.b.op("concat", parts, {"axis": axis})
    return x


# -- sources ------------------------------------------------------------------------------------------
def _full(cv, node, a, value):
    # full/zeros/ones/scalar_tensor: a constant; a symbolic shape is a scalar constant broadcast to it.
    out = cv.type_of(node)
    if out.is_static():
        return cv.b.const(value, out.dtype, out.shape)
    return cv.b.broadcast(cv.b.const(value, out.dtype), out.shape)


def _arange(cv, node, a):
    # arange's length is torch's result size (a static count, T or L); start and step are numbers.
    out = cv.type_of(node)
    start = cv.scalar(a.get("start")) or 0
    step = cv.scalar(a.get("step")) or 1
    return cv.b.op("arange", [], {"dtype": out.dtype, "start": float(start), "step": float(step),
                                  "length": Dims(out.shape)})


def _fill_value(name):
    return lambda cv, node, a: _full(cv, node, a, cv.scalar(a[name]))


def _fixed(value):
    return lambda cv, node, a: _full(cv, node, a, value)


LOWERINGS = {
    "aten.view": _reshape, "aten._unsafe_view": _reshape, "aten.reshape": _reshape, "aten.view_copy": _reshape,
    "aten.unsqueeze": _reshape, "aten.squeeze": _reshape, "aten.flatten": _reshape, "aten.unflatten": _reshape,
    "aten.expand": _expand, "aten.expand_copy": _expand,
    "aten.permute": _permute, "aten.permute_copy": _permute, "aten.transpose.int": _transpose,
    "aten.slice.Tensor": _slice, "aten.slice_copy.Tensor": _slice,
    "aten.select.int": _select, "aten.select_copy.int": _select,
    "aten.split_with_sizes.default": _split_with_sizes, "aten.split.Tensor": _split,
    "aten.unbind.int": _unbind,
    "aten.cat.default": _cat,
    "aten.clone": _copy_like, "aten.alias": _copy_like, "aten.alias_copy": _copy_like,
    "aten.contiguous": _copy_like, "aten.detach": _copy_like, "aten.lift_fresh_copy": _copy_like,
    "aten._to_copy": _copy_like, "aten.to": _copy_like, "aten._to_dim_order_copy": _copy_like,
    "aten.copy.default": _copy,
    "aten.flip.default": _flip, "aten.repeat.default": _repeat,
    "aten.constant_pad_nd.default": _constant_pad,
    "aten.full.default": _fill_value("fill_value"), "aten.full_like.default": _fill_value("fill_value"),
    "aten.scalar_tensor.default": _fill_value("s"),
    "aten.zeros.default": _fixed(0), "aten.zeros_like.default": _fixed(0),
    "aten.ones.default": _fixed(1), "aten.ones_like.default": _fixed(1),
    "aten.arange.default": _arange, "aten.arange.start": _arange, "aten.arange.start_step": _arange,
}
