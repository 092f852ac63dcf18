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

