"""`TunerController`: the tuner panel's work, off the widgets.

It binds a :class:`~hipscope.tuner.state.TunerState` to a Document: proposals come
from ``tuner.rules.propose`` and A/B tests run ``tuner.sweep.run_sweep`` over
``tuner.experiment.experiment_runner`` (launchers), both in its workers; progress and
results go into the state, whose changes reach widgets as ``bridge.changed`` (queued).
Signals: ``status(str)`` (a line for the panel), ``experiment_done(str)`` (proposal
id, any outcome).
"""

from __future__ import annotations

import logging
import shlex

from PySide6.QtCore import QObject, Qt, Signal

from ..tuner.proposals import Proposal
from ..tuner.state import TunerState
from .bridge import ObservableBridge
from .document import Document
from .tasks import TaskHandle

log = logging.getLogger(__name__)


class TunerController(QObject):
    """Proposals and A/B tests of one Document's trace (see module docstring)."""

    status = Signal(str)
    experiment_done = Signal(str)
    _run_measured = Signal(str, object)       # proposal id, run dict (from a worker)

    def __init__(self, document: Document, state: TunerState | None = None,
                 parent: QObject | None = None):
        super().__init__(parent)
        self.document = document
        self.state = state or TunerState()
        self.tasks = document.scope("tuner")
        self.repeats = 5
        self._handles: dict[str, TaskHandle] = {}
        self.bridge = ObservableBridge(self.state, self)
        self._run_measured.connect(self._on_run_measured, Qt.ConnectionType.QueuedConnection)

    # ---- proposals -----------------------------------------------------------------
    def propose(self, trace, seen) -> None:
        """Propose for ``seen`` (``trace`` with what the user stated) in a worker."""
        from ..tuner.rules import propose

        self.status.emit("Looking for proposals…")
        from ..analysis.context import analyses_of

        h = self.tasks.submit("propose", lambda progress, cancelled: propose(
            seen, analyses=analyses_of(trace), cancelled=cancelled))
        h.succeeded.connect(lambda props, trace=trace: self._on_proposals(trace, props))
        h.failed.connect(self.status.emit)

    def _on_proposals(self, trace, props: list[Proposal]) -> None:
        if trace is not self.document.trace:
            return
        self.state.set_proposals(props)
        if self.state.selected is None and self.state.proposals:
            self.state.select(self.state.proposals[0].id)

    def use_stated(self, command_text: str, env_text: str) -> str:
        """A command line and env changes (``K=V -K``) the user states become the
        program tests run and the run the rules read (proposed again); the error
        sentence when they do not parse, else ""."""
        from ..launchers import RunSpec
        from ..launchers.spec import parse_env_changes
        from ..parsers.run_provenance import stated_run

        trace = self.document.trace
        try:
            command = shlex.split(command_text)
            env = parse_env_changes(shlex.split(env_text))
            base = self.state.program
            if command:
                self.state.set_program(RunSpec(
                    command, cwd=base.cwd if base else None, env=env,
                    **({"profiler": base.profiler, "target": base.target} if base else {})))
        except ValueError as exc:
            return f"Command/Env: {exc}"
        if trace is not None:
            run = trace.meta.get("run")
            self.propose(trace, trace.with_meta(run=stated_run(
                command or None, env, base={**run, "env": {}} if run else None)))
        return ""

    # ---- A/B test ------------------------------------------------------------------
    def runnable(self, p: Proposal | None) -> tuple[bool, str]:
        """Whether ``p`` can be tested now, and why not."""
        if p is None:
            return False, "Select a proposal."
        if not p.experiment.automatic:
            return False, ("This experiment is a code change: change the program as the "
                           "recipe says, then compare a run of each.")
        if self.state.program is None:
            return False, "Choose the program to run (Program…)."
        why = self.state.program.unrunnable()      # a secret the run folder left out
        return (False, why) if why else (True, "")

    def test(self, pid: str | None) -> None:
        """Run the A/B sweep of proposal ``pid`` in a worker (progress and result go
        into the TunerState)."""
        p = self.state.proposal(pid) if pid else None
        ok, why = self.runnable(p)
        if p is None or not ok:
            log.info("cannot test %s: %s", pid, why)
            return
        from ..tuner import experiment as tx  # the sweep machinery: at the first test

        spec = tx.experiment_sweep(p, self.state.program, repeats=self.repeats)
        total = spec.max_runs()
        self.state.update_experiment(p.id, status="running", progress=0.0, result=None,
                                     runs=[], message=f"0 runs (at most {total})")
        h = self.tasks.submit(f"test:{p.id}", self._sweep_work(p, self.state.program, spec))
        self._handles[p.id] = h
        self._follow_test(p.id, h, total)

    def _sweep_work(self, p: Proposal, program, spec):
        relay = self._run_measured

        def work(progress, cancelled):
            from ..model.progress import Cancelled
            from ..tuner import experiment as tx
            from ..tuner.sweep import SweepError, run_sweep

            runner = tx.experiment_runner(p, program, cancelled)

            def on_run(r):      # each kept baseline/variant run shows in the chart as it ends
                if r.variant in (0, 1) and not r.warmup:
                    relay.emit(p.id, {"side": r.variant, "repeat": r.repeat,
                                      "wall_s": r.measurement.wall_s,
                                      "trace_path": r.measurement.trace_path})

            try:
                return run_sweep(spec, runner, progress, cancelled, on_run=on_run)
            except SweepError:
                if cancelled():
                    raise Cancelled() from None
                raise

        return work

    def _follow_test(self, pid: str, h: TaskHandle, total: int) -> None:
        st = self.state
        h.progressed.connect(lambda f: st.update_experiment(
            pid, progress=f, message=f"{round(f * total)} runs (at most {total}; stops "
                                     "when decided)"))
        h.succeeded.connect(lambda res: self._on_test_succeeded(pid, res))
        h.failed.connect(lambda msg: st.update_experiment(pid, status="failed", message=msg))
        h.cancelled.connect(lambda: st.update_experiment(
            pid, status="cancelled", progress=None, message="Cancelled."))
        h.finished.connect(lambda: self._on_test_finished(pid))

    def _on_run_measured(self, pid: str, run: dict) -> None:
        if self.state.proposal(pid) is None or pid not in self._handles:
            return
        rec = self.state.experiment(pid)
        self.state.update_experiment(pid, runs=[*rec.runs, run])

    def _on_test_succeeded(self, pid: str, res) -> None:
        if self.state.proposal(pid) is None:
            return
        keep = {0: 0, 1: 1}                 # baseline, variant (not the A/A control)
        runs = [{"side": keep[r.variant], "repeat": r.repeat,
                 "wall_s": r.measurement.wall_s, "trace_path": r.measurement.trace_path}
                for r in res.runs if r.variant in keep and not r.warmup]
        ab = next(iter(res.comparisons.values()))
        self.state.update_experiment(pid, status="finished", progress=1.0, result=ab,
                                     runs=runs, message=noise_floor_text(res))

    def _on_test_finished(self, pid: str) -> None:
        self._handles.pop(pid, None)
        self.experiment_done.emit(pid)

    def cancel_test(self, pid: str | None) -> None:
        h = self._handles.get(pid) if pid is not None else None
        if pid is not None and h is not None:
            h.cancel()
            self.state.update_experiment(pid, message="Cancelling…")

    def is_testing(self) -> bool:
        return bool(self._handles)

    def shutdown(self) -> None:
        """Stop following the state and stop the workers (the panel closes)."""
        self.bridge.detach()
        self.tasks.shutdown()


def noise_floor_text(res) -> str | None:
    """The A/A control and drift of a sweep, one line each."""
    lines = []
    c = res.control
    if c is not None:
        lines.append(f"Noise floor (A/A control, the baseline against itself): ratio "
                     f"{c.ratio:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}], {c.verdict}.")
    lines += res.warnings()
    return "\n".join(lines) or None
