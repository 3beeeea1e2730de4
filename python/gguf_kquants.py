"""Q4_K quantization, which the gguf package (0.19) can dequantize but not produce: rows of f32 values into
llama.cpp's Q4_K blocks, for writing a checkpoint as a Q4_K GGUF file (python/hf_to_gguf.py --type q4_k).

A Q4_K block holds 256 values as 8 sub-blocks of 32: f16 d and dmin, 12 bytes packing a 6-bit scale sc_j and a
6-bit min m_j per sub-block, and 128 bytes of 4-bit q (the 32 bytes of sub-block pair (2g, 2g+1) hold 2g's in
their low nibbles, 2g+1's in the high). Its values are x = d * sc_j * q - dmin * m_j (gguf's dequantize).

Round to nearest on a grid that covers each sub-block: the offset dmin * m_j is at or below the sub-block's
minimum (and at or below 0), the step d * sc_j reaches its maximum, so no value is clipped and each is within
half a step of its own. Not llama.cpp's search for the best scales; the file is a valid Q4_K file whatever
the scales, and what matters for the GPU checks is that it has the format's layout and ranges.
"""
from __future__ import annotations

import numpy as np

QK_K = 256
Q4_K_BLOCK_BYTES = 144


def _f16_at_least(v: np.ndarray) -> np.ndarray:
    """The smallest f16 at or above each value (as f32)."""
    h = v.astype(np.float16)
    up = h.astype(np.float32) < v
    h[up] = np.nextafter(h[up], np.float16(np.inf))
    return h.astype(np.float32)


def quantize_q4_k(rows: np.ndarray) -> np.ndarray:
    """rows [n, K] (K a multiple of 256) -> uint8 [n, K / 256 * 144]."""
    rows = np.asarray(rows, dtype=np.float32)
    if rows.ndim != 2 or rows.shape[1] % QK_K != 0:
        raise ValueError(f"Q4_K quantizes rows of a multiple of {QK_K} values; got shape {rows.shape}")
    if not np.all(np.isfinite(rows)):
        raise ValueError("Q4_K quantizes finite values only")
    n, k = rows.shape
    x = rows.reshape(-1, 8, 32)  # blocks x sub-blocks x values
    mins = -np.minimum(x.min(axis=2), 0.0)  # >= 0: the offset each sub-block needs
    dmin = _f16_at_least(mins.max(axis=1) / 63.0)  # [blocks]
    with np.errstate(divide="ignore", invalid="ignore"):
        m = np.where(dmin[:, None] > 0, np.ceil(mins / dmin[:, None]), 0.0)
    m = np.clip(m, 0, 63)
    offset = dmin[:, None] * m  # >= mins
    span = x.max(axis=2) + offset  # >= 0: what the 15 steps must reach
    d = _f16_at_least(span.max(axis=1) / (15.0 * 63.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        sc = np.where(d[:, None] > 0, np.ceil(span / (15.0 * d[:, None])), 0.0)
    sc = np.clip(sc, 0, 63)
    step = (d[:, None] * sc)[:, :, None]  # f32, as gguf's dequantize computes it
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(step > 0, np.rint((x + offset[:, :, None]) / step), 0.0)
    q = np.clip(q, 0, 15).astype(np.uint8)

    sc = sc.astype(np.uint8)
    m = m.astype(np.uint8)
    scales = np.empty((x.shape[0], 12), dtype=np.uint8)
    scales[:, 0:4] = (sc[:, 0:4] & 0x3F) | ((sc[:, 4:8] >> 4) << 6)
    scales[:, 4:8] = (m[:, 0:4] & 0x3F) | ((m[:, 4:8] >> 4) << 6)
    scales[:, 8:12] = (sc[:, 4:8] & 0x0F) | ((m[:, 4:8] & 0x0F) << 4)
    qs = (q[:, 0::2, :] | (q[:, 1::2, :] << 4)).reshape(-1, 128)  # sub-block pairs (2g, 2g+1)

    blocks = np.concatenate([d.astype(np.float16).view(np.uint8).reshape(-1, 2), dmin.astype(np.float16).view(np.uint8).reshape(-1, 2),
                             scales, qs], axis=1)
    return blocks.reshape(n, k // QK_K * Q4_K_BLOCK_BYTES)
