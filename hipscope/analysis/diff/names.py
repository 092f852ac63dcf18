"""Kernel names normalised for matching across runs: an editable list of regex
substitutions (hashes, clone and ``.kd`` suffixes, Triton signatures; templates on request)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...model import Trace
from ...model.names import compile_strict, invalid_message


@dataclass(frozen=True)
class NameRule:
    """One substitution ``re.sub(pattern, replacement, name)``; ``repeat`` applies it
    until the name stops changing (for nested brackets)."""

    pattern: str
    replacement: str = ""
    repeat: bool = False
    typed: bool = False        # a person's rule: the one name rule (case-insensitive)
    regex: re.Pattern = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", compile_strict(self.pattern) if self.typed
                           else re.compile(self.pattern))

    def apply(self, name: str) -> str:
        out = self.regex.sub(self.replacement, name)
        while self.repeat and out != name:
            name, out = out, self.regex.sub(self.replacement, out)
        return out


# Only what differs between two builds or runs of the same code. Order matters.
DEFAULT_RULES: tuple[NameRule, ...] = (
    NameRule(r"\s*\[clone [^\]]*\]"),                  # ' [clone .kd]', ' [clone .cold]'
    NameRule(r"\s*\(\.kd\)$"),                          # rocprofv2's ' (.kd)'
    NameRule(r"(\.clone(\.\d+)?|\.kd)+$"),             # '.clone', '.clone.3', '.kd'
    NameRule(r"_0x[0-9a-fA-F]+(?![0-9A-Za-z])"),       # '_0x1a2b3c'
    NameRule(r"_[0-9a-f]{8,}(?![0-9A-Za-z])"),         # '_3fa9c2d17b' (build hashes)
    NameRule(r"_(?:\d+(?:de|d|c))+$"),                 # Triton signature '_0d1d2d3de'
)
# Template arguments: only on request (a different instantiation is different code).
TEMPLATE_RULE = NameRule(r"<[^<>]*>", "", repeat=True)


class RulesError(ValueError):
    """A normalisation rules file that cannot be used; ``str()`` is one sentence."""


@dataclass(frozen=True)
class NameNormalizer:
    """Maps a kernel name to the key it is matched by (see module docstring)."""

    rules: tuple[NameRule, ...] = DEFAULT_RULES

    def __call__(self, name: str) -> str:
        for r in self.rules:
            name = r.apply(name)
        return name.strip()

    def with_templates_stripped(self) -> NameNormalizer:
        return NameNormalizer((*self.rules, TEMPLATE_RULE))

    @classmethod
    def parse(cls, text: str, source: str = "rules") -> NameNormalizer:
        """Rules from text, one a line: ``PATTERN`` (delete matches) or ``PATTERN =>
        REPLACEMENT``; ``@defaults`` inserts the default rules there, ``@templates`` the
        template-argument rule; blank lines and lines starting with ``#`` are skipped."""
        rules: list[NameRule] = []
        for no, line in enumerate(text.splitlines(), 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            if s == "@defaults":
                rules.extend(DEFAULT_RULES)
            elif s == "@templates":
                rules.append(TEMPLATE_RULE)
            else:
                pat, _, rep = s.partition(" => ")
                try:
                    rules.append(NameRule(pat, rep, typed=True))
                except re.error as exc:
                    raise RulesError(f"{source} at line {no}: {pat!r} is "
                                     f"{invalid_message(exc)}") from None
        return cls(tuple(rules))

    @classmethod
    def from_file(cls, path: str | Path) -> NameNormalizer:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise RulesError(f"{path}: expected a readable UTF-8 rules file ({exc})") from None
        return cls.parse(text, str(path))


def name_keys(trace: Trace, normalizer: NameNormalizer) -> tuple[np.ndarray, list[str]]:
    """Per kernel row: code into the list of normalised keys (-1 = no name). The
    normaliser runs once per distinct name, not per kernel."""
    codes, cats = trace.kernels.codes("name")
    keys = [normalizer(c) for c in cats]
    uniq = sorted(set(keys))
    index = {k: i for i, k in enumerate(uniq)}
    lut = np.array([index[k] for k in keys] + [-1], dtype=np.int32)
    return lut[codes], uniq
