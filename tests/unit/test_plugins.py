"""Entry points: pyproject names every built-in reader, rule module and panel module;
a plugin module loads through an EntryPoint, a broken one is logged and skipped."""

from __future__ import annotations

import logging
import tomllib
from importlib.metadata import EntryPoint
from pathlib import Path

from hipscope.model.plugins import load_group
from hipscope.parsers import base
from hipscope.tuner import rules

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _groups() -> dict[str, dict[str, str]]:
    with PYPROJECT.open("rb") as f:
        return tomllib.load(f)["project"]["entry-points"]


def test_pyproject_lists_the_built_in_readers():
    readers = _groups()["hipscope.readers"]
    assert sorted(readers.values()) == sorted(f"hipscope.parsers.{m}"
                                              for m in base.BUILTIN_MODULES)


def test_pyproject_lists_the_rule_and_panel_modules():
    g = _groups()
    assert sorted(g["hipscope.rules"].values()) == [
        "hipscope.tuner.rules", "hipscope.tuner.rules_knobs", "hipscope.tuner.rules_sync"]
    assert list(g["hipscope.panels"].values()) == ["hipscope.views.builtin_panels"]


RULE_PLUGIN = '''
from hipscope.tuner.rules import rule


@rule("test_plugin_rule")
def never(ctx):
    return []
'''


def test_a_rule_plugin_registers_through_its_entry_point(tmp_path, monkeypatch, caplog):
    (tmp_path / "hipscope_rule_plugin.py").write_text(RULE_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    good = EntryPoint("mine", "hipscope_rule_plugin", "hipscope.rules")
    broken = EntryPoint("broken", "hipscope_no_such_plugin", "hipscope.rules")
    try:
        with caplog.at_level(logging.ERROR, logger="hipscope.model.plugins"):
            loaded = load_group("hipscope.rules", ["hipscope.tuner.rules_knobs"],
                                eps=[broken, good])
        assert loaded == ["mine"]
        assert "test_plugin_rule" in rules.RULES and "graph-capture" in rules.RULES
        assert "plugin broken (hipscope_no_such_plugin) of hipscope.rules failed" in caplog.text
    finally:
        rules.RULES.pop("test_plugin_rule", None)
