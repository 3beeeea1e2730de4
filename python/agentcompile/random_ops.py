"""The IR's random numbers in numpy and torch: what a captured dropout computes, for the eager reference.

A dropout that a module runs in training mode is captured as `where(random_uniform >= p, x * 1/(1-p), 0)`
(aten_nn.py), where element i of `random_uniform {seed}` is Philox4x32-10 of the counter (i // 4, 0, 0)
and the key `seed`, word i % 4, as a float in [0, 1) from its top 24 bits: src/kernels/random.cuh, which
the kernels and the CPU interpreter share. This module computes the same numbers, so PyTorch eager can be
run with the masks the compiled function uses (`captured_dropout`) and a captured module is checked
against eager exactly as one without randomness. torch's own dropout draws from its generator's stream,
which nothing here reproduces.

The k-th dropout (in program order) of a capture made with `--seed s` has seed `dropout_seed(s, k)`.
"""
from __future__ import annotations

import contextlib

import numpy as np

_MASK = np.uint64(0xFFFFFFFF)
_MUL = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_WEYL = (np.uint64(0x9E3779B9), np.uint64(0xBB67AE85))
MAX_DROPOUTS = 1 << 16  # dropouts a capture may hold: seeds of one capture never meet another's


def dropout_seed(capture_seed: int, k: int) -> int:
    if not 0 <= k < MAX_DROPOUTS:
        raise ValueError(f"dropout {k}: a capture holds at most {MAX_DROPOUTS}")
    seed = capture_seed * MAX_DROPOUTS + k
    if not 0 <= seed < 2**53:
        raise ValueError(f"--seed {capture_seed}: the dropout seeds would leave [0, 2^53)")
    return seed


def philox4x32_10(counter, key):
    """Philox4x32-10 of four uint64 arrays holding 32-bit counter words and a key of two ints."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint64) for c in counter)
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for _ in range(10):
        p0, p1 = _MUL[0] * c0, _MUL[1] * c2  # exact: both factors are below 2^32
        c0, c1, c2, c3 = (p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & _MASK, (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & _MASK
        k0, k1 = (k0 + _WEYL[0]) & _MASK, (k1 + _WEYL[1]) & _MASK
    return c0, c1, c2, c3


def random_uniform(seed: int, count: int) -> np.ndarray:
    """Elements 0 .. count-1 of `random_uniform {seed}`, float32."""
    blocks = np.arange((count + 3) // 4, dtype=np.uint64)
    zero = np.zeros_like(blocks)
    words = np.stack(philox4x32_10((blocks & _MASK, blocks >> np.uint64(32), zero, zero),
                                   (seed & 0xFFFFFFFF, seed >> 32)), axis=1).reshape(-1)[:count]
    return (words >> np.uint64(8)).astype(np.float32) * np.float32(2.0**-24)


def dropout_like_capture(torch, x, p: float, seed: int):
    """What the captured dropout computes: x * 1/(1-p) where random_uniform >= p, else 0 (in f32, rounded once)."""
    u = torch.from_numpy(random_uniform(seed, x.numel())).to(x.device).reshape(x.shape)
    keep = u >= torch.tensor(p, dtype=torch.float32, device=x.device)
    scaled = (x.float() * torch.tensor(1.0 / (1.0 - p), dtype=torch.float32, device=x.device)).to(x.dtype)
    return torch.where(keep, scaled, torch.zeros((), dtype=x.dtype, device=x.device))


@contextlib.contextmanager
def captured_dropout(torch, capture_seed: int = 0):
    """Runs torch.nn.functional.dropout (which nn.Dropout calls) as the capture made with `capture_seed`
    computes it: the k-th call in training mode with p > 0 uses dropout_seed(capture_seed, k)."""
    functional = torch.nn.functional
    original = functional.dropout
    calls = [0]

    def dropout(input, p=0.5, training=True, inplace=False):
        if not training or p == 0:
            return input
        if p >= 1:
            out = torch.zeros_like(input)
        else:
            out = dropout_like_capture(torch, input, float(p), dropout_seed(capture_seed, calls[0]))
        calls[0] += 1
        if inplace:
            input.copy_(out)
            return input
        return out

    functional.dropout = dropout
    try:
        yield calls
    finally:
        functional.dropout = original


def with_captured_dropout(torch, model, capture_seed: int = 0):
    """`model` whose every call runs under captured_dropout (each call starts again at the first seed, as
    every call of the captured function does); deepcopy and .float() / .double() reach the model inside."""

    class CapturedDropout(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            with captured_dropout(torch, capture_seed):
                return self.inner(*args)

    return CapturedDropout(model)
