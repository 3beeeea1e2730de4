#!/usr/bin/env python3
"""Compares two logit arrays [T, V] (ours.npy against ref.npy) and fails when they disagree.
  python3 python/compare_logits.py ours.npy ref.npy [--max-rel 2e-2] [--min-top1 0.99] [--json]
Reports
  max_abs          max |ours - ref| over all entries
  max_rel_row      max over rows of (max |ours - ref| in the row) / (max |ref| in the row)  <- thresholded
  max_rel_global   max |ours - ref| / max |ref| over the whole array
  top1             fraction of rows whose argmax agrees                                      <- thresholded
  near_ties        disagreeing rows where the reference's own gap between its best logit and the logit we
                   picked is within max-rel of the row scale (precision can flip those; reported, not forgiven)
Exit status: 0 when max_rel_row <= --max-rel and top1 >= --min-top1 and both arrays are finite and of the same
shape; 1 when a threshold fails; 2 when the inputs cannot be compared.
"""
import argparse
import json
import sys

import numpy as np


def compare(ours: np.ndarray, ref: np.ndarray, max_rel: float) -> dict:
    ours, ref = ours.astype(np.float64), ref.astype(np.float64)
    diff = np.abs(ours - ref)  # [T, V]
    row_scale = np.maximum(np.abs(ref).max(axis=1), np.finfo(np.float64).tiny)  # [T]
    row_rel = diff.max(axis=1) / row_scale  # [T]
    ours_top, ref_top = ours.argmax(axis=1), ref.argmax(axis=1)  # [T]
    rows = np.arange(ref.shape[0])
    disagree = np.nonzero(ours_top != ref_top)[0]
    gap = (ref[rows, ref_top] - ref[rows, ours_top]) / row_scale  # [T], 0 where they agree
    return {
        "shape": list(ref.shape),
        "max_abs": float(diff.max()),
        "max_rel_row": float(row_rel.max()),
        "worst_row": int(row_rel.argmax()),
        "max_rel_global": float(diff.max() / max(np.abs(ref).max(), np.finfo(np.float64).tiny)),
        "top1": float((ours_top == ref_top).mean()),
        "top1_disagree_rows": int(disagree.size),
        "top1_disagreements": [int(r) for r in disagree[:20]],
        "near_ties": int((gap[disagree] <= max_rel).sum()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("ours")
    parser.add_argument("ref")
    parser.add_argument("--max-rel", type=float, default=2e-2, help="bound on max_rel_row")
    parser.add_argument("--min-top1", type=float, default=0.99, help="bound on the top-1 agreement (a fraction)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    args = parser.parse_args()
    try:
        ours, ref = np.load(args.ours), np.load(args.ref)
    except (OSError, ValueError) as e:
        print(f"compare_logits.py: cannot read: {e}", file=sys.stderr)
        return 2
    problems = []
    if ours.ndim != 2 or ours.shape != ref.shape:
        problems.append(f"shapes differ: {args.ours} {list(ours.shape)} vs {args.ref} {list(ref.shape)} (expected [T, V])")
    else:
        for name, array in ((args.ours, ours), (args.ref, ref)):
            bad = int((~np.isfinite(array)).sum())
            if bad:
                problems.append(f"{name} holds {bad} non-finite values (first in row {int(np.argwhere(~np.isfinite(array))[0][0])})")
    if problems:
        result = {"pass": False, "problems": problems}
        print(json.dumps(result) if args.json else "\n".join("FAIL: " + p for p in problems))
        return 2
    result = compare(ours, ref, args.max_rel)
    if result["max_rel_row"] > args.max_rel:
        problems.append(f"max relative error per row {result['max_rel_row']:.3e} > {args.max_rel:g} (row {result['worst_row']})")
    if result["top1"] < args.min_top1:
        problems.append(f"top-1 agreement {100 * result['top1']:.2f}% < {100 * args.min_top1:g}% "
                        f"(rows {result['top1_disagreements']}, {result['near_ties']} of them near-ties)")
    result.update({"pass": not problems, "problems": problems, "max_rel": args.max_rel, "min_top1": args.min_top1})
    if args.json:
        print(json.dumps(result))
    else:
        print(f"shape {result['shape']}: max abs error {result['max_abs']:.4e}; max abs error / max |ref| per row "
              f"{result['max_rel_row']:.4e} (worst row {result['worst_row']}), global {result['max_rel_global']:.4e}; "
              f"top-1 agreement {100 * result['top1']:.2f}% ({result['top1_disagree_rows']} rows differ, "
              f"{result['near_ties']} near-ties)")
        for p in problems:
            print("FAIL:", p)
        if not problems:
            print(f"PASS (max rel <= {args.max_rel:g}, top-1 >= {100 * args.min_top1:g}%)")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
