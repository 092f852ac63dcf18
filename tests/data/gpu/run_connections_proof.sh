#!/usr/bin/env bash
# Issue 12, first "Done when" line, on a real GPU (written for the lent NVIDIA H200):
# a run started with CUDA_DEVICE_MAX_CONNECTIONS=1 must make `hipscope tune --propose`
# propose raising it *from 1*, and an A/B sweep must measure what raising it gains.
# Run from the repository root:
#
#     OUT=/some/dir bash tests/data/gpu/run_connections_proof.sh
#
# Needs: python3 with torch (the program); hipscope's own dependencies on PYTHONPATH
# (/tmp/site is added when it exists). PY runs hipscope, TPY is the program's python
# (both python3 by default; tests may point TPY at a stand-in). About 2-3 minutes.
#
# Writes at most 8 files into $OUT:
#   trace.json.gz     the torch-profiler trace of the run (CUDA_DEVICE_MAX_CONNECTIONS=1)
#   spec.json         the run folder's spec (the tuner reads the run's env from it)
#   status.json       the run folder's status
#   proposals.json    hipscope tune --propose <run folder> --json
#   sweep_spec.json   the sweep: baseline (1, inherited) vs 8 vs 32, plus the A/A control
#   sweep.json        hipscope tune --sweep sweep_spec.json --json
#   report.json       hipscope report <trace> --json
#   log.txt           every step's command, stderr, exit status and duration
set -u
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$ROOT"
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT"
LOG="$OUT/log.txt"
: > "$LOG"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
[ -d /tmp/site ] && export PYTHONPATH="$PYTHONPATH:/tmp/site"
export HIPSCOPE_DATA_DIR=/tmp/hipscope_conn_data      # run folders, not in $OUT
export HIPSCOPE_CACHE_DIR=/tmp/hipscope_conn_cache
rm -rf "$HIPSCOPE_DATA_DIR" "$HIPSCOPE_CACHE_DIR"
PY=${PY:-python3}
TPY=${TPY:-python3}
WL=tests/data/gpu/streams_connections.py

step() {   # step NAME TIMEOUT_S STDOUT_FILE CMD...
    local name=$1 limit=$2 out=$3; shift 3
    echo "=== $name: $*" >> "$LOG"
    local t0=$SECONDS
    timeout "$limit" "$@" > "$out" 2>> "$LOG"
    local rc=$?
    echo "=== $name: exit $rc after $((SECONDS - t0)) s" >> "$LOG"
    return $rc
}

{
  echo "=== environment"; date -u; hostname
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
  $TPY -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1
} >> "$LOG" 2>&1

# 1. the program alone at 1, 8 and 32 connections (its own CUDA-event timing)
#    (and, for comparison, with the streams' launches interleaved: --order breadth)
for c in 1 8 32 "1 --order breadth" "8 --order breadth"; do
    set -- $c
    step "own timing, $c connections" 120 "$OUT/own.txt" \
        env CUDA_DEVICE_MAX_CONNECTIONS=$1 $TPY $WL "${@:2}"
    tail -1 "$OUT/own.txt" >> "$LOG"
done
rm -f "$OUT/own.txt"

# 2. the profiled run, started with one connection
step run 240 "$OUT/run_stdout.txt" $PY -m hipscope run --profiler torch \
    --env CUDA_DEVICE_MAX_CONNECTIONS=1 --name connections -- $TPY $WL --steps 10 --warmup 3
cat "$OUT/run_stdout.txt" >> "$LOG"; rm -f "$OUT/run_stdout.txt"
RUN=$(ls -d "$HIPSCOPE_DATA_DIR"/runs/*/ 2>/dev/null | head -1)
RUN=${RUN%/}
echo "=== run folder: ${RUN:-none}" >> "$LOG"
if [ -n "$RUN" ]; then
    ls -lR "$RUN" >> "$LOG"
    for f in spec.json status.json; do [ -f "$RUN/$f" ] && cp "$RUN/$f" "$OUT/$f"; done
    TRACE=$(find "$RUN" -name '*.pt.trace.json' | head -1)
    [ -n "$TRACE" ] && gzip -c "$TRACE" > "$OUT/trace.json.gz"
    # 3. the proposal, from the run folder (the run's env is read from its spec)
    step propose 180 "$OUT/proposals.json" $PY -m hipscope tune --propose "$RUN" --json
    $PY -m hipscope tune --propose "$RUN" >> "$LOG" 2>&1
    # 4. the report of the trace (inside the run folder: carries the run's provenance)
    [ -n "$TRACE" ] && step report 180 "$OUT/report.json" $PY -m hipscope report "$TRACE" --json
fi

# 5. the A/B sweep: the baseline inherits CUDA_DEVICE_MAX_CONNECTIONS=1; knob 8 and 32;
#    the A/A control; a tight budget (each run is a few seconds of interpreter + CUDA set-up)
cat > "$OUT/sweep_spec.json" <<EOF
{"name": "streams_connections: CUDA_DEVICE_MAX_CONNECTIONS 1 (baseline) vs 8 vs 32",
 "command": ["$TPY", "$WL", "--steps", "20", "--warmup", "5"],
 "repeats": 5, "max_rounds": 10, "max_seconds": 120, "warmup": 1, "control": true,
 "order": "rotate", "target": "local", "profiler": "none",
 "knobs": [{"name": "CUDA_DEVICE_MAX_CONNECTIONS", "kind": "env", "values": ["8", "32"]}]}
EOF
step sweep 300 "$OUT/sweep.json" env CUDA_DEVICE_MAX_CONNECTIONS=1 \
    $PY -m hipscope tune --sweep "$OUT/sweep_spec.json" --json
$PY - "$OUT/sweep.json" >> "$LOG" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for name, c in d["comparisons"].items():
    print(f"{name:32s} ratio {c['ratio']:.3f} [{c['ci_low']:.3f}, {c['ci_high']:.3f}] {c['verdict']}")
c = d["control"]
print(f"{'A/A control':32s} ratio {c['ratio']:.3f} [{c['ci_low']:.3f}, {c['ci_high']:.3f}] {c['verdict']}")
print("rounds", d["rounds"], "stopped", d["stopped"], "source", d["source"], "best", d["best"])
EOF

echo "=== done" >> "$LOG"
ls -l "$OUT" >> "$LOG"
