#!/usr/bin/env python3
"""Per-kernel GPU times from an Nsight Compute CSV (ncu --csv --metrics gpu__time_duration.sum).

Prints, per kernel name, how many launches ncu timed, their mean and their total, sorted by total, and
the sum over all launches: where a request's GPU time goes. ncu times each kernel alone (serialized), so
the sum is an upper bound of what a CUDA graph with overlapping launches takes.
"""
import argparse
import collections
import csv
import sys

UNIT_TO_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("csv", help="ncu --csv output")
    parser.add_argument("--top", type=int, default=30, help="kernel names to list")
    args = parser.parse_args()
    with open(args.csv, newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # ncu prefixes the CSV with the program's output
    times = collections.defaultdict(list)
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        unit = row.get("Metric Unit", "nsecond")
        if unit not in UNIT_TO_US:
            print(f"unknown unit {unit!r} in {args.csv}", file=sys.stderr)
            return 1
        value = float(row["Metric Value"].replace(",", ""))
        times[row["Kernel Name"]].append(value * UNIT_TO_US[unit])
    if not times:
        print(f"no gpu__time_duration.sum rows in {args.csv}", file=sys.stderr)
        return 1
    total = sum(sum(v) for v in times.values())
    launches = sum(len(v) for v in times.values())
    print(f"{launches} launches, {total:.1f} us in all")
    print(f"{'launches':>8} {'mean us':>9} {'total us':>10} {'share':>6}  kernel")
    for name, values in sorted(times.items(), key=lambda kv: -sum(kv[1]))[: args.top]:
        print(f"{len(values):>8} {sum(values) / len(values):>9.2f} {sum(values):>10.1f} {100 * sum(values) / total:>5.1f}%  {name[:110]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
