#!/usr/bin/env python3
"""Writes the fixtures tests/unit/quant_format_test.cpp checks the row formats (i8_*, i4*) against: an
independent numpy implementation of src/ir/quant.h's definitions.

tests/fixtures/quant/
  input.f32          rows x K float32 values (little-endian) with the cases that matter: groups of
                     mixed sign, an all-zero group, an all-positive and an all-negative group, an
                     outlier, values exactly halfway between two steps
  shape.txt          "rows K"
  <dtype>.bin        what quantization makes of input.f32 in that format (round to nearest; int4's
                     scale searched as src/ir/quant_rows.cpp searches it)
  <dtype>.f32        the exact dequantization of <dtype>.bin

Deterministic: rerunning rewrites identical bytes.
  python3 python/make_quant_fixtures.py [--root REPO]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

ROWS, K = 4, 256

F16 = np.float16


def to_scale(values: np.ndarray, scale: str) -> np.ndarray:
    """float32 -> the scale type and back (round to nearest even), as float32."""
    values = values.astype(np.float32)
    if scale == "f16":
        return values.astype(np.float16).astype(np.float32)
    bits = values.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint32) << 16
    return rounded.view(np.float32)


def scale_bytes(values: np.ndarray, scale: str) -> np.ndarray:
    if scale == "f16":
        return values.astype(np.float16).view(np.uint8)
    return (values.astype(np.float32).view(np.uint32) >> 16).astype("<u2").view(np.uint8)


def pad16(row: bytes) -> bytes:
    return row + bytes((-len(row)) % 16)


def quantize_int8(x: np.ndarray, scale: str) -> tuple[bytes, np.ndarray]:
    out, back = b"", []
    for row in x:
        s = to_scale(np.array([np.abs(row).max() / np.float32(127)], dtype=np.float32), scale)[0]
        q = np.zeros(K, dtype=np.int8) if s == 0 else np.clip(np.rint(row / s), -127, 127).astype(np.int8)
        out += pad16(q.tobytes() + scale_bytes(np.array([s], dtype=np.float32), scale).tobytes())
        back.append(np.float32(s) * q.astype(np.float32))
    return out, np.array(back, dtype=np.float32)


SYMMETRIC_DIVISORS = [7.0, 7.5, 8.0, 8.5]   # src/ir/quant_rows.cpp's search, in its order
ZERO_POINT_SHRINK = [1.0, 0.9, 0.8]


def f32_error(v: np.ndarray, deq: np.ndarray) -> np.float32:
    """Sum of squared differences in float32, element by element in order (as the C++ loop adds)."""
    total = np.float32(0)
    for d in (v - deq).astype(np.float32):
        total = np.float32(total + np.float32(d * d))
    return total


def symmetric_group(v: np.ndarray, scale: str) -> tuple[np.float32, np.ndarray]:
    """A group's scale and nibbles: the plain max|x| / 7, then sign * max|x| / d for the divisors, the first
    of the least error kept; a candidate that rounds to zero or is not finite is skipped."""
    amax = np.float32(np.abs(v).max())
    def grid(s):
        return np.clip(np.rint(v / s), -8, 7).astype(np.float32)
    s = to_scale(np.array([amax / np.float32(7)], dtype=np.float32), scale)[0]
    if s != 0:
        best = f32_error(v, s * grid(s))
        for d in SYMMETRIC_DIVISORS:
            for sign in (1.0, -1.0):
                c = to_scale(np.array([np.float32(sign) * amax / np.float32(d)], dtype=np.float32), scale)[0]
                if c == 0 or not np.isfinite(c):
                    continue
                e = f32_error(v, c * grid(c))
                if e < best:
                    best, s = e, c
    n = np.full(v.shape, 8, dtype=np.uint8) if s == 0 else (grid(s) + 8).astype(np.uint8)
    return np.float32(s), n


def zero_point_group(v: np.ndarray, scale: str) -> tuple[np.float32, np.float32, np.ndarray]:
    lo = np.float32(min(v.min(), 0))
    hi = np.float32(max(v.max(), 0))
    def point(s):
        return np.float32(np.clip(np.rint(-lo / s), 0, 15))
    def grid(s, z):
        return np.clip(np.rint(v / s) + z, 0, 15).astype(np.float32)
    s = to_scale(np.array([(hi - lo) / np.float32(15)], dtype=np.float32), scale)[0]
    z = np.float32(0) if s == 0 else point(s)
    if s != 0:
        best = f32_error(v, s * (grid(s, z) - z))
        for f in ZERO_POINT_SHRINK:
            c = to_scale(np.array([(hi - lo) / np.float32(15) * np.float32(f)], dtype=np.float32), scale)[0]
            if c == 0 or not np.isfinite(c):
                continue
            cz = point(c)
            e = f32_error(v, c * (grid(c, cz) - cz))
            if e < best:
                best, s, z = e, c, cz
    n = np.zeros(v.shape, dtype=np.uint8) if s == 0 else grid(s, z).astype(np.uint8)
    return np.float32(s), z, n


def quantize_int4(x: np.ndarray, group: int, zero_points: bool, scale: str) -> tuple[bytes, np.ndarray]:
    out, back = b"", []
    for row in x:
        scales, zeros, nibbles, deq = [], [], [], []
        for v in row.reshape(-1, group):
            if zero_points:
                s, z, n = zero_point_group(v, scale)
            else:
                (s, n), z = symmetric_group(v, scale), np.float32(8)
            scales.append(s), zeros.append(z), nibbles.append(n)
            deq.append(s * (n.astype(np.float32) - z))
        s = np.array(scales, dtype=np.float32)
        flat = np.concatenate(nibbles)
        packed = (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8)
        row_bytes = packed.tobytes() + scale_bytes(s, scale).tobytes()
        if zero_points:
            row_bytes += np.array(zeros, dtype=np.float32).astype(np.uint8).tobytes()
        out += pad16(row_bytes)
        back.append(np.concatenate(deq).astype(np.float32))
    return out, np.array(back, dtype=np.float32)


def make_input(rng: np.random.Generator) -> np.ndarray:
    x = (rng.standard_normal((ROWS, K)) * rng.uniform(0.01, 2.0, size=(ROWS, 1))).astype(np.float32)
    x[0, 0:32] = 0.0                                              # an all-zero group (every group size starts at 0)
    x[1, 32:64] = np.abs(x[1, 32:64]) + 0.5                       # all positive
    x[1, 64:96] = -np.abs(x[1, 64:96]) - 0.25                     # all negative
    x[2, 100] = 40.0                                              # an outlier
    x[3, 0:8] = np.array([7, -7, 3.5, -3.5, 0.5, -0.5, 1.5, 6.5], dtype=np.float32)  # halfway cases at s = 1
    x[3, 8:32] = 0.0
    return x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    out = args.root / "tests" / "fixtures" / "quant"
    out.mkdir(parents=True, exist_ok=True)
    x = make_input(np.random.default_rng(20261126))
    x.astype("<f4").tofile(out / "input.f32")
    (out / "shape.txt").write_text(f"{ROWS} {K}\n")
    for scale in ("f16", "bf16"):
        packed, back = quantize_int8(x, scale)
        (out / f"i8_{scale}.bin").write_bytes(packed)
        back.astype("<f4").tofile(out / f"i8_{scale}.f32")
        for group in (32, 64, 128):
            for zero_points in (False, True):
                name = f"i4g{group}{'z' if zero_points else ''}_{scale}"
                packed, back = quantize_int4(x, group, zero_points, scale)
                (out / f"{name}.bin").write_bytes(packed)
                back.astype("<f4").tofile(out / f"{name}.f32")
    print(f"wrote {len(list(out.iterdir()))} files under {out}")


if __name__ == "__main__":
    main()
