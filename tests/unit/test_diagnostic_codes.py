"""Every warning a reader emits has a specific, stable code (docs/readers.md): coded
where it is made (``parsers._common.warn``, ``diagnostics.coded``) or, for readers
that still append plain strings, by the message table ``model/diagnostic_codes.py``.

Checked three ways: (1) every warning site in the readers is coded or its message (the
site's own text with placeholder values) matches a pattern, and every pattern matches a
site; (2) each pattern against messages hipscope wrote on real samples and fixtures;
(3) reading every real sample and reader fixture gives no ``reader.warning``."""

from __future__ import annotations

import ast
import json

import pytest

from hipscope.cli.main import main
from hipscope.model.diagnostic_codes import PATTERNS, code_of, where_of
from hipscope.model.diagnostics import GENERIC, diagnostics
from hipscope.parsers import open_trace
from tests.conftest import ROOT, SAMPLES

SITE_DIRS = (ROOT / "hipscope" / "parsers", ROOT / "hipscope" / "launchers")
# sites that pass on a warning made (and coded) elsewhere
PASSED_ON = {
    ("_common.py", "gz_warning"): "read_bytes_tolerant's, coded input.truncated",
    ("decode.py", "gz_warn"): "read_bytes_tolerant's, coded input.truncated",
    ("__init__.py", "warn"): "rocprofv3_json: read_bytes_tolerant's, coded input.truncated",
    ("__init__.py", "note"): "rocprofv3_csv: files.py _skip_note (in FORMATTED)",
    ("columns.py", "text"): "rocprofv3_csv Load.warn itself",
    ("samples.py", "why or 'telemetry not shown'"): "_clock_offset's sentences, each "
        "'telemetry not shown: ...' (telemetry.not_shown)",
    ("_intervals.py", "coded('times.end_before_start', text, where) if masks['backwards']"
                      ".any() else coded('times.out_of_range', text, where)"): "coded",
}
# sites whose whole text is formatted: the messages they write (nsys tables.py's keys)
FORMATTED = {
    ("__init__.py", "note"): ["skipped /data/run/1234_agent_info.csv: empty; it is not read "
                              "as part of the rocprofv3 set"],
    ("export.py", "dropped 7 7"): ["dropped 3 kernels without a start or end",
                                   "dropped 2 kernels that end before they start"],
}
# messages hipscope wrote on real samples and fixtures (copied from its output)
REAL = {
    "counters.conflicting_passes": "6 counters were measured again in other replay passes "
        "with different values (CPC_ME1_BUSY_FOR_PACKET_DECODE, GRBM_COUNT); kept "
        "pmc_perf_0.csv's values",
    "devices.unnamed": "the trace has no deviceProperties: devices are named by id only",
    "links.ambiguous_correlation": "sdk-docs-2025-08-rocm7.0/*.csv: 7 kernels have a "
        "correlation id shared by several API rows (files from different runs or "
        "processes?); left unlinked",
    "links.duplicate_api_rows": "sdk-docs-2025-08-rocm7.0/*.csv: 5 API rows appear in more "
        "than one file (e.g. hip_trace.csv and hip_compile_trace.csv); kept once",
    "links.no_correlation_id": "sdk-docs-2024-07-rocm6.2/*.csv: 1 kernels have no "
        "correlation id (Correlation_Id 0 or empty) and cannot be linked to an API call",
    "links.no_launch_call": "tests/data/jax/gpu/gpu2.trace.json.gz: 1 of 17 kernels have no "
        "launch call with the same correlation_id (outside the profiling window or not "
        "recorded)",
    "nsys.open_ranges": "dropped 1 NVTX ranges that never ended (still open when the "
        "capture stopped)",
    "nsys.whole_graphs": "1 CUDA graph executions were traced as a whole "
        "(--cuda-graph-trace=graph): each is one kernel row spanning its graph, without "
        "the graph's kernels; trace with --cuda-graph-trace=node to see them",
    "timeline.summary_only": "tests/data/ncu/ncu_summary_per_kernel.csv: an Nsight Compute "
        "--print-summary file: 2 kernels by name, 6 launches, each metric's minimum, "
        "maximum and average per kernel",
    "times.low_resolution": "/work/shared/samples/rocprof-compute/vcopy-MI300X-rocprofv2/"
        "pmc_perf.csv: timestamps were saved in lossy floating-point notation (e.g. "
        "8.1097E+14, ~5 significant digits): start/end are rounded to that precision and "
        "kernel durations are not meaningful",
    "trace.no_kernels": "tests/data/jax/cpu/vm.trace.json.gz: the profiler recorded no "
        "kernels: the trace has no /device: process (a CPU-only JAX run); only host events "
        "were read",
    "trace.summarised_only": "memory_allocation_trace.csv: 4 memory allocation events are "
        "summarised in meta['memory_allocation'] only (hipscope has no table for them)",
}


def _render(node: ast.AST) -> str | None:
    """The message a site writes, each formatted value shown as 7."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "7" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = _render(node.left), _render(node.right)
        return None if a is None or b is None else a + b
    if isinstance(node, ast.IfExp):
        return _render(node.body)
    return None


def _sites() -> list[tuple[str, int, ast.AST]]:
    """(file, line, message node) of every ``<...warnings>.append(x)``, ``<...>.warn(x)``
    and ``_warn(trace, x)`` call of the readers and launchers."""
    out = []
    for d in SITE_DIRS:
        for p in sorted(d.rglob("*.py")):
            for n in ast.walk(ast.parse(p.read_text())):
                if not isinstance(n, ast.Call) or not n.args:
                    continue
                f = n.func
                if isinstance(f, ast.Attribute) and f.attr == "append" \
                        and "warn" in ast.unparse(f.value):
                    out.append((p.name, n.lineno, n.args[0]))
                elif isinstance(f, ast.Attribute) and f.attr == "warn" and \
                        ast.unparse(f.value) not in ("log", "logger", "_log", "warnings"):
                    out.append((p.name, n.lineno, n.args[0]))
                elif isinstance(f, ast.Name) and f.id == "_warn" and len(n.args) == 2:
                    out.append((p.name, n.lineno, n.args[1]))
    return out


def _is_coded(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "id", "") == "coded"


def _plain_messages() -> list[tuple[str, int, str]]:
    msgs = []
    for name, line, node in _sites():
        if _is_coded(node):
            continue
        text = _render(node)
        if text is None:
            assert (name, ast.unparse(node)) in PASSED_ON, (name, line, ast.unparse(node))
            msgs += [(name, line, t) for t in FORMATTED.get((name, ast.unparse(node)), [])]
            continue
        for t in FORMATTED.get((name, text), [text]):
            msgs.append((name, line, t))
    return msgs


def test_every_plain_warning_site_has_a_specific_code():
    msgs = _plain_messages()
    assert len(msgs) > 60  # the scan does find the readers' sites
    unknown = [(n, line, t) for n, line, t in msgs if code_of(t) is None]
    assert unknown == []


def test_every_pattern_matches_a_warning_site():
    codes = {code_of(t)[0] for _n, _l, t in _plain_messages()}
    assert {c for c, _s, _p in PATTERNS} <= codes


@pytest.mark.parametrize("code", sorted(REAL))
def test_patterns_on_messages_written_on_real_inputs(code):
    assert code_of(REAL[code])[0] == code


def test_report_json_carries_the_codes_and_the_files(capsys):
    """``report --json`` on a real rocprofv3 folder: its plain warnings arrive with their
    codes, each naming the files its sentence starts with."""
    sdk = SAMPLES / "rocprofv3-csv" / "sdk-docs-2025-08-rocm7.0"
    assert main(["report", "--json", str(sdk)]) == 0
    rep = json.loads(capsys.readouterr().out)
    by_code = {d["code"]: d for d in rep["diagnostics"]}
    assert GENERIC not in by_code
    d = by_code["links.duplicate_api_rows"]
    assert d["where"] == "sdk-docs-2025-08-rocm7.0/*.csv" and d["message"] in rep["warnings"]
    assert by_code["trace.summarised_only"]["severity"] == "info"


def test_where_is_the_file_a_sentence_starts_with():
    assert where_of("/a b/c.json: the JSON text ends early (x)") == "/a b/c.json"
    assert where_of("kernel_trace.csv: 2 kernels ...") == "kernel_trace.csv"
    assert where_of("the trace has no deviceProperties: devices are named by id") is None
    assert where_of("1 CUDA graph executions (--x=graph): each is one row") is None


def test_a_message_no_pattern_knows_stays_generic():
    (d,) = diagnostics({"warnings": ["something new happened"]})
    assert d["code"] == GENERIC


_SAMPLES = sorted(d for fmt in SAMPLES.iterdir() if fmt.is_dir() for d in fmt.iterdir()
                  if d.is_dir())
_FIXTURES = sorted(p for sub in ("nsys", "jax", "ncu", "kineto-2021", "rocpd", "pftrace")
                   for p in (ROOT / "tests" / "data" / sub).iterdir()
                   if p.suffix in (".sqlite", ".csv", ".json", ".gz", ".db", ".pftrace")
                   or p.is_dir())


@pytest.mark.parametrize("folder", _SAMPLES + _FIXTURES,
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_samples_give_no_generic_code(folder):
    try:
        tr = open_trace(folder)
    except Exception:  # noqa: BLE001 - folders of several traces are refused; not this test
        pytest.skip("not one trace")
    assert [d for d in diagnostics(tr) if d["code"] == GENERIC] == []
