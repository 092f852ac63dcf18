"""The style tools' own logic: the size limits and the ratchets that may only shrink.

They run on small trees and texts made here; ruff and mypy themselves are not needed.
"""
from __future__ import annotations

import tomllib
from collections import Counter
from pathlib import Path

from scripts import check_sizes, lint_report, mypy_ratchet
from scripts.pyproject_block import PYPROJECT, get_block, replace_block


def _function(name: str, body_lines: int, indent: str = "") -> str:
    """A function whose def and body take 1 + body_lines lines."""
    body = "".join(f"{indent}    x{i} = {i}\n" for i in range(body_lines - 1))
    return f"{indent}def {name}():\n{indent}    \"\"\"doc\"\"\"\n{body}"


def _tree(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "small.py").write_text(_function("fits", 79))             # 80 lines: at the limit
    (pkg / "long_module.py").write_text("x = 1\n" * 501)
    (pkg / "sub" / "methods.py").write_text(
        "class Panel:\n" + _function("build", 80, "    ") + _function("ok", 3, "    "))
    return pkg


def test_size_checker_reports_a_long_module_and_a_long_method(tmp_path):
    _tree(tmp_path)
    over = check_sizes.measure(tmp_path, "pkg")
    assert over == {"pkg/long_module.py": 501, "pkg/sub/methods.py::Panel.build": 81}
    found = check_sizes.problems(over, {})
    assert len(found) == 2
    assert found[0].startswith("pkg/long_module.py: module of 501 lines, over the limit of 500")
    assert found[1].startswith("pkg/sub/methods.py::Panel.build: function of 81 lines, "
                               "over the limit of 80")


def test_size_allow_list_may_only_shrink(tmp_path):
    _tree(tmp_path)
    over = check_sizes.measure(tmp_path, "pkg")
    # listed at today's size or more: allowed
    assert check_sizes.problems(over, {"pkg/long_module.py": 600,
                                       "pkg/sub/methods.py::Panel.build": 81}) == []
    # grown past its listed size, and a listed one that is within the limit now
    found = check_sizes.problems(over, {"pkg/long_module.py": 500,
                                        "pkg/sub/methods.py::Panel.build": 81,
                                        "pkg/small.py::fits": 95})
    assert [f.split(":")[0] for f in found] == ["pkg/long_module.py", "pkg/small.py"]
    assert "grew to 501 lines, past its allowed 500" in found[0]
    assert "within the limit now" in found[1] and "remove" in found[1]


def test_size_allow_list_file_round_trips(tmp_path):
    over = {"pkg/a.py": 612, "pkg/a.py::Widget.paint": 140}
    path = tmp_path / "allow.txt"
    path.write_text(check_sizes.render_allowlist(over))
    assert check_sizes.read_allowlist(path) == over


MYPY_OUTPUT = """\
hipscope/views/timeline/painting.py:12: error: "PaintingMixin" has no attribute "t0"  [attr-defined]
hipscope/views/timeline/painting.py:40:9: error: Item "None" has no attribute "y"  [union-attr]
hipscope/views/timeline/painting.py:40: note: See https://mypy.readthedocs.io
hipscope/parsers/kineto/__init__.py:7: error: Incompatible types in assignment  [assignment]
hipscope/model/trace.py:3: note: By default the bodies of untyped functions are not checked
"""


def test_mypy_output_is_counted_per_module():
    assert mypy_ratchet.errors_by_module(MYPY_OUTPUT) == Counter(
        {"hipscope.views.timeline.painting": 2, "hipscope.parsers.kineto": 1})


def test_mypy_ratchet_fails_on_a_clean_listed_module_and_an_unlisted_failing_one():
    errors = mypy_ratchet.errors_by_module(MYPY_OUTPUT)
    assert mypy_ratchet.problems(errors, ["hipscope.views.timeline.painting",
                                          "hipscope.parsers.kineto"]) == []
    found = mypy_ratchet.problems(errors, ["hipscope.views.timeline.painting",
                                           "hipscope.model.trace"])
    assert len(found) == 2
    assert found[0].startswith("hipscope.parsers.kineto: 1 mypy error(s)")
    assert found[1].startswith("hipscope.model.trace: clean now")


def test_mypy_ratchet_block_is_written_as_an_override_mypy_reads():
    text = "[tool.mypy]\nstrict = false\n\n# BEGIN mypy-ratchet\n# END mypy-ratchet\n"
    errors = Counter({"hipscope.b": 3, "hipscope.a": 1})
    written = replace_block(text, "mypy-ratchet", mypy_ratchet.render(errors))
    assert mypy_ratchet.listed(written) == ["hipscope.a", "hipscope.b"]
    override = tomllib.loads(written)["tool"]["mypy"]["overrides"][0]
    assert override["ignore_errors"] is True
    assert mypy_ratchet.listed(replace_block(written, "mypy-ratchet", "")) == []


def test_ruff_baseline_entry_that_hides_nothing_is_reported():
    found = {"hipscope/a.py": Counter({"E501": 2}), "hipscope/b.py": Counter({"I001": 1})}
    assert lint_report.stale(found, {"hipscope/a.py": ["E501"], "hipscope/b.py": ["I001"]}) == []
    found_now = {"hipscope/a.py": Counter({"E501": 2})}
    found_stale = lint_report.stale(found_now, {"hipscope/a.py": ["E501", "B007"],
                                                "hipscope/b.py": ["I001"]})
    assert [s.split(":")[0] for s in found_stale] == ["hipscope/a.py", "hipscope/b.py"]
    assert "no B007 finding left" in found_stale[0]


def test_ruff_baseline_round_trips_through_its_block():
    found = {"hipscope/b.py": Counter({"I001": 1, "E501": 4}),
             "hipscope/a.py": Counter({"N815": 2})}
    text = "[tool.ruff.lint.per-file-ignores]\n# BEGIN ruff-baseline\n# END ruff-baseline\n"
    written = replace_block(text, "ruff-baseline", lint_report.render(found))
    assert lint_report.baseline(written) == {"hipscope/a.py": ["N815"],
                                             "hipscope/b.py": ["E501", "I001"]}
    assert tomllib.loads(written)["tool"]["ruff"]["lint"]["per-file-ignores"] == \
        lint_report.baseline(written)


def test_the_projects_pyproject_holds_both_generated_blocks():
    text = PYPROJECT.read_text(encoding="utf-8")
    for name in ("mypy-ratchet", "ruff-baseline"):
        get_block(text, name)       # raises SystemExit with a sentence when a marker is gone
    assert all(m.startswith("hipscope.") for m in mypy_ratchet.listed(text))
