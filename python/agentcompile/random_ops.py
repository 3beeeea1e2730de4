"""The IR's random numbers in numpy and torch: what a captured random draw computes, for the eager reference.

A module's random draws are captured with `random_uniform {seed, shape}` (aten_random.py), whose element i is
Philox4x32-10 of the counter (i // 4, 0, 0) and the key `seed`, word i % 4, as a float in [0, 1) from its
top 24 bits: src/kernels/random.cuh, which the kernels and the CPU interpreter share. What each draw is:
  - a dropout in training mode (nn.Dropout, F.dropout, in place too): where(u >= p, x * 1/(1-p), 0);
  - torch.rand / rand_like: u; torch.bernoulli(probabilities): u < probabilities (torch's own decomposition);
  - torch.randn / randn_like: Box-Muller, sqrt(-2 ln(1 - u)) * cos(2 pi v), v drawn with seed ^ 2^52.
The k-th draw in program order of a capture made with `--seed s` has seed `random_seed(s, k)`, and draws the
same numbers in every call. This module computes the same numbers, so PyTorch eager can be run with them
(`captured_random`, a TorchFunctionMode that stands in for those calls) and a captured module is checked
against eager exactly as one without randomness. torch's own draws come from its generator's stream, which
nothing here reproduces.
"""
from __future__ import annotations

import contextlib
import math

import numpy as np

_MASK = np.uint64(0xFFFFFFFF)
_MUL = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_WEYL = (np.uint64(0x9E3779B9), np.uint64(0xBB67AE85))
MAX_DRAWS = 1 << 16  # draws a capture may hold: seeds of one capture never meet another's
NORMAL_SECOND_STREAM = 1 << 52  # randn's angle: seed ^ this (seeds stay below 2^52)


def random_seed(capture_seed: int, k: int) -> int:
    if not 0 <= k < MAX_DRAWS:
        raise ValueError(f"random draw {k}: a capture holds at most {MAX_DRAWS}")
    seed = capture_seed * MAX_DRAWS + k
    if not 0 <= seed < NORMAL_SECOND_STREAM:
        raise ValueError(f"--seed {capture_seed}: the random draws' seeds would leave [0, 2^52)")
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


def random_normal(seed: int, count: int) -> np.ndarray:
    """What a captured randn computes, in float32 step by step as the IR does."""
    u = random_uniform(seed, count)
    v = random_uniform(seed ^ NORMAL_SECOND_STREAM, count)
    radius = np.sqrt(np.float32(-2.0) * np.log(np.float32(1.0) - u))
    return radius * np.cos(v * np.float32(2.0 * math.pi))


def dropout_like_capture(torch, x, p: float, seed: int):
    """What the captured dropout computes: x * 1/(1-p) where random_uniform >= p, else 0 (in f32, rounded once)."""
    u = torch.from_numpy(random_uniform(seed, x.numel())).to(x.device).reshape(x.shape)
    keep = u >= torch.tensor(p, dtype=torch.float32, device=x.device)
    scaled = (x.float() * torch.tensor(1.0 / (1.0 - p), dtype=torch.float32, device=x.device)).to(x.dtype)
    return torch.where(keep, scaled, torch.zeros((), dtype=x.dtype, device=x.device))


def _size(args, kwargs) -> list[int]:
    size = kwargs.get("size", args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args)
    return [int(d) for d in size]


def captured_random(torch, capture_seed: int = 0):
    """A context in which eager draws what the capture made with `capture_seed` does: the k-th draw (a dropout
    in training mode with p > 0, torch.rand / rand_like / randn / randn_like, torch.bernoulli of a probability
    tensor) uses random_seed(capture_seed, k). Entering it again starts again at the first draw. Yields the
    list whose first element counts the draws."""
    functional = torch.nn.functional
    calls = [0]

    def next_seed() -> int:
        seed = random_seed(capture_seed, calls[0])
        calls[0] += 1
        return seed

    def tensor_of(draw, seed: int, shape, dtype, device):
        if torch.device(device).type == "meta":  # counting the draws (module_capture): no numbers needed
            return torch.empty(shape, dtype=dtype, device="meta")
        return torch.from_numpy(draw(seed, math.prod(shape))).reshape(shape).to(device=device, dtype=dtype)

    class CapturedRandom(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is functional.dropout:
                names = ("input", "p", "training", "inplace")
                bound = {**dict(zip(names, args)), **kwargs}
                x, p = bound["input"], float(bound.get("p", 0.5))
                if not bound.get("training", True) or p == 0:
                    return x
                seed = next_seed()
                out = torch.zeros_like(x) if p >= 1 or x.device.type == "meta" else dropout_like_capture(torch, x, p, seed)
                if bound.get("inplace", False):
                    return x.copy_(out)
                return out
            if func in (torch.rand, torch.randn, torch.rand_like, torch.randn_like):
                like = func in (torch.rand_like, torch.randn_like)
                shape = list(args[0].shape) if like else _size(args, kwargs)
                dtype = kwargs.get("dtype") or (args[0].dtype if like else torch.get_default_dtype())
                device = kwargs.get("device") or (args[0].device if like else torch.get_default_device())
                draw = random_normal if func in (torch.randn, torch.randn_like) else random_uniform
                return tensor_of(draw, next_seed(), shape, dtype, device)
            if func is torch.bernoulli and len(args) == 1 and not kwargs:
                probabilities = args[0]
                u = tensor_of(random_uniform, next_seed(), list(probabilities.shape), torch.float32, probabilities.device)
                return (u < probabilities.float()).to(probabilities.dtype)
            return func(*args, **kwargs)

    @contextlib.contextmanager
    def context():
        with CapturedRandom():
            yield calls

    return context()


def with_captured_random(torch, model, capture_seed: int = 0):
    """`model` whose every call runs under captured_random (each call starts again at the first draw, as every
    call of the captured function does); deepcopy and .float() / .double() reach the model inside."""

    class CapturedRandomModel(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            with captured_random(torch, capture_seed):
                return self.inner(*args)

    return CapturedRandomModel(model)


def count_draws(torch, model, inputs) -> int:
    """How many random draws one eager call of `model` makes (captured_random's count), on the meta device:
    the module runs on meta stand-ins of its parameters and buffers, so no data is computed or copied."""
    meta_state = {name: t.to("meta") for name, t in [*model.named_parameters(), *model.named_buffers()]}
    meta_inputs = [x.to("meta") if isinstance(x, torch.Tensor) else x for x in inputs]
    with torch.no_grad(), torch.device("meta"), captured_random(torch, 0) as calls:  # factories made on meta too
        torch.func.functional_call(model, meta_state, tuple(meta_inputs))
    return calls[0]
