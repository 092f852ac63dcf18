"""Live GPU telemetry: poll nvidia-smi / amd-smi / rocm-smi on the target at an interval
and save the samples with the run (``telemetry.csv``).

One-shot polls (one command per sample) are used for every tool: they work the same
locally and over SSH, survive a reconnect, and a slow poll only delays the next one.
Units are normalised: percent, MiB, W, degrees C, MHz. ``time`` is the poller's clock
(epoch seconds) when the answer arrived; ``tool_time`` keeps the tool's own timestamp
(nvidia-smi prints the target's local time) for reference.

The parsers are pure functions tested on recordings of each tool's documented output
(``tests/data/telemetry/``).
"""

from __future__ import annotations

import csv
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import astuple, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the mixin is a Launcher to mypy (it uses its attributes), not at run time
    from .base import Launcher
    from .hosts import Host
    _LauncherBase = Launcher
else:
    _LauncherBase = object

log = logging.getLogger(__name__)

NVIDIA_QUERY = ("timestamp,index,utilization.gpu,memory.used,memory.total,power.draw,"
                "temperature.gpu,clocks.sm")
COMMANDS: dict[str, list[str]] = {
    "nvidia-smi": ["nvidia-smi", f"--query-gpu={NVIDIA_QUERY}",
                   "--format=csv,noheader,nounits"],
    "amd-smi": ["amd-smi", "metric", "--usage", "--power", "--clock", "--temperature",
                "--mem-usage", "--json"],
    "rocm-smi": ["rocm-smi", "--showuse", "--showpower", "--showtemp", "--showclocks",
                 "--showmeminfo", "vram", "--json"],
}
#: preference: amd-smi replaces rocm-smi where both exist
TOOL_ORDER = ("nvidia-smi", "amd-smi", "rocm-smi")


@dataclass(frozen=True)
class Sample:
    time: float
    gpu: int
    util_pct: float | None
    mem_used_mib: float | None
    mem_total_mib: float | None
    power_w: float | None
    temp_c: float | None
    sclk_mhz: float | None
    source: str
    tool_time: str | None = None


CSV_HEADER = [f.name for f in fields(Sample)]


class TelemetryParseError(ValueError):
    pass


def _num(v: Any) -> float | None:
    """A number from '123', '123.4 W', '(2100Mhz)', {'value': 5, 'unit': '%'}; N/A -> None."""
    if isinstance(v, dict):
        v = v.get("value")
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    m = re.search(r"-?\d+(?:\.\d+)?", str(v))
    return float(m.group()) if m else None


def _section(g: dict[str, Any], key: str) -> dict[str, Any]:
    """g[key] when it is an object, else an empty one (a tool version without it)."""
    v = g.get(key)
    return v if isinstance(v, dict) else {}


def _mib(v: Any, default_unit: str = "MB") -> float | None:
    """amd-smi 'MB' values are MiB (196592 MB on a 192 GiB MI300X)."""
    x = _num(v)
    if x is None:
        return None
    unit = (v.get("unit") if isinstance(v, dict) else None) or default_unit
    scale = {"B": 1 / 2**20, "KB": 1 / 1024, "MB": 1.0, "GB": 1024.0}.get(unit.upper(), 1.0)
    return x * scale


# --------------------------------------------------------------------------- parsers

def parse_nvidia_smi(text: str, now: float) -> list[Sample]:
    """``nvidia-smi --query-gpu=<NVIDIA_QUERY> --format=csv,noheader,nounits`` lines."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != 8:
            raise TelemetryParseError(
                f"nvidia-smi line {n}: expected 8 comma-separated values "
                f"({NVIDIA_QUERY}), found {len(cells)}")
        ts, idx, util, used, total, power, temp, sm = cells
        out.append(Sample(now, int(idx), _num(util), _num(used), _num(total), _num(power),
                          _num(temp), _num(sm), "nvidia-smi", ts))
    return out


def parse_amd_smi(text: str, now: float) -> list[Sample]:
    """``amd-smi metric ... --json``: a list of GPUs (ROCm 6.x) or ``{"gpu_data": [...]}``
    (amd-smi 25.x+, ROCm 6.4 / 7.x)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise TelemetryParseError(f"amd-smi: not JSON ({exc})") from None
    if isinstance(data, dict):
        data = data.get("gpu_data", [])
    out = []
    for g in data:
        if not isinstance(g, dict) or "gpu" not in g:
            continue
        usage, mem = _section(g, "usage"), _section(g, "mem_usage")
        power, temp, clock = _section(g, "power"), _section(g, "temperature"), _section(g, "clock")
        pw = _num(power.get("socket_power"))
        if pw is None:
            pw = _num(power.get("average_socket_power"))
        t = _num(temp.get("hotspot"))
        if t is None:
            t = _num(temp.get("edge"))
        gfx0 = clock.get("gfx_0")
        sclk = _num(gfx0.get("clk")) if isinstance(gfx0, dict) else None
        out.append(Sample(now, int(g["gpu"]), _num(usage.get("gfx_activity")),
                          _mib(mem.get("used_vram")), _mib(mem.get("total_vram")),
                          pw, t, sclk, "amd-smi"))
    return out


def parse_rocm_smi(text: str, now: float) -> list[Sample]:
    """``rocm-smi --showuse --showpower --showtemp --showclocks --showmeminfo vram --json``:
    ``{"card0": {"GPU use (%)": "37", ...}, ...}`` (values are strings)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise TelemetryParseError(f"rocm-smi: not JSON ({exc})") from None
    out = []
    for card, d in data.items():
        m = re.fullmatch(r"card(\d+)", card)
        if not m or not isinstance(d, dict):
            continue
        power = next((v for k, v in d.items() if k.endswith("Package Power (W)")), None)
        temp = d.get("Temperature (Sensor junction) (C)", d.get("Temperature (Sensor edge) (C)"))
        used = _num(d.get("VRAM Total Used Memory (B)"))
        total = _num(d.get("VRAM Total Memory (B)"))
        out.append(Sample(now, int(m.group(1)), _num(d.get("GPU use (%)")),
                          used / 2**20 if used is not None else None,
                          total / 2**20 if total is not None else None,
                          _num(power), _num(temp), _num(d.get("sclk clock speed:")),
                          "rocm-smi"))
    return out


PARSERS: dict[str, Callable[[str, float], list[Sample]]] = {
    "nvidia-smi": parse_nvidia_smi, "amd-smi": parse_amd_smi, "rocm-smi": parse_rocm_smi}


# --------------------------------------------------------------------------- files

def write_samples(path: Path, samples: Iterable[Sample]) -> None:
    new = not path.exists() or path.stat().st_size == 0
    with open(path, "a", newline="") as fh:
        w = csv.writer(fh)
        if new:
            w.writerow(CSV_HEADER)
        for s in samples:
            w.writerow(["" if v is None else v for v in astuple(s)])


def read_samples(path: Path) -> list[Sample]:
    out = []
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            vals: dict[str, Any] = {}
            for f in fields(Sample):
                v = row.get(f.name, "")
                if f.name in ("source", "tool_time"):
                    vals[f.name] = v or None
                elif f.name == "gpu":
                    vals[f.name] = int(v)
                else:
                    vals[f.name] = float(v) if v != "" else None
            out.append(Sample(**vals))
    return out


# --------------------------------------------------------------------------- poller

def find_tools(host) -> list[str]:
    """Telemetry tools present on ``host`` (one NVIDIA, one AMD at most)."""
    res = host.run_script("for t in nvidia-smi amd-smi rocm-smi; do "
                          "command -v \"$t\" >/dev/null 2>&1 && echo \"$t\"; done; true")
    found = [t for t in res.stdout.split() if t in COMMANDS]
    if "amd-smi" in found and "rocm-smi" in found:
        found.remove("rocm-smi")
    return [t for t in TOOL_ORDER if t in found]


class TelemetryPoller:
    """Polls ``host`` every ``interval`` seconds on its own thread until stop()."""

    def __init__(self, host, interval: float, out: Path,
                 on_samples: Callable[[list[Sample]], None] | None = None,
                 on_message: Callable[[str], None] | None = None,
                 tools: list[str] | None = None):
        self.host, self.interval, self.out = host, float(interval), Path(out)
        self.on_samples, self.on_message = on_samples, on_message
        self.tools = tools
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="telemetry")
        self._failed: set[str] = set()
        self.count = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _say(self, text: str) -> None:
        if self.on_message:
            self.on_message(text)

    def _loop(self) -> None:
        try:
            tools = self.tools if self.tools is not None else find_tools(self.host)
        except Exception as exc:  # noqa: BLE001 - a broken link: the launcher reports it
            self._say(f"telemetry off: {exc}")
            return
        if not tools:
            self._say("telemetry off: no nvidia-smi, amd-smi or rocm-smi on the target")
            return
        self._say(f"telemetry from {', '.join(tools)} every {self.interval:g}s")
        while not self._stop.is_set():
            for tool in tools:
                self._poll(tool)
            self._stop.wait(self.interval)

    def _poll(self, tool: str) -> None:
        try:
            res = self.host.run(COMMANDS[tool], timeout=max(5.0, 2 * self.interval))
            now = time.time()
            if not res.ok:
                raise TelemetryParseError(res.stderr.strip()[:200] or f"exit {res.returncode}")
            samples = PARSERS[tool](res.stdout, now)
        except Exception as exc:  # noqa: BLE001 - one tool failing must not stop the poller
            if tool not in self._failed:
                self._failed.add(tool)
                self._say(f"telemetry: {tool} failed: {exc}")
            return
        if samples:
            write_samples(self.out, samples)
            self.count += len(samples)
            if self.on_samples:
                self.on_samples(samples)


class TelemetryRunMixin(_LauncherBase):
    """Live telemetry for a launcher whose target runs the program (local and SSH runs).

    Expects the :class:`~.base.Launcher` attributes ``spec``, ``folder``, ``host``,
    ``emit`` and ``message``.
    """

    host: Host
    _telemetry: TelemetryPoller | None = None

    def _start_telemetry(self) -> None:
        """Poll the target into ``telemetry.csv`` when the spec asks for telemetry."""
        if self.spec.telemetry_interval:
            self._telemetry = TelemetryPoller(self.host, self.spec.telemetry_interval,
                                              self.folder.path / "telemetry.csv",
                                              on_samples=self._on_samples,
                                              on_message=self.message)
            self._telemetry.start()

    def _on_samples(self, samples) -> None:
        self.emit("telemetry", samples=tuple(samples))

    def _stop_telemetry(self) -> None:
        if self._telemetry is not None:
            self._telemetry.stop()
            self._telemetry = None
