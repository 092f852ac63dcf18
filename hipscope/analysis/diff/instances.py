"""The i-th instance of a kernel in A against the i-th in B, in launch order."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...model import Trace
from .names import NameNormalizer
from .ranges import kernel_rows


@dataclass
class InstanceDiff:
    """i-th instance of one kernel in A against the i-th in B (launch order)."""

    name: str
    a_rows: np.ndarray       # rows in A's kernels table, the matched ones
    b_rows: np.ndarray
    a_duration: np.ndarray   # ns
    b_duration: np.ndarray
    a_unmatched: int         # instances beyond the shorter run's count
    b_unmatched: int

    @property
    def delta(self) -> np.ndarray:
        return self.b_duration - self.a_duration


def instance_diff(a: Trace, b: Trace, name: str,
                  normalizer: NameNormalizer | None = None) -> InstanceDiff:
    norm = normalizer or NameNormalizer()
    ra, rb = kernel_rows(a, name, norm), kernel_rows(b, name, norm)
    n = min(len(ra), len(rb))

    def dur(t: Trace, rows: np.ndarray) -> np.ndarray:
        return (t.kernels.numpy("end")[rows] - t.kernels.numpy("start")[rows]).astype(np.int64)

    return InstanceDiff(norm(name), ra[:n], rb[:n], dur(a, ra[:n]), dur(b, rb[:n]),
                        len(ra) - n, len(rb) - n)
