"""The contract every input must keep, checked three ways: the seed's reader forced
(``--reader``), :func:`open_trace` (sniffing + read + validate) and the CLI in-process
(``hipscope report --json PATH``: exit 0 with one JSON object, or exit 2 with one
sentence on stderr naming the file). Anything else is a failure: a traceback, a
schema error, a wrong exit status, a message that does not name the file."""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import traceback
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

HIPSCOPE_DIR = str(Path(__file__).resolve().parents[2] / "hipscope")


class Hang(BaseException):
    """A case ran past its time limit. A BaseException, so that no ``except OSError``
    or ``except Exception`` in hipscope turns it into an ordinary refusal."""


def failure(stage: str, kind: str, message: str) -> dict:
    return {"stage": stage, "signature": f"{stage}:{kind}", "message": message[-4000:]}


def exception_failure(stage: str, exc: BaseException) -> dict:
    """Signed by the exception type and the innermost hipscope frame that raised it."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if f.filename.startswith(HIPSCOPE_DIR)] or frames
    where = (f"{Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else "?")
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    name = f"{type(exc).__module__}.{type(exc).__qualname__}".removeprefix("builtins.")
    return failure(stage, f"{name}@{where}", text)


class _InternalErrors(logging.Handler):
    """Collects the exceptions hipscope logs as internal errors (``open_trace`` and the
    CLI turn a bug into one sentence for the user and log its traceback at INFO): for
    the campaign such a sentence is still a finding, signed by the logged exception."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.errors: list[BaseException] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            self.errors.append(record.exc_info[1])


@contextmanager
def internal_errors():
    handler = _InternalErrors()
    root = logging.getLogger("hipscope")
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield handler.errors
    finally:
        root.removeHandler(handler)
        root.setLevel(old)


def _internal_failure(stage: str, msg: str, errors: list[BaseException]) -> dict | None:
    """A refusal that is really a bug ("internal error reading ..."), or None."""
    if "internal error" not in msg:
        return None
    if errors:
        return exception_failure(stage, errors[-1])
    return failure(stage, "internal-error", msg)


def _refusal_problem(path: Path, msg: str) -> str | None:
    """What is wrong with a refusal message, or None: one sentence naming the file."""
    if str(path) not in msg:
        return "message does not name the file"
    if "\n" in msg.strip() or "Traceback" in msg:
        return "message is more than one line"
    return None


def check_reader(reader: str, path: Path) -> dict | None:
    from hipscope.parsers import TraceFormatError, get_reader
    from hipscope.parsers._intervals import drop_bad_intervals
    from hipscope.parsers._validate import validate

    try:
        # what open_trace does after every reader: the one rule for impossible times
        trace = get_reader(reader).read(path, lambda f: None, lambda: False)
        validate(drop_bad_intervals(trace, path))
    except TraceFormatError as exc:
        bad = _refusal_problem(path, str(exc))
        return failure("reader", bad.replace(" ", "-"), str(exc)) if bad else None
    except Exception as exc:  # noqa: BLE001 - any other exception is the finding
        return exception_failure("reader", exc)
    return None


def check_open(path: Path) -> dict | None:
    from hipscope.parsers import TraceFormatError, open_trace

    with internal_errors() as errors:
        try:
            open_trace(path)
        except TraceFormatError as exc:
            found = _internal_failure("open_trace", str(exc), errors)
            bad = _refusal_problem(path, str(exc))
            if found or not bad:
                return found
            return failure("open_trace", bad.replace(" ", "-"), str(exc))
        except Exception as exc:  # noqa: BLE001
            return exception_failure("open_trace", exc)
    return None


def check_cli(path: Path, reader: str | None = None) -> dict | None:
    """``hipscope report --json PATH`` in-process (``--reader`` when given: no sniffing)."""
    from hipscope.cli.main import main

    argv = ["report", "--json", str(path), *(["--reader", reader] if reader else [])]
    out, err = io.StringIO(), io.StringIO()
    logged = logging.StreamHandler(err)      # what `hipscope` would log to stderr
    logged.setLevel(logging.WARNING)
    logging.getLogger().addHandler(logged)
    try:
        with internal_errors() as errors, redirect_stdout(out), redirect_stderr(err):
            rc = main(argv)
    except Hang:
        raise
    except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt too
        return exception_failure("cli", exc)
    finally:
        logging.getLogger().removeHandler(logged)
    stdout, stderr = out.getvalue(), err.getvalue()
    if rc == 0:
        try:
            ok = isinstance(json.loads(stdout), dict)
        except ValueError:
            ok = False
        return None if ok else failure("cli", "exit-0-without-json", stdout[:2000])
    if rc != 2:
        return failure("cli", f"exit-{rc}", stderr)
    found = _internal_failure("cli", stderr, errors)
    if found:
        return found
    lines = stderr.strip().splitlines()
    if len(lines) != 1 or not lines[0].startswith("hipscope: "):
        return failure("cli", "exit-2-stderr-not-one-line", stderr)
    bad = _refusal_problem(path, lines[0])
    return failure("cli", bad.replace(" ", "-"), stderr) if bad else None


def run_checks(target: Path, reader: str, sniff: bool = True) -> list[dict]:
    """Every failure of one input (an empty list: the contract holds). ``sniff=False``
    forces the reader everywhere (``--reader``), as the short CI run does."""
    if sniff:
        results = [check_reader(reader, target), check_open(target), check_cli(target)]
    else:
        results = [check_reader(reader, target), check_cli(target, reader)]
    return [r for r in results if r is not None]


@contextmanager
def time_limit(seconds: int, what: str = "the checks"):
    """In-process limit (SIGALRM, main thread): a hang raises :class:`Hang`."""
    def boom(*_):
        raise Hang(f"{what} ran longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def checks_with_limit(target: Path, reader: str, seconds: int,
                      sniff: bool = True) -> list[dict]:
    """:func:`run_checks` under a time limit; a hang is a failure of its own."""
    try:
        with time_limit(seconds):
            return run_checks(target, reader, sniff)
    except Hang as exc:
        return [failure("any", "hang", str(exc))]


def isolated_cache(folder: Path) -> None:
    """Point hipscope's parsed-trace cache at ``folder`` (the CLI uses the cache)."""
    os.environ["HIPSCOPE_CACHE_DIR"] = str(folder)
