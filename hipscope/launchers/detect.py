"""What a target has: profilers, GPUs, driver and toolkit versions (``hipscope run
--detect``), and the provenance saved with every run.

One fixed shell script (no user text in it) runs on the target and prints sections
``@@<name>``; each tool is asked for its version only when present, under ``timeout``.
The target's environment is copied only for the allow-listed knobs (:data:`ENV_KNOBS`),
never a secret-looking name (``NVIDIA_API_KEY``), and the run's own env changes are
saved with secret values redacted (:func:`.spec.redact_env`).
"""

from __future__ import annotations

import re
import time
from typing import Any

from .spec import is_secret_name, redact_env

TOOLS = ("rocprofv3", "rocprof", "ncu", "nsys", "rocminfo", "amd-smi", "rocm-smi",
         "nvidia-smi", "hipcc", "nvcc", "sbatch", "srun", "python3", "setsid")
PROFILER_TOOLS = {"rocprofv3": "rocprofv3", "rocprof": "rocprof", "ncu": "ncu", "nsys": "nsys"}
ENV_KNOBS = re.compile(r"^(HIP|HSA|ROC|ROCR|ROCM|AMD|HCC|GPU|CUDA|NCCL|RCCL|NVIDIA|TORCH|"
                       r"PYTORCH|MIOPEN|OMP|MKL|OPENBLAS|UCX|FI|MPI|OMPI|SLURM)[A-Z0-9_]*$|"
                       r"^(LD_LIBRARY_PATH|PATH|HOSTNAME)$")

_T = "timeout 15"
SCRIPT = "\n".join([
    "echo @@hostname; hostname",
    "echo @@uname; uname -srm",
    "echo @@os; grep -m1 '^PRETTY_NAME=' /etc/os-release 2>/dev/null",
    f"for t in {' '.join(TOOLS)}; do p=$(command -v \"$t\" 2>/dev/null) && "
    "echo \"@@which $t $p\"; done",
    "echo @@rocm_info_version; cat /opt/rocm/.info/version 2>/dev/null",
    "echo @@amdgpu_version; cat /sys/module/amdgpu/version 2>/dev/null",
    "have() { command -v \"$1\" >/dev/null 2>&1; }",
    f"have rocprofv3 && {{ echo @@v_rocprofv3; {_T} rocprofv3 --version 2>&1 | head -5; }}",
    f"have ncu && {{ echo @@v_ncu; {_T} ncu --version 2>&1 | head -5; }}",
    f"have nsys && {{ echo @@v_nsys; {_T} nsys --version 2>&1 | head -3; }}",
    f"have hipcc && {{ echo @@v_hipcc; {_T} hipcc --version 2>&1 | head -5; }}",
    f"have nvcc && {{ echo @@v_nvcc; {_T} nvcc --version 2>&1 | tail -3; }}",
    f"have amd-smi && {{ echo @@v_amd_smi; {_T} amd-smi version 2>&1 | head -3; }}",
    f"have rocminfo && {{ echo @@rocminfo; {_T} rocminfo 2>/dev/null | "
    "grep -E '^ *(Name|Marketing Name|Device Type):'; }",
    f"have nvidia-smi && {{ echo @@nvidia_gpus; {_T} nvidia-smi "
    "--query-gpu=index,name,driver_version,memory.total --format=csv,noheader,nounits; "
    f"echo @@nvidia_cuda; {_T} nvidia-smi -q 2>/dev/null | grep -m1 'CUDA Version'; }}",
    "echo @@env; env",
    "true",
])
TORCH_SNIPPET = ("python3 -c 'import torch, json; print(json.dumps({\"torch\": torch.__version__,"
                 " \"hip\": torch.version.hip, \"cuda\": torch.version.cuda}))' 2>/dev/null")


def _sections(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    cur = None
    for line in text.splitlines():
        if line.startswith("@@"):
            head = line[2:].split(" ", 2)
            if head[0] == "which" and len(head) == 3:
                out.setdefault("which", []).append(f"{head[1]} {head[2]}")
                cur = None
                continue
            cur = head[0]
            out.setdefault(cur, [])
        elif cur is not None:
            out[cur].append(line)
    return out


def _first(lines: list[str] | None) -> str | None:
    for ln in lines or []:
        if ln.strip():
            return ln.strip()
    return None


def _version(lines: list[str] | None, pattern: str = r"(\d+\.\d+(?:\.\d+)*)") -> str | None:
    for ln in lines or []:
        m = re.search(pattern, ln)
        if m:
            return m.group(1)
    return None


def parse_rocminfo(lines: list[str]) -> list[dict[str, Any]]:
    """GPU agents from ``rocminfo`` (Name / Marketing Name / Device Type lines)."""
    gpus: list[dict[str, Any]] = []
    cur: dict[str, Any] = {}
    for ln in lines:
        key, _, val = ln.strip().partition(":")
        val = val.strip()
        if key == "Name":
            cur = {"name": val}
        elif key == "Marketing Name":
            cur["marketing_name"] = val
        elif key == "Device Type" and val == "GPU" and cur:
            gpus.append({"vendor": "AMD", "index": len(gpus), "arch": cur.get("name"),
                         "name": cur.get("marketing_name") or cur.get("name")})
    return gpus


def parse_detect_output(text: str) -> dict[str, Any]:
    s = _sections(text)
    tools = dict(ln.split(" ", 1) for ln in s.get("which", []))
    gpus = parse_rocminfo(s.get("rocminfo", []))
    driver = _first(s.get("amdgpu_version"))
    for ln in s.get("nvidia_gpus", []):
        cells = [c.strip() for c in ln.split(",")]
        if len(cells) >= 4 and cells[0].isdigit():
            gpus.append({"vendor": "NVIDIA", "index": int(cells[0]), "name": cells[1],
                         "memory_mib": float(cells[3]) if re.fullmatch(r"[\d.]+", cells[3])
                         else None})
            driver = cells[2]
    rocm = _first(s.get("rocm_info_version")) or _version(s.get("v_amd_smi"),
                                                          r"ROCm version: ([\d.]+)")
    versions = {
        "rocm": rocm,
        "hip": _version(s.get("v_hipcc"), r"HIP version: ([\w.\-]+)"),
        "cuda": _version(s.get("nvidia_cuda"), r"CUDA Version\s*:\s*([\d.]+)")
        or _version(s.get("v_nvcc"), r"release ([\d.]+)"),
        "cuda_toolkit": _version(s.get("v_nvcc"), r"release ([\d.]+)"),
        "driver": driver,
    }
    profilers = {}
    for name, tool in PROFILER_TOOLS.items():
        if tool in tools:
            raw = s.get("v_" + tool)
            profilers[name] = {"path": tools[tool], "version": _version(raw),
                               "version_text": "\n".join(raw or [])[:500] or None}
    env = {}
    for ln in s.get("env", []):
        k, sep, v = ln.partition("=")
        if sep and ENV_KNOBS.match(k) and not is_secret_name(k):
            env[k] = v
    return {"host": _first(s.get("hostname")), "kernel": _first(s.get("uname")),
            "os": (_first(s.get("os")) or "").removeprefix("PRETTY_NAME=").strip('"') or None,
            "tools": tools, "profilers": profilers, "gpus": gpus, "versions": versions,
            "env": env}


def detect(host, torch: bool = False, timeout: float = 60.0) -> dict[str, Any]:
    """Run the detection script on ``host`` (a :class:`~.hosts.Host`)."""
    res = host.run_script(SCRIPT, timeout=timeout)
    info = parse_detect_output(res.stdout)
    if torch and "python3" in info["tools"]:
        import json

        r = host.run_script(TORCH_SNIPPET, timeout=timeout)
        try:
            info["torch"] = json.loads(r.stdout.strip().splitlines()[-1])
            info["profilers"]["torch"] = {"path": info["tools"]["python3"],
                                          "version": info["torch"]["torch"]}
        except (ValueError, IndexError):
            info["torch"] = None
    return info


def collect_provenance(host, env_changes: dict[str, str | None]) -> dict[str, Any]:
    """What to save with a run: detection result plus the run's own env changes."""
    from .samples import host_clock_pair

    info = detect(host)
    info["env_changes"] = redact_env(env_changes)
    info["collected_at"] = time.time()
    clocks = host_clock_pair(host)   # aligns epoch telemetry with BOOTTIME traces
    if clocks:
        info["clocks"] = clocks
    return info


def format_detect(info: dict[str, Any]) -> str:
    lines = [f"Host:      {info.get('host')}  ({info.get('os') or '?'}, {info.get('kernel')})"]
    v = info.get("versions", {})
    lines.append("Versions:  " + ", ".join(f"{k} {val}" for k, val in v.items() if val)
                 if any(v.values()) else "Versions:  no ROCm/HIP/CUDA found")
    gpus = info.get("gpus") or []
    lines.append(f"GPUs:      {len(gpus)}" if gpus else "GPUs:      none found")
    for g in gpus:
        extra = f" ({g['arch']})" if g.get("arch") else ""
        lines.append(f"  {g['vendor']} {g['index']}: {g['name']}{extra}")
    profs = info.get("profilers") or {}
    lines.append("Profilers: " + (", ".join(
        f"{k} {p.get('version') or ''}".strip() + f" [{p['path']}]" for k, p in profs.items())
        or "none found (runs can still be timed: --profiler none)"))
    tel = [t for t in ("nvidia-smi", "amd-smi", "rocm-smi") if t in info.get("tools", {})]
    lines.append("Telemetry: " + (", ".join(tel) or "none (no nvidia-smi/amd-smi/rocm-smi)"))
    return "\n".join(lines)
