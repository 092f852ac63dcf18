#!/usr/bin/env bash
# Issue 12 section 5, A/A sweeps with a PyTorch program's noise (the second device call):
# run_section5.sh's ten A/A sweeps used a compiled CUDA loop, whose own timing varies by
# ±0.3 %; these use decode_graph.py eager (launch-bound, the noisiest of the four
# workloads), the same program in both arms (baseline and an env variable it ignores),
# 1 warm-up + 4 rounds each (a PyTorch run costs ~4.4 s of start-up). Run from the root:
#
#     OUT=/some/dir [N=7] [BUDGET_S=300] bash tests/data/gpu/run_section5_aa.sh
#
# Writes $OUT/aa_torch.tar.gz (aa_torch_spec.json, aa_torch_<i>.json) and $OUT/log.txt.
# PY runs hipscope, TPY the program (python3 by default).
set -u
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$ROOT"
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT"
LOG="$OUT/log.txt"
: > "$LOG"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
[ -d /tmp/site ] && export PYTHONPATH="$PYTHONPATH:/tmp/site"
PY=${PY:-python3}
TPY=${TPY:-python3}
N=${N:-7}
BUDGET_S=${BUDGET_S:-300}
W=/tmp/hipscope_s5_aa/aa_torch
rm -rf "$W"; mkdir -p "$W"
{ echo "=== environment"; date -u; hostname; nproc; uptime
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1; } >> "$LOG" 2>&1
cat > "$W/aa_torch_spec.json" <<JSON
{"name": "A/A: decode_graph.py (eager) in both arms",
 "command": ["$TPY", "tests/data/gpu/decode_graph.py", "--steps", "200", "--warmup", "20"],
 "knobs": [{"name": "HIPSCOPE_AA_ARM", "kind": "env", "values": ["same"]}],
 "repeats": 4, "max_rounds": 4, "warmup": 1, "control": false,
 "order": "rotate", "target": "local", "profiler": "none"}
JSON
for i in $(seq 0 $((N - 1))); do
    if [ $((BUDGET_S - SECONDS)) -lt 50 ]; then
        echo "=== stopped before sweep $i: $((BUDGET_S - SECONDS)) s left" >> "$LOG"; break
    fi
    echo "=== sweep $i (at $SECONDS s)" >> "$LOG"
    timeout 120 $PY -m hipscope tune --sweep "$W/aa_torch_spec.json" --json \
        > "$W/aa_torch_$i.json" 2>> "$LOG"
    echo "=== sweep $i: exit $? (at $SECONDS s)" >> "$LOG"
    $PY - "$W/aa_torch_$i.json" >> "$LOG" 2>&1 <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
for name, c in d["comparisons"].items():
    print(f"  {name} ratio {c['ratio']:.3f} [{c['ci_low']:.3f}, {c['ci_high']:.3f}] {c['verdict']}")
PYEOF
done
tar czf "$OUT/aa_torch.tar.gz" -C /tmp/hipscope_s5_aa aa_torch
echo "=== done at $SECONDS s" >> "$LOG"
