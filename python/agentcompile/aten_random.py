"""Lowerings of core ATen's random draws: dropout in training mode, rand, randn and bernoulli.

A draw is `random_uniform {seed, shape}` (the IR's counter-based random numbers) with the seed of its rank among
the program's draws; the same numbers in every call. random_ops.py computes the same draws for eager, so a
captured module is checked against eager with them. Draws the IR has no form for (randint, multinomial, a
generator argument) are refused with their source line.
"""
from __future__ import annotations

import math

import torch

from .ir_builder import Lazy
from .ir_text import Dims
from .random_ops import NORMAL_SECOND_STREAM

RANDOM_OPS = ("bernoulli", "rand", "randn", "rand_like", "randn_like", "randint", "randint_like", "randperm",
              "normal", "uniform", "exponential", "multinomial", "poisson")
_EMPTY_TARGETS = ("aten.empty_permuted.default", "aten.empty.memory_format", "aten.empty_like.default")
_DRAW_TARGETS = ("aten.rand.default", "aten.rand_like.default", "aten.randn.default", "aten.randn_like.default")


def draws_random(target: str, node) -> bool:
    """Whether the FX node draws random numbers that the capture lowers (the converter numbers them)."""
    if target == "aten.native_dropout.default":
        p, train = node.args[1], node.args[2]
        return bool(train) and not (isinstance(p, (int, float)) and p == 0)
    if target == "aten.bernoulli.p":
        source = node.args[0]
        return isinstance(source, torch.fx.Node) and str(source.target) in _EMPTY_TARGETS
    return target in _DRAW_TARGETS


def _note(cv, what: str, seed: int) -> None:
    """Records the draw in the manifest's notes and in its list of draws (which the KernelBench harness reads)."""
    cv.random_draws.append({"draw": what, "site": cv.b.loc or "?", "seed": seed})
    cv.notes.append(f"{what} at {cv.b.loc or '?'}: random_uniform seed {seed}, the same numbers in every call "
                    "(torch's RNG stream is not reproduced; random_ops.captured_random gives eager these draws)")


def _uniform(cv, shape, seed: int):
    return cv.b.op("random_uniform", [], {"shape": Dims(shape), "seed": seed})


def _dropout(cv, node, a):
    """Training mode: where(random_uniform >= p, x * 1/(1-p), 0)."""
    x = cv.value(a["input"])
    p = cv.scalar(a["p"])
    if not a["train"] or p == 0:
        return x, Lazy(lambda: cv.b.const(1, "bool", x.type.shape))
    seed = cv.draw_seed()
    if p >= 1:
        return cv.b.const(0, x.type.dtype, x.type.shape), Lazy(lambda: cv.b.const(0, "bool", x.type.shape))
    if x.type.dtype not in ("f32", "f16", "bf16"):
        cv.fail(f"dropout of {x.type}: only float tensors")
    keep = cv.b.op("ge", [_uniform(cv, x.type.shape, seed), cv.b.const(float(p), "f32")])
    scaled = cv.b.cast(cv.b.op("mul", [cv.b.cast(x, "f32"), cv.b.const(1.0 / (1.0 - float(p)), "f32")]), x.type.dtype)
    _note(cv, f"dropout (p={p:g})", seed)
    return cv.b.op("where", [keep, scaled, cv.b.const(0, x.type.dtype)]), keep


def _empty(cv, node, a):
    """An uninitialized tensor (an in-place dropout's decomposition makes one for bernoulli to fill): zeros,
    made only if something reads it."""
    out = cv.type_of(node)
    return Lazy(lambda: cv.b.const(0, out.dtype, out.shape))


def _bernoulli_p(cv, node, a):
    """An in-place dropout (nn.Dropout(inplace=True)) decomposes to bernoulli(empty, 1 - p) / (1 - p) * x: its
    mask is random_uniform >= p, as the dropout's. A bernoulli of anything else is a draw the eager reference
    cannot be given, and is refused."""
    if not draws_random(cv.target_name(node), node):
        return _random(cv, node, a)
    q = float(cv.scalar(a["p"]))
    out = cv.type_of(node)
    seed = cv.draw_seed()
    keep = cv.b.op("ge", [_uniform(cv, out.shape, seed), cv.b.const(1.0 - q, "f32")])
    _note(cv, f"dropout (p={1 - q:g}, in place)", seed)
    return cv.b.cast(keep, out.dtype)


def _rand(cv, node, a):
    """torch.rand / rand_like (and torch.bernoulli's decomposition, rand < p): random_uniform itself."""
    out = cv.type_of(node)
    if out.dtype not in ("f32", "f16", "bf16"):
        cv.fail(f"{cv.target_name(node)} of {out}: only float tensors")
    seed = cv.draw_seed()
    _note(cv, cv.target_name(node).split(".")[1], seed)
    return cv.b.cast(_uniform(cv, out.shape, seed), out.dtype)


def _randn(cv, node, a):
    """torch.randn / randn_like by Box-Muller: sqrt(-2 ln(1 - u)) * cos(2 pi v), v the seed's second stream."""
    out = cv.type_of(node)
    if out.dtype not in ("f32", "f16", "bf16"):
        cv.fail(f"{cv.target_name(node)} of {out}: only float tensors")
    seed = cv.draw_seed()
    u = _uniform(cv, out.shape, seed)
    v = _uniform(cv, out.shape, seed ^ NORMAL_SECOND_STREAM)
    log = cv.b.op("log", [cv.b.op("sub", [cv.b.const(1.0, "f32"), u])])
    radius = cv.b.op("sqrt", [cv.b.op("mul", [cv.b.const(-2.0, "f32"), log])])
    angle = cv.b.op("cos", [cv.b.op("mul", [v, cv.b.const(2.0 * math.pi, "f32")])])
    _note(cv, cv.target_name(node).split(".")[1], seed)
    return cv.b.cast(cv.b.op("mul", [radius, angle]), out.dtype)


def _random(cv, node, a):
    cv.fail(f"{node.target} draws random numbers, which the IR cannot express")


LOWERINGS = {
    "aten.native_dropout.default": _dropout,
    **{f"aten.{name}": _random for name in RANDOM_OPS},
    "aten.bernoulli.p": _bernoulli_p,
    **{target: _empty for target in _EMPTY_TARGETS},
    "aten.rand.default": _rand, "aten.rand_like.default": _rand,
    "aten.randn.default": _randn, "aten.randn_like.default": _randn,
}
