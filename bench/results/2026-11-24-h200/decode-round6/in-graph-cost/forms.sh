#!/usr/bin/env bash
# EXPERIMENT (not committed): in-graph decode with the attention restricted to some forms.
set -uo pipefail
bin=.carry/exp/agentcompile
dir=/tmp/ac-runtime/qwen3-1.7b-f16
mkdir -p /tmp/ac-runtime
[[ -f $dir/config.json ]] || $bin init-random --config configs/qwen3-1.7b.json --dtype f16 --seed 0 --out $dir >/dev/null
for variant in ${VARIANTS:-all cluster cluster,split}; do
  art=/tmp/art-${variant//,/-}
  t0=$(date +%s)
  if [[ $variant == all ]]; then $bin compile $dir -o $art --seeds 1 --repetitions 20 > $art.log 2>&1
  else AC_EXPERIMENT_DROP_FORM=$variant $bin compile $dir -o $art --force --seeds 1 --repetitions 20 > $art.log 2>&1; fi
  echo "variant drop=$variant: compile rc $? in $(( $(date +%s) - t0 )) s"
  grep -A3 "^### decode.r2" $art/report.md | head -2; grep "^Selected for decode" $art/report.md | sed -n 3,5p
  for w in i128/o128 i2048/o512; do
    for skip in none decode.r2; do
      line=$(AC_EXPERIMENT_SKIP=$skip $bin bench $dir --artifact $art --workload $w --json --reps 5 --warmup 1 2>/dev/null | tail -1)
      python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(f'  $w skip=$skip: decode {d[\"decode_ms_per_token\"]:.4f} ms/token')" "$line" || echo "$w $skip failed"
    done
  done
  cp $art/report.md $OUT/report-${variant//,/-}.md
done
