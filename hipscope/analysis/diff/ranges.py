"""Ranges of a trace (a marker's n-th occurrence, a kernel's n-th instance, the whole
trace) and the alignment of several traces at one of them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...model import Trace
from .names import NameNormalizer, name_keys


@dataclass(frozen=True)
class MarkerRef:
    """The ``n``-th (1-based, by start time) marker called ``name``. Without a
    ``domain`` the first domain of :data:`MARKER_DOMAIN_PREFERENCE` that has the name
    is used (then any other)."""

    name: str
    n: int = 1
    domain: str | None = None

    @classmethod
    def parse(cls, text: str, domain: str | None = None) -> MarkerRef:
        """``NAME`` or ``NAME:N`` (a trailing ``:digits`` is the occurrence)."""
        return cls(*_name_n(text), domain)


@dataclass(frozen=True)
class KernelRef:
    """The ``n``-th (1-based, launch order) instance of a kernel, by normalised name."""

    name: str
    n: int = 1

    @classmethod
    def parse(cls, text: str) -> KernelRef:
        return cls(*_name_n(text))


def _name_n(text: str) -> tuple[str, int]:
    """``NAME`` or ``NAME:N``: a trailing ``:digits`` is the occurrence (``at::x`` is a
    name)."""
    name, sep, n = text.rpartition(":")
    return (name, int(n)) if sep and n.isdigit() and name else (text, 1)


# The GPU mirror of an annotation first: it is what the GPU did during the step (for a
# CUDA-graph replay the host range ends long before the GPU's work does).
MARKER_DOMAIN_PREFERENCE = ("gpu_user_annotation", "user_annotation", "roctx", "nvtx")


@dataclass(frozen=True)
class Range:
    start: int
    end: int
    label: str

    @property
    def span(self) -> int:
        return self.end - self.start


def find_marker(trace: Trace, ref: MarkerRef) -> Range:
    """The marker range ``ref`` names; LookupError (one sentence) when there is none."""
    m = trace.markers
    codes, names = m.codes("name")
    if ref.name not in names:
        raise LookupError(f"no marker named {ref.name!r}")
    hit = codes == names.index(ref.name)
    dcodes, domains = m.codes("domain")
    present = [domains[c] for c in np.unique(dcodes[hit]) if c >= 0]
    ranked = [d for d in MARKER_DOMAIN_PREFERENCE if d in present] or sorted(present)
    domain = ref.domain if ref.domain is not None else ranked[0]
    rows = np.flatnonzero(hit & (dcodes == (domains.index(domain) if domain in domains
                                            else -2)))
    if len(rows) < ref.n or ref.n < 1:
        raise LookupError(f"marker {ref.name!r} ({domain}) occurs {len(rows)} times, "
                          f"occurrence {ref.n} asked for")
    s = m.numpy("start")
    row = rows[np.argsort(s[rows], kind="stable")][ref.n - 1]
    return Range(int(s[row]), int(m.numpy("end")[row]), f"{ref.name} #{ref.n} ({domain})")


def launch_order(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """``rows`` of trace.kernels sorted in launch order: by the launching call's start
    when every row has one (then kernel start), else by kernel start."""
    k = trace.kernels
    start = k.numpy("start")[rows]
    api = k.numpy("api_index", fill=-1).astype(np.int64)[rows] if k.has("api_index") else None
    if api is not None and len(trace.api) and len(rows) and (api >= 0).all():
        return rows[np.lexsort((start, trace.api.numpy("start")[api]))]
    return rows[np.argsort(start, kind="stable")]


def kernel_rows(trace: Trace, name: str, normalizer: NameNormalizer) -> np.ndarray:
    """Rows of trace.kernels whose normalised name is ``normalizer(name)``, in launch
    order."""
    codes, keys = name_keys(trace, normalizer)
    key = normalizer(name)
    if key not in keys:
        return np.zeros(0, dtype=np.int64)
    return launch_order(trace, np.flatnonzero(codes == keys.index(key)))


def find_kernel(trace: Trace, ref: KernelRef, normalizer: NameNormalizer) -> Range:
    rows = kernel_rows(trace, ref.name, normalizer)
    if len(rows) < ref.n or ref.n < 1:
        raise LookupError(f"kernel {ref.name!r} has {len(rows)} instances, "
                          f"instance {ref.n} asked for")
    r = rows[ref.n - 1]
    k = trace.kernels
    return Range(int(k.numpy("start")[r]), int(k.numpy("end")[r]), f"{ref.name} #{ref.n}")


@dataclass(frozen=True)
class Alignment:
    """Per trace: ``origin`` (absolute ns that becomes time 0), ``offset`` (= -origin:
    add it to a trace's times to align) and the aligned range."""

    label: str
    ranges: tuple[Range, ...]

    @property
    def origins(self) -> list[int]:
        return [r.start for r in self.ranges]

    @property
    def offsets(self) -> list[int]:
        return [-r.start for r in self.ranges]

    @property
    def spans(self) -> list[int]:
        return [r.span for r in self.ranges]


def align(traces: Sequence[Trace], at: str | MarkerRef | KernelRef = "start",
          normalizer: NameNormalizer | None = None) -> Alignment:
    """Align traces at their starts (``"start"``: the range is the whole trace), at the
    n-th occurrence of a marker, or at the n-th instance of a kernel. LookupError (one
    sentence naming the trace) when a trace lacks it."""
    norm = normalizer or NameNormalizer()
    ranges = []
    for i, tr in enumerate(traces):
        try:
            if isinstance(at, MarkerRef):
                ranges.append(find_marker(tr, at))
            elif isinstance(at, KernelRef):
                ranges.append(find_kernel(tr, at, norm))
            else:
                ranges.append(_whole(tr))
        except LookupError as exc:
            raise LookupError(f"{trace_label(tr, i)}: {exc.args[0]}") from None
    label = "start" if isinstance(at, str) else ranges[0].label.split(" (")[0]
    return Alignment(label, tuple(ranges))


def _whole(trace: Trace) -> Range:
    tr = trace.time_range()
    if tr is None:
        raise LookupError("the trace has no timed events")
    return Range(tr[0], tr[1], "whole trace")


def trace_label(trace: Trace, i: int) -> str:
    """How messages name trace ``i``: its first source, else its position."""
    src = trace.meta.get("sources") or []
    return str(src[0]) if src else f"trace {i}"
