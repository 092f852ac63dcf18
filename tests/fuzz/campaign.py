"""The fuzz campaign: `make fuzz [FUZZ_MINUTES=10] [FUZZ_SEED=0]`, or
`python -m tests.fuzz.campaign --minutes 10 --seed 0 [--out DIR]`.

For the given minutes it mutates every seed (all real samples and trace fixtures,
every reader; tests/fuzz/seeds.py) and runs each case through the seed's reader,
``open_trace`` and ``hipscope report --json`` in a worker process with a per-case time
limit (tests/fuzz/check.py, worker.py). Mutations are drawn by Hypothesis under the
``fuzz`` profile (tests/conftest.py) in rounds seeded from ``--seed``, so a seed
replays the same cases. The first case of each new failure signature (stage,
exception type, hipscope file:line) is saved as a regression example
(tests/fuzz/regressions.py); the summary lists every signature with its count.
Exit status 1 if anything failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from hypothesis import Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from tests.fuzz import regressions
from tests.fuzz.mutations import mutate
from tests.fuzz.seeds import Seed, by_reader, seed_bytes
from tests.fuzz.worker import Worker


class Campaign:
    def __init__(self, args):
        self.args = args
        self.deadline = time.monotonic() + args.minutes * 60
        self.seeds = by_reader()
        if args.readers:
            self.seeds = {r: s for r, s in self.seeds.items() if r in args.readers}
        self.worker = Worker(args.case_seconds)
        self.scratch = Path(tempfile.mkdtemp(prefix="hipscope-fuzz-"))
        self.cases: Counter[str] = Counter()
        self.failures: dict[str, dict] = {}     # signature -> count, first case, saved file
        self.saves = 0

    def time_left(self) -> bool:
        return time.monotonic() < self.deadline

    def run_case(self, seed: Seed, data: bytes, what: str, case: str) -> None:
        folder = Path(tempfile.mkdtemp(dir=self.scratch))
        try:
            target = seed.materialise(folder, data)
            found = self.worker.check(target, seed.reader, folder / "cache")
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        self.cases[seed.reader] += 1
        if found:
            self.record(seed, data, what, case, found)

    def record(self, seed: Seed, data: bytes, what: str, case: str, found: list) -> None:
        """Count every failure; save the case if one of its signatures is new."""
        new = []
        for f in found:
            sig = f"{seed.reader} {f['signature']}"
            entry = self.failures.setdefault(sig, {"count": 0, "first_case": case,
                                                   "seed": seed.id, "mutation": what})
            entry["count"] += 1
            if entry["count"] == 1:
                new.append(entry)
        if not new or self.saves >= self.args.max_saves:
            return
        info = {"mutation": what, "campaign_seed": self.args.seed, "case": case,
                "failures": found}
        path = str(regressions.save(self.args.out, seed, data, info))
        for entry in new:
            entry["saved"] = path
        self.saves += 1
        sigs = ", ".join(f["signature"] for f in found)
        print(f"FAIL {seed.reader}: {sigs} ({seed.id}; {what}) -> {path}", file=sys.stderr,
              flush=True)

    def run_round(self, number: int) -> None:
        """One Hypothesis run of ``--round`` cases, seeded by (campaign seed, round)."""
        readers = sorted(self.seeds)
        index = [0]

        @settings(parent=settings.get_profile("fuzz"), max_examples=self.args.round,
                  phases=[Phase.generate], database=None, deadline=None)
        @hypothesis_seed(self.args.seed * 1_000_003 + number)
        @given(st.data())
        def one(data):
            # always the same draws (Hypothesis checks that); past the deadline the
            # rest of the round is drawn but not run
            reader = data.draw(st.sampled_from(readers))
            seed = data.draw(st.sampled_from(self.seeds[reader]))
            out, what = mutate(data.draw, seed_bytes(seed))
            index[0] += 1
            if self.time_left():
                self.run_case(seed, out, what, f"round {number} case {index[0]}")

        one()

    def run(self) -> dict:
        number = 0
        try:
            while self.time_left():
                self.run_round(number)
                number += 1
        finally:
            self.worker.close()
            shutil.rmtree(self.scratch, ignore_errors=True)
        return {"seed": self.args.seed, "minutes": self.args.minutes, "rounds": number,
                "cases": sum(self.cases.values()), "cases_per_reader": dict(self.cases),
                "failing_signatures": len(self.failures), "saved": self.saves,
                "failures": self.failures}


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=float(os.environ.get("FUZZ_MINUTES", 10)))
    p.add_argument("--seed", type=int, default=int(os.environ.get("FUZZ_SEED", 0)))
    p.add_argument("--out", type=Path, default=regressions.REGRESSIONS,
                   help="where failing cases are saved (default tests/data/fuzz-regressions)")
    p.add_argument("--max-saves", type=int, default=25, help="saved cases at most")
    p.add_argument("--case-seconds", type=int, default=60, help="time limit per case")
    p.add_argument("--round", type=int, default=50, help="cases per Hypothesis run")
    p.add_argument("--readers", nargs="*", help="only these readers' seeds")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    summary = Campaign(args).run()
    print(json.dumps(summary, indent=1))
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
