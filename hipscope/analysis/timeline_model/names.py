"""Readable kernel labels from mangled or templated names."""

from __future__ import annotations


def short_name(name: str) -> str:
    """A readable label: Itanium-mangled nested names become a::b::c, template
    arguments and parameter lists are dropped."""
    if not name:
        return ""
    if name.startswith("_Z"):
        parts, i = [], 3 if name.startswith("_ZN") else 2
        while i < len(name) and name[i].isdigit():
            j = i
            while j < len(name) and name[j].isdigit():
                j += 1
            ln = int(name[i:j])
            parts.append(name[j:j + ln])
            i = j + ln
            if i < len(name) and name[i] in "IE":
                break
        if parts:
            return "::".join(parts)
        return name
    s = name
    for prefix in ("void ", "__global__ void "):
        if s.startswith(prefix):
            s = s[len(prefix):]
    out, depth = [], 0
    for ch in s:           # drop <...> and (...) (per name, not per event)
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    short = "".join(out).strip()
    while "::::" in short:          # "(anonymous namespace)" dropped above
        short = short.replace("::::", "::")
    return short or name



ELLIPSIS = "…"


def elide_middle(text: str, n: int) -> str:
    """``text`` in at most ``n`` characters, cut in the middle (head … tail): the end
    of a kernel name often tells two instances of one template apart."""
    if len(text) <= n:
        return text
    if n <= 1:
        return ELLIPSIS[:n]
    head = (n - 1 + 1) // 2
    return text[:head] + ELLIPSIS + text[len(text) - (n - 1 - head):]


def _shared(a: str, b: str) -> int:
    """Length of the common prefix of ``a`` and ``b``."""
    i, m = 0, min(len(a), len(b))
    while i < m and a[i] == b[i]:
        i += 1
    return i


def distinct_labels(names: list[str], n: int) -> list[str]:
    """Labels of at most ``n`` characters that keep what tells each name from the
    others: a name longer than ``n`` keeps its head, then (after "…") the part from
    where it first differs from its nearest neighbour, cut where the tail is shared.
    Names that still look alike are told apart among themselves (where they differ
    from each other). Names that fit stay whole."""
    labels = _first_pass(names, n)
    for _ in range(3):
        groups: dict[str, list[int]] = {}
        for i, lab in enumerate(labels):
            groups.setdefault(lab, []).append(i)
        clashes = [g for g in groups.values() if len({names[i] for i in g}) > 1]
        if not clashes:
            break
        for g in clashes:
            for i, lab in zip(g, _first_pass([names[i] for i in g], n)):
                labels[i] = lab
    return labels


def _first_pass(names: list[str], n: int) -> list[str]:
    order = sorted(range(len(names)), key=lambda i: names[i])
    prefix = [0] * len(names)
    for a, b in zip(order, order[1:]):
        p = _shared(names[a], names[b])
        prefix[a], prefix[b] = max(prefix[a], p), max(prefix[b], p)
    rev = [s[::-1] for s in names]
    order = sorted(range(len(names)), key=lambda i: rev[i])
    suffix = [0] * len(names)
    for a, b in zip(order, order[1:]):
        p = _shared(rev[a], rev[b])
        suffix[a], suffix[b] = max(suffix[a], p), max(suffix[b], p)
    return [_distinct(s, n, prefix[i], suffix[i]) for i, s in enumerate(names)]


def _distinct(s: str, n: int, shared_head: int, shared_tail: int) -> str:
    """One label of :func:`distinct_labels` (see there)."""
    if len(s) <= n:
        return s
    if n < 8:
        return elide_middle(s, n)
    head = max(n // 4, 3)
    tail_shared = shared_tail > 0 and len(s) - shared_tail <= n - 1
    if shared_head <= head:                  # differs early
        return s[:n - 1] + ELLIPSIS if tail_shared else elide_middle(s, n)
    start = max(shared_head - 2, head)       # a little context before the difference
    rest = s[start:]
    if len(rest) <= n - head - 1:            # the rest fits: give the head what is left
        return s[:n - 1 - len(rest)] + ELLIPSIS + rest
    room = n - head - 2
    if shared_tail == 0:                     # the tail differs too: keep some of it
        tail = min(room // 3, len(rest) - room)
        return s[:head] + ELLIPSIS + rest[:room - tail] + ELLIPSIS + s[len(s) - tail:]
    return s[:head] + ELLIPSIS + rest[:room] + ELLIPSIS


def readable_labels(names: list[str], n: int) -> list[str]:
    """Short names (:func:`short_name`) cut to ``n`` characters where they differ;
    names whose short forms coincide (instances of one template) are told apart by
    the part of their full names where they differ."""
    short = [short_name(s) for s in names]
    out = distinct_labels(short, n)
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(short):
        groups.setdefault(s, []).append(i)
    for rows in groups.values():
        if len(rows) > 1 and len({names[i] for i in rows}) > 1:
            for i, lab in zip(rows, _instance_labels([names[i] for i in rows],
                                                     short[rows[0]], n)):
                out[i] = lab
    return out


def _instance_labels(full: list[str], short: str, n: int) -> list[str]:
    """Instances of one template: 'kernel_name<…' then each from where they differ
    ('vectorized_el…_kernel<…FillFunctor<float>, st…')."""
    p = min(_shared(full[0], f) for f in full[1:])
    cut = p
    while cut > 0 and (full[0][cut - 1].isalnum() or full[0][cut - 1] == "_"):
        cut -= 1                          # back to the start of the differing word
    head = elide_middle(short.split("::")[-1], max(n // 2 - 2, 6)) + "<…"
    room = max(n - len(head), 4)
    out = [head + (f[cut:] if len(f) - cut <= room else f[cut:cut + room - 1] + ELLIPSIS)
           for f in full]
    seen: dict[str, list[int]] = {}
    for i, lab in enumerate(out):
        seen.setdefault(lab, []).append(i)
    for rows in seen.values():              # still alike: cut where they differ
        if len({full[i] for i in rows}) > 1:
            for i, lab in zip(rows, distinct_labels([full[i] for i in rows], n)):
                out[i] = lab
    return out
