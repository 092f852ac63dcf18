#!/usr/bin/env bash
# The tuner's proof on a real GPU (written for the lent NVIDIA H200; also runs on ROCm
# with hip-python in place of cuda-python). Run from the repository root:
#
#     OUT=/some/dir bash tests/data/gpu/run_tuner_proof.sh
#
# Needs: python3 with torch, numpy and cuda-python (cuda.bindings) or hip-python;
# hipscope's own dependencies (msgspec, platformdirs, paramiko, perfetto, ...) on
# PYTHONPATH (/tmp/site is added when it exists). Takes about 4-6 minutes; every step
# has its own time limit and a failing step does not stop the later ones.
#
# Writes at most 7 files into $OUT:
#   probe.json              python -m hipscope.probe.run --json (the standalone probe)
#   probe_launcher.json     hipscope probe --quick --json (the same, through the launcher)
#   launch_bound_trace.json.gz  torch-profiler trace of the workload's baseline
#   proposals.json          hipscope tune --propose (with the stored probe of this GPU)
#   proposals_noprobe.json  the same with --no-probe (assumed figures), to compare
#   sweep.json              hipscope tune --sweep resources/workloads/sweep.json
#   log.txt                 every step's command, stderr, exit status and duration
set -u
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$ROOT"
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT"
LOG="$OUT/log.txt"
: > "$LOG"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
[ -d /tmp/site ] && export PYTHONPATH="$PYTHONPATH:/tmp/site"
export HIPSCOPE_DATA_DIR=/tmp/hipscope_proof_data      # run folders + probe store, not in $OUT
export HIPSCOPE_CACHE_DIR=/tmp/hipscope_proof_cache
rm -rf "$HIPSCOPE_DATA_DIR" "$HIPSCOPE_CACHE_DIR"
WORK=$(mktemp -d /tmp/hipscope_proof.XXXXXX)
PY=python3
WL=hipscope/resources/workloads/launch_bound.py

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
  echo "=== environment"; date; hostname
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
  $PY -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "hip", torch.version.hip)'
  $PY -c 'import cuda.bindings, importlib.metadata as m; print("cuda-bindings", m.version("cuda-bindings"))' 2>&1 | tail -1
} >> "$LOG" 2>&1

# 1. the probe, standalone (the exact command the launchers run on a target)
step probe 120 "$OUT/probe.json" $PY -m hipscope.probe.run --json
# store it for this GPU (the tuner looks it up by the trace's GPU name)
step probe-import 60 "$WORK/import.txt" $PY -m hipscope probe --import "$OUT/probe.json" --target local
cat "$WORK/import.txt" >> "$LOG"

# 2. the probe through the launcher (run folder, the standalone copy run by path);
#    --no-save keeps the full probe above as the stored one
step probe-launcher 180 "$OUT/probe_launcher.json" $PY -m hipscope probe --quick --json --no-save

# 3. the workload: a smoke run of every mode, then the baseline under the torch profiler
for args in "--streams 1" "--streams 4" "--streams 1 --graph on" "--streams 4 --graph on"; do
    step "workload $args" 120 "$WORK/smoke.txt" $PY $WL $args --steps 20
    tail -1 "$WORK/smoke.txt" >> "$LOG"
done
# optimizer-step schedule: 5 warm-up + 1 timed step skipped, 1 warm-up, 5 recorded
step profile 240 "$WORK/profile.txt" $PY -m hipscope.launchers.torch_profile \
    --out "$WORK/trace" --wait 6 --warmup 1 --active 5 -- $WL --steps 20 --warmup 5
tail -1 "$WORK/profile.txt" >> "$LOG"
TRACE=$(ls "$WORK"/trace/*.pt.trace.json 2>/dev/null | head -1)
if [ -n "$TRACE" ]; then
    gzip -c "$TRACE" > "$OUT/launch_bound_trace.json.gz"
    TRACE_GZ="$OUT/launch_bound_trace.json.gz"
    # 4. proposals for the baseline: with the stored probe, and without it
    step propose 180 "$OUT/proposals.json" $PY -m hipscope tune --propose "$TRACE_GZ" --json
    step propose-noprobe 180 "$OUT/proposals_noprobe.json" \
        $PY -m hipscope tune --propose "$TRACE_GZ" --json --no-probe
    $PY -m hipscope tune --propose "$TRACE_GZ" >> "$LOG" 2>&1
else
    echo "=== no trace was written: proposals skipped" >> "$LOG"
fi

# 5. the A/B sweep: --streams {1,2,4,8} x --graph {off,on}, 5 interleaved repeats
step sweep 360 "$OUT/sweep.json" $PY -m hipscope tune --sweep hipscope/resources/workloads/sweep.json --json
$PY - "$OUT/sweep.json" >> "$LOG" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for name, c in d["comparisons"].items():
    print(f"{name:24s} ratio {c['ratio']:.3f} [{c['ci_low']:.3f}, {c['ci_high']:.3f}] {c['verdict']}")
print("best:", d["best"], "| measured from:", sorted({r["measurement"]["wall_from"] for r in d["runs"]}))
EOF

rm -rf "$WORK"
echo "=== done" >> "$LOG"
ls -l "$OUT" >> "$LOG"
