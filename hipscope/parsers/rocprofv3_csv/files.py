"""Which files form a rocprofv3 CSV set: file names, headers, folder discovery."""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .._compute_side import long_form_header
from ..base import TraceFormatError
from .columns import CsvFile, show_value

# --------------------------------------------------------------------------- file names

#: file-name domain -> what it holds
DOMAIN_KINDS: dict[str, str] = {
    "kernel_trace": "kernels",
    "hip_api_trace": "api", "hip_runtime_trace": "api", "hip_compile_trace": "api",
    "hip_trace": "api", "hsa_api_trace": "api", "hsa_trace": "api",
    "rccl_api_trace": "api", "rccl_trace": "api",
    "rocdecode_api_trace": "api", "rocjpeg_api_trace": "api",
    "marker_api_trace": "markers",
    "memory_copy_trace": "copies",
    "memory_allocation_trace": "memalloc",
    "scratch_memory_trace": "scratch",
    "counter_collection": "counters",
    "agent_info": "agents",
}
_DOMAINS_LONGEST_FIRST = sorted(DOMAIN_KINDS, key=len, reverse=True)
TRACE_KINDS = ("kernels", "api", "markers", "copies", "memalloc", "scratch", "counters")
_MAX_DEPTH = 3          # folder levels searched below an opened folder (host/pmc_N/...)
_PMC_DIR = re.compile(r"^pmc_\d+$")

def _not_a_trace(stem: str) -> bool:
    """Files rocprofv3 writes next to its traces that are not traces."""
    s = stem.lower()
    return (s.endswith("stats") or "summary" in s or "pc_sampling" in s
            or s.endswith("kernel_names") or s.startswith("list-avail"))


def split_name(path: Path) -> tuple[str, str] | None:
    """``(prefix, domain)`` for ``<prefix>_<domain>.csv`` / ``<domain>.csv``; None when
    the name is not a rocprofv3 domain file."""
    if path.suffix.lower() != ".csv":
        return None
    stem = path.stem
    if _not_a_trace(stem):
        return None
    for dom in _DOMAINS_LONGEST_FIRST:
        if stem == dom:
            return "", dom
        if stem.endswith("_" + dom):
            return stem[: -len(dom) - 1], dom
    return None


def _pid_of_prefix(prefix: str) -> int | None:
    m = re.search(r"(?:^|[_.-])(\d+)$", prefix)
    if not m:
        return None
    v = int(m.group(1))
    return v if 0 < v < 2**31 else None


# --------------------------------------------------------------------------- headers

def header_kind(fields: Iterable[str]) -> str | None:
    """Which rocprofv3 table a CSV header belongs to (None: not a rocprofv3 header)."""
    f = set(fields)
    if long_form_header(list(f)):
        return None         # rocprof-compute's long form (GPU_ID, Dispatch_ID, ...)
    times = {"Start_Timestamp", "End_Timestamp"} <= f
    if {"Counter_Name", "Counter_Value"} <= f and ({"Dispatch_Id", "Correlation_Id"} & f):
        return "counters"
    if {"Kernel_Name", "Agent_Id"} <= f and times:
        return "kernels"
    if {"Domain", "Function"} <= f and times:
        return "api"
    if {"Direction", "Source_Agent_Id", "Destination_Agent_Id"} <= f and times:
        return "copies"
    if {"Operation", "Alloc_Flags"} <= f:
        return "scratch"
    if {"Operation", "Allocation_Size"} <= f:
        return "memalloc"
    if {"Node_Id", "Agent_Type"} <= f:
        return "agents"
    return None


_EXPECTED_HEADER = {
    "kernels": "a rocprofv3 kernel_trace header (Kind, Agent_Id, Queue_Id, ..., Kernel_Name, "
               "Start_Timestamp, End_Timestamp, ...)",
    "api": "a rocprofv3 API trace header (Domain, Function, Process_Id, Thread_Id, "
           "Correlation_Id, Start_Timestamp, End_Timestamp)",
    "markers": "a rocprofv3 marker_api_trace header (Domain, Function, Process_Id, Thread_Id, "
               "Correlation_Id, Start_Timestamp, End_Timestamp)",
    "copies": "a rocprofv3 memory_copy_trace header (Kind, Direction, Source_Agent_Id, "
              "Destination_Agent_Id, Correlation_Id, Start_Timestamp, End_Timestamp)",
    "counters": "a rocprofv3 counter_collection header (Correlation_Id, Dispatch_Id, Agent_Id, "
                "..., Counter_Name, Counter_Value)",
    "memalloc": "a rocprofv3 memory_allocation_trace header (Kind, Operation, Agent_Id, "
                "Allocation_Size, Address, ...)",
    "scratch": "a rocprofv3 scratch_memory_trace header (Kind, Operation, Agent_Id, Queue_Id, "
               "Thread_Id, Alloc_Flags, ...)",
    "agents": "a rocprofv3 agent_info header (Node_Id, Logical_Node_Id, Agent_Type, ...)",
    None: "a rocprofv3 CSV header (Kind,Agent_Id,Queue_Id,... / Domain,Function,Process_Id,... "
          "/ Correlation_Id,Dispatch_Id,Agent_Id,...)",
}


def first_line(path: Path, limit: int = 1 << 16) -> tuple[bytes, bool]:
    """The first line of a file (without the newline) and whether a newline ended it."""
    with open(path, "rb") as fh:
        raw = fh.read(limit)
    nl = raw.find(b"\n")
    if nl < 0:
        return raw, False
    return raw[:nl].rstrip(b"\r"), True


def parse_header(line: bytes) -> list[str] | None:
    if b"\x00" in line:
        return None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None
    text = text.lstrip("\ufeff")
    try:
        row = next(csv.reader([text]), [])
    except csv.Error:
        return None
    return [c.strip() for c in row]


def read_header(path: Path, kind: str | None) -> list[str]:
    """The header fields of a rocprofv3 CSV file; TraceFormatError when the file is empty,
    binary or its header is not a rocprofv3 header (of ``kind`` when given)."""
    try:
        line, _ = first_line(path)
    except OSError as exc:
        raise TraceFormatError(path, None, "a readable file", str(exc)) from None
    if not line.strip():
        raise TraceFormatError(path, "line 1", _EXPECTED_HEADER.get(kind, _EXPECTED_HEADER[None]),
                               "an empty file" if path.stat().st_size == 0 else "an empty line")
    fields = parse_header(line)
    found = header_kind(fields) if fields else None
    if found is None or (kind is not None and found != kind
                         and not (kind == "markers" and found == "api")):
        what = "binary data" if fields is None else show_value(line)
        raise TraceFormatError(path, "line 1", _EXPECTED_HEADER.get(kind, _EXPECTED_HEADER[None]),
                               what)
    return fields


@dataclass
class CsvSet:
    """The files of one process (one prefix in one folder)."""

    dir: Path
    prefix: str
    host: str | None
    pid: int | None
    files: dict[str, list[CsvFile]] = field(default_factory=dict)
    alone: str | None = None     # a file whose name is not <prefix>_<domain>.csv

    @property
    def label(self) -> str:
        d = self.dir.name
        if self.alone:
            return f"{d}/{self.alone}"
        return f"{d}/{self.prefix}_*.csv" if self.prefix else f"{d}/*.csv"


# --------------------------------------------------------------------------- discovery

def _host_of(rel: Path) -> str | None:
    for part in rel.parts:
        if not _PMC_DIR.match(part):
            return part
    return None


def _identity(path: Path | str) -> tuple[int, int] | None:
    """(st_dev, st_ino) of what a path leads to (links followed); None if unreadable."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _first_visit(path: Path | str, seen: set) -> bool:
    """True the first time a folder or file (by identity, links followed) is met: a
    link to a folder already walked, or a second name of a file, is not read again."""
    ident = _identity(path)
    if ident is None:
        return True          # cannot tell: reading it gives the real error
    if ident in seen:
        return False
    seen.add(ident)
    return True


def _skip_note(path: Path, line: bytes, fields: list[str] | None) -> str:
    why = ("empty" if not line.strip() and os.path.getsize(path) == 0 else
           "the first line is blank" if not line.strip() else
           "binary data, not a CSV header" if fields is None else
           f"header not recognised ({show_value(line)})")
    return f"skipped {path}: {why}; it is not read as part of the rocprofv3 set"


class _Walk:
    """One walk of a folder: the sets found, the files ignored, notes on skipped files;
    each folder and file is visited once by identity (a link to a folder already
    walked, or a second name of a file, would read the same rows again)."""

    def __init__(self, root: Path, single: Path | None):
        self.root, self.single = root, single
        self.sets: dict[tuple[Path, str], CsvSet] = {}
        self.ignored: list[str] = []
        self.notes: list[str] = []
        self.seen_dirs: set[tuple[int, int]] = set()
        self.seen_files: set[tuple[int, int]] = set()

    def add(self, path: Path, kind: str, prefix: str | None, fields: list[str]) -> None:
        """prefix None: the file's name says nothing of its process: a set of its own."""
        d, root = path.parent, self.root
        key = (d, prefix if prefix is not None else "\0" + path.name)
        if key not in self.sets:
            rel = d.relative_to(root) if d != root and root in d.parents else Path()
            self.sets[key] = CsvSet(d, prefix or "", _host_of(rel),
                                  _pid_of_prefix(prefix) if prefix else None,
                                  alone=None if prefix is not None else path.name)
        self.sets[key].files.setdefault(kind, []).append(CsvFile(path, kind, fields))

    def visit(self, d: Path, depth: int) -> None:
        if not _first_visit(d, self.seen_dirs):
            return
        try:
            # real entries before links, so a folder is named by its real path
            entries = sorted(os.scandir(d), key=lambda e: (e.is_symlink(), e.name))
        except OSError:
            return
        for e in entries:
            p = Path(e.path)
            try:
                is_dir = e.is_dir()
            except OSError:
                continue
            if is_dir:
                if self.single is None and depth < _MAX_DEPTH:
                    self.visit(p, depth + 1)
            elif p != self.single and p.suffix.lower() == ".csv" and self.in_set(p) \
                    and _first_visit(p, self.seen_files):
                self.file(p)

    def in_set(self, p: Path) -> bool:
        """Whether a file beside the opened one belongs to its set: every file when a
        folder was opened; else only files of the opened file's prefix (``<prefix>_*``;
        for a bare ``kernel_trace.csv``, the other bare domain files). A file whose name
        gives no prefix is a set of its own (issue 13 item 12: one file, one run)."""
        if self.single is None:
            return True
        mine = split_name(self.single)
        if mine is None:
            return False
        if mine[0] == "":
            other = split_name(p)
            return other is not None and other[0] == ""
        return p.name.startswith(mine[0] + "_") and (
            split_name(p) is None or split_name(p)[0] == mine[0])

    def file(self, p: Path) -> None:
        """A .csv met in the walk: a domain file, a trace by its header, or ignored."""
        named = split_name(p)
        if named is not None:
            prefix, dom = named
            kind = DOMAIN_KINDS[dom]
            self.add(p, kind, prefix, read_header(p, kind))
            return
        if _not_a_trace(p.stem):
            self.ignored.append(str(p))
            return
        try:
            line, _ = first_line(p)
        except OSError:
            self.ignored.append(str(p))
            return
        fields = parse_header(line) if line.strip() else None
        kind = header_kind(fields) if fields else None
        if kind is None or kind == "agents":
            self.ignored.append(str(p))
            if kind is None:
                self.notes.append(_skip_note(p, line, fields))
            return
        self.add(p, kind, None, fields)

    def opened(self, single: Path) -> None:
        """The file the user opened: always part of the set (a bad one is refused)."""
        _first_visit(single, self.seen_files)
        named = split_name(single)
        if named is not None:
            prefix, dom = named
            self.add(single, DOMAIN_KINDS[dom], prefix, read_header(single, DOMAIN_KINDS[dom]))
        else:
            fields = read_header(single, None)
            self.add(single, header_kind(fields) or "api", None, fields)


def discover(root: Path, single: Path | None
              ) -> tuple[list[CsvSet], list[str], list[str]]:
    """The sets of ``root`` (a folder; ``single`` = the file the user opened, if any),
    the files ignored, and a note for each .csv skipped as empty or unrecognised."""
    walk = _Walk(root, single)
    if single is not None:
        walk.opened(single)
    walk.visit(root, 0)
    out = list(walk.sets.values())
    # a set made only of agent_info (or ignored domains) still contributes devices
    out.sort(key=lambda s: (s.host or "", str(s.dir), s.alone is not None,
                            s.pid if s.pid is not None else -1, s.prefix, s.alone or ""))
    for s in out:
        for files in s.files.values():
            files.sort(key=lambda f: f.path.name)
    return out, walk.ignored, walk.notes


def sniff_dir(path: Path) -> float:
    best = 0.0
    stack = [(path, 0)]
    seen = 0
    while stack:
        d, depth = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            seen += 1
            if seen > 5000:
                return best
            try:
                if e.is_dir():
                    if depth < 2:
                        stack.append((Path(e.path), depth + 1))
                    continue
            except OSError:
                continue
            named = split_name(Path(e.name))
            if named and DOMAIN_KINDS[named[1]] in TRACE_KINDS:
                best = max(best, 0.95 if depth == 0 else 0.9)
    return best
