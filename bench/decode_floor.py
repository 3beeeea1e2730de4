#!/usr/bin/env python3
"""The decode floor of a checkpoint on this GPU (BENCHMARK.md, "Ceilings") and how far a measured decode is
from it: floor ms/token = (weight bytes one step reads + KV bytes at the workload's mean context) / the
device-to-device copy bandwidth measured now.
  python3 bench/decode_floor.py --checkpoint DIR --workload i128/o128 --decode-ms 1.23 [--dtype f16]
Prints one JSON object: copy bandwidth, bytes, floor_ms, measured ms and measured / floor.
"""
import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import compare  # noqa: E402  (the same byte count and copy measurement the benchmark tables use)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", required=True, type=pathlib.Path)
    parser.add_argument("--workload", default="i128/o128")
    parser.add_argument("--decode-ms", required=True, type=float, help="measured decode ms per token")
    parser.add_argument("--dtype", default="f16", choices=["f16", "bf16", "f32"])
    args = parser.parse_args()
    config = json.loads((args.checkpoint / "config.json").read_text())
    config = config.get("text_config", config)
    traffic = compare.model_traffic(args.checkpoint, config, args.dtype)
    bandwidth = compare.copy_bandwidth("cuda")
    context = compare.mean_decode_context(args.workload)
    step_bytes = traffic["weight_bytes_read_per_step"] + traffic["kv_bytes_per_token"] * context
    floor_ms = step_bytes / (bandwidth["median_gb_s"] * 1e9) * 1e3
    print(json.dumps({"checkpoint": str(args.checkpoint), "workload": args.workload,
                      "copy_bandwidth_gb_s": round(bandwidth["median_gb_s"], 1),
                      "weight_bytes_read_per_step": traffic["weight_bytes_read_per_step"],
                      "kv_bytes_read_per_step": traffic["kv_bytes_per_token"] * context,
                      "floor_ms": round(floor_ms, 4), "decode_ms": args.decode_ms,
                      "measured_over_floor": round(args.decode_ms / floor_ms, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
