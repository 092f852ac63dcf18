#!/usr/bin/env bash
# The launchers' GPU path on a real NVIDIA GPU (run on the lent H200 from the repo root):
#   OUT=/some/dir bash tests/data/gpu/run_launcher_proof.sh
# 1. hipscope run --profiler torch on a PyTorch program (the recording program's
#    multi-stream step), with live nvidia-smi telemetry;
# 2. hipscope run --profiler ncu on a CUDA program (vadd_streams.cu, built with nvcc);
# then opens each run's trace with hipscope report --json. Writes launcher_proof.log
# and the two reports (+ telemetry.csv) into $OUT.
set -u
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$ROOT"
OUT=${OUT:?set OUT}
mkdir -p "$OUT"
LOG="$OUT/launcher_proof.log"
: > "$LOG"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
[ -d /tmp/site ] && export PYTHONPATH="$PYTHONPATH:/tmp/site"
export HIPSCOPE_DATA_DIR=/tmp/hipscope_launch_data HIPSCOPE_CACHE_DIR=/tmp/hipscope_launch_cache
rm -rf "$HIPSCOPE_DATA_DIR" "$HIPSCOPE_CACHE_DIR"
W=$(mktemp -d)
cat > "$W/torch_prog.py" <<'PY'
import torch
streams = [torch.cuda.Stream() for _ in range(2)]
m = [torch.randn(1024, 1024, device="cuda") for _ in streams]
for step in range(8):
    for st, x in zip(streams, m):
        with torch.cuda.stream(st):
            y = torch.tanh(x @ x * 1e-3)
    torch.cuda.synchronize()
print("torch_prog ok")
PY
run_one() {  # NAME ARGS...  -> prints the run folder (last stderr line says it)
    local name=$1; shift
    echo "=== $name: hipscope run $*" >> "$LOG"
    timeout 300 python3 -m hipscope run --name "$name" "$@" > "$W/$name.out" 2> "$W/$name.err"
    echo "=== $name exit $?" >> "$LOG"
    cat "$W/$name.out" "$W/$name.err" >> "$LOG"
}
run_one torchrun --profiler torch --telemetry 0.2 -- python3 "$W/torch_prog.py"
nvcc -O2 -o "$W/vadd_streams" tests/data/gpu/vadd_streams.cu >> "$LOG" 2>&1
run_one ncurun --profiler ncu -- "$W/vadd_streams"
python3 -m hipscope runs --json > "$OUT/runs.json" 2>> "$LOG"
for d in "$HIPSCOPE_DATA_DIR"/runs/*/; do
    name=$(basename "$d")
    echo "=== run folder $name" >> "$LOG"; find "$d" -maxdepth 3 -type f | sort >> "$LOG"
    traces=$(python3 - "$d" <<'PY'
import json, sys, pathlib
d = pathlib.Path(sys.argv[1])
st = json.loads((d / "status.json").read_text()) if (d / "status.json").exists() else {}
print(" ".join(st.get("trace_inputs") or []) if isinstance(st, dict) else "")
PY
)
    echo "trace inputs: $traces" >> "$LOG"
    label=${name#*-*-}      # 20261129-190304-torchrun-b8f5 -> torchrun-b8f5
    [ -n "$traces" ] && python3 -m hipscope report --json $traces > "$OUT/report_${label%%-*}.json" 2>> "$LOG"
    for t in $traces; do case "$t" in *.pt.trace.json) gzip -c "$t" > "$OUT/torchrun_trace.json.gz";; esac; done
    [ -f "$d/telemetry.csv" ] && cp "$d/telemetry.csv" "$OUT/telemetry.csv"
done
echo "=== done" >> "$LOG"
