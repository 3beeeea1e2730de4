#!/usr/bin/env bash
# EXPERIMENT (not committed): decode step time with region sites left out of the graph.
set -uo pipefail
bin=.carry/exp/agentcompile
dir=/tmp/ac-runtime/qwen3-1.7b-f16
mkdir -p /tmp/ac-runtime
[[ -f $dir/config.json ]] || $bin init-random --config configs/qwen3-1.7b.json --dtype f16 --seed 0 --out $dir >/dev/null
t0=$(date +%s); $bin compile $dir > /tmp/compile.log 2>&1; echo "compile rc $? in $(( $(date +%s) - t0 )) s"
for w in i128/o128 i2048/o512; do
  for skip in none decode.r3 decode.r1 decode.r1,decode.r3 decode.r2 decode.r1,decode.r2,decode.r3 decode.r4 decode.r5 decode.r4,decode.r5 decode.r1,decode.r2,decode.r3,decode.r4,decode.r5 decode.r6; do
    line=$(AC_EXPERIMENT_SKIP=$skip $bin bench $dir --workload $w --json --reps 5 --warmup 1 2>/dev/null | tail -1)
    python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(f'$w skip=$skip: decode {d[\"decode_ms_per_token\"]:.4f} ms/token, {d[\"decode_launches_per_step\"]} launches')" "$line" || echo "$w $skip failed"
  done
done
