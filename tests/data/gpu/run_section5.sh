#!/usr/bin/env bash
# Issue 12 section 5 on a real GPU (written for the lent NVIDIA H200): four workloads of
# our own, each profiled through `hipscope run --profiler torch`, proposed on
# (`hipscope tune --propose <run folder> --json`) and swept A/B over the proposed change
# with the A/A control (`hipscope tune --sweep`, tight budget); then ten A/A sweeps of one
# compiled CUDA program (the same program in every arm). Run from the repository root:
#
#     OUT=/some/dir bash tests/data/gpu/run_section5.sh
#
# Needs: python3 with torch (the programs), nvcc (aa_loop.cu; or AA_BIN=a built one);
# hipscope's own dependencies on PYTHONPATH (/tmp/site is added when it exists). PY runs
# hipscope, TPY the programs (python3 by default; tests may point TPY at a stand-in).
# BUDGET_S (default 520) bounds the whole script: each sweep's time budget is cut to
# what is left, and the A/A sweeps run only while time remains (the log says how many).
#
# Writes into $OUT (at most 6 files): one <workload>.tar.gz per workload, holding
#   run/spec.json, run/status.json, run/stdout.log  the run folder's files
#   trace.json.gz      the run's torch-profiler trace (gzipped)
#   proposals.json     hipscope tune --propose <run folder> --json
#   sweep_spec.json    the sweep of the proposed change (baseline, change, A/A control)
#   sweep.json         hipscope tune --sweep sweep_spec.json --json
# aa.tar.gz (aa_spec.json, aa_<i>.json: the A/A sweeps), and log.txt (every command,
# its stderr, exit status and duration, and a summary line per sweep).
set -u
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$ROOT"
OUT=${OUT:?set OUT to the output folder}
mkdir -p "$OUT"
LOG="$OUT/log.txt"
: > "$LOG"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
[ -d /tmp/site ] && export PYTHONPATH="$PYTHONPATH:/tmp/site"
export HIPSCOPE_DATA_DIR=/tmp/hipscope_s5_data       # run folders, not in $OUT
export HIPSCOPE_CACHE_DIR=/tmp/hipscope_s5_cache
WORK=/tmp/hipscope_s5_work
rm -rf "$HIPSCOPE_DATA_DIR" "$HIPSCOPE_CACHE_DIR" "$WORK"
mkdir -p "$WORK"
PY=${PY:-python3}
TPY=${TPY:-python3}
BUDGET_S=${BUDGET_S:-520}
AA_RESERVE_S=${AA_RESERVE_S:-80}       # kept back for the A/A sweeps
G=tests/data/gpu

left() { echo $((BUDGET_S - SECONDS)); }

step() {   # step NAME TIMEOUT_S STDOUT_FILE CMD...
    local name=$1 limit=$2 out=$3; shift 3
    echo "=== $name: $*" >> "$LOG"
    local t0=$SECONDS
    timeout "$limit" "$@" > "$out" 2>> "$LOG"
    local rc=$?
    echo "=== $name: exit $rc after $((SECONDS - t0)) s (at $SECONDS s)" >> "$LOG"
    return $rc
}

summary() {   # summary SWEEP_JSON: one line per comparison, into the log
    $PY - "$1" >> "$LOG" 2>&1 <<'PYEOF'
import json, statistics, sys
d = json.load(open(sys.argv[1]))
rows = list(d["comparisons"].items()) + [("A/A control", d["control"])]
for name, c in rows:
    print(f"  {name:36s} ratio {c['ratio']:.3f} [{c['ci_low']:.3f}, {c['ci_high']:.3f}] "
          f"{c['verdict']}")
for i, v in enumerate(d["variants"]):
    w = [r["measurement"]["wall_s"] for r in d["runs"] if r["variant"] == i and not r["warmup"]]
    print(f"  own timing {v['name'] or '(same)':30s} median {statistics.median(w) * 1e3:.4f} ms"
          f" of {len(w)} runs")
print("  rounds", d["rounds"], "stopped", d["stopped"], "source", d["source"],
      "best", d["best"], "warnings", d["warnings"])
PYEOF
}

{
  echo "=== environment"; date -u; hostname; nproc; uptime
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1
  $TPY -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1
  git -C "$ROOT" log -1 --format='hipscope %h %s' 2>/dev/null || true
} >> "$LOG" 2>&1

# workload KEY PROGRAM "RUN_ARGS" "RUN_ENV" "SWEEP_ARGS" KNOB_JSON
#   RUN_ENV: K=V for `hipscope run --env` and for the sweep's baseline ("" for none)
#   KNOB_JSON: the sweep's knobs (the proposed change); "HW" takes the proposal's env
workload() {
    local key=$1 prog=$2 run_args=$3 run_env=$4 sweep_args=$5 knobs=$6
    local d="$WORK/$key"; mkdir -p "$d/run"
    local envopt=() envpre=()
    [ -n "$run_env" ] && envopt=(--env "$run_env") && envpre=(env "$run_env")
    step "$key: run" 150 "$d/run_stdout.txt" $PY -m hipscope run --profiler torch \
        "${envopt[@]}" --name "$key" -- $TPY "$G/$prog" $run_args
    cat "$d/run_stdout.txt" >> "$LOG"; rm -f "$d/run_stdout.txt"
    local run; run=$(ls -d "$HIPSCOPE_DATA_DIR"/runs/*-"$key"-*/ 2>/dev/null | head -1)
    run=${run%/}
    echo "=== $key: run folder: ${run:-none}" >> "$LOG"
    if [ -n "$run" ]; then
        for f in spec.json status.json stdout.log; do
            [ -f "$run/$f" ] && cp "$run/$f" "$d/run/$f"
        done
        local trace; trace=$(find "$run" -name '*.pt.trace.json' | head -1)
        [ -n "$trace" ] && gzip -c "$trace" > "$d/trace.json.gz" \
            && echo "=== $key: trace $(basename "$trace") $(stat -c %s "$trace") bytes" >> "$LOG"
        step "$key: propose" 120 "$d/proposals.json" $PY -m hipscope tune --propose "$run" --json
        $PY - "$d/proposals.json" >> "$LOG" 2>&1 <<'PYEOF'
import json, sys
try:
    props = json.load(open(sys.argv[1]))
except (OSError, ValueError) as exc:
    props = []
    print(f"  no proposals: {exc}")
for p in props:
    e = p["estimate"]
    f = e["gain_ns"] / e["window_ns"] if e["window_ns"] else 0.0
    est = (f"step {e['step_ns'] / 1e6:.3f} ms -> about {e['step_ns'] * (1 - f) / 1e6:.3f} ms"
           if e["basis"] == "steps" else f"{f:.1%} of the kernel window")
    print(f"  [{p['rule']}] {p['title']}\n      estimate: {est} ({e['basis']})")
PYEOF
    fi
    if [ "$knobs" = HW ]; then        # the proposal's own env change (hw-queues)
        knobs=$($PY - "$d/proposals.json" <<'PYEOF'
import json, sys
try:
    env = next(p for p in json.load(open(sys.argv[1])) if p["rule"] == "hw-queues")["experiment"]["env"]
except (OSError, ValueError, StopIteration, KeyError):
    env = {"CUDA_DEVICE_MAX_CONNECTIONS": "9"}          # no proposal: the documented one
print(json.dumps([{"name": k, "kind": "env", "values": [v]} for k, v in env.items()]))
PYEOF
)
    fi
    local budget=$(( $(left) - AA_RESERVE_S - 30 ))
    [ $budget -gt 75 ] && budget=75
    if [ $budget -lt 20 ]; then
        echo "=== $key: sweep skipped: $(left) s left of the budget" >> "$LOG"
    else
        local cmd; cmd=$($PY -c 'import json, sys; print(json.dumps(sys.argv[1:]))' \
            $TPY "$G/$prog" $sweep_args)
        cat > "$d/sweep_spec.json" <<JSON
{"name": "$key: ${run_env:-defaults} (baseline) vs the proposed change",
 "command": $cmd, "knobs": $knobs,
 "repeats": 4, "max_rounds": 9, "max_seconds": $budget, "warmup": 1, "control": true,
 "order": "rotate", "target": "local", "profiler": "none"}
JSON
        step "$key: sweep" $((budget + 90)) "$d/sweep.json" "${envpre[@]}" \
            $PY -m hipscope tune --sweep "$d/sweep_spec.json" --json && summary "$d/sweep.json"
    fi
    tar czf "$OUT/$key.tar.gz" -C "$WORK" "$key"
}

workload decode decode_graph.py "--steps 30 --warmup 5" "" "--steps 200 --warmup 20" \
    '[{"name": "cuda-graph", "kind": "arg", "template": "--cuda-graph={value}", "values": ["on"]}]'
workload streams streams_narrow.py "--steps 20 --warmup 5" CUDA_DEVICE_MAX_CONNECTIONS=1 \
    "--steps 50 --warmup 5" HW
workload pageable pageable_copies.py "--steps 20 --warmup 5" "" "--steps 30 --warmup 5" \
    '[{"name": "pinned", "kind": "arg", "template": "--pinned", "values": ["on"]}]'
workload sync sync_step.py "--steps 30 --warmup 5" "" "--steps 60 --warmup 5" \
    '[{"name": "no-sync", "kind": "arg", "template": "--no-sync", "values": ["on"]}]'

# ten A/A sweeps: the same compiled program in all three arms (baseline, an env variable
# the program ignores, the A/A control); tight budget each
AA="$WORK/aa"; mkdir -p "$AA"
AA_BIN=${AA_BIN:-}
if [ -z "$AA_BIN" ]; then
    step "aa: build" 120 /dev/null nvcc -O2 -arch=sm_90 -o "$WORK/aa_loop" "$G/aa_loop.cu" \
        && AA_BIN="$WORK/aa_loop"
fi
if [ -n "$AA_BIN" ]; then
    cat > "$AA/aa_spec.json" <<JSON
{"name": "A/A: aa_loop in every arm", "command": ["$AA_BIN", "200"],
 "knobs": [{"name": "HIPSCOPE_AA_ARM", "kind": "env", "values": ["same"]}],
 "repeats": 5, "max_rounds": 5, "max_seconds": 15, "warmup": 1, "control": true,
 "order": "rotate", "target": "local", "profiler": "none"}
JSON
    for i in 0 1 2 3 4 5 6 7 8 9; do
        if [ "$(left)" -lt 12 ]; then
            echo "=== aa: stopped before sweep $i: $(left) s left of the budget" >> "$LOG"
            break
        fi
        step "aa: sweep $i" 60 "$AA/aa_$i.json" $PY -m hipscope tune --sweep "$AA/aa_spec.json" \
            --json && summary "$AA/aa_$i.json"
    done
fi
tar czf "$OUT/aa.tar.gz" -C "$WORK" aa
echo "=== done at $SECONDS s" >> "$LOG"
ls -l "$OUT" >> "$LOG"
