"""The re-solving experiment end to end at its smallest (Leduc at one depth, two
blueprints): its report, the docs table and figure rendered from it. Speed is not
checked; what is: every safe row stays within its bound, and the report holds
exactly what the docs read."""

import json
import sys
from pathlib import Path

import jax
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def modules(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "experiments"))
    monkeypatch.syspath_prepend(str(ROOT / "docs"))
    for name in ("resolving", "gen_pages"):
        sys.modules.pop(name, None)
    import gen_pages
    import resolving
    return resolving, gen_pages


def test_the_quick_run_reports_what_the_docs_read(modules, tmp_path, capsys):
    resolving, gen_pages = modules
    out = tmp_path / "resolving.json"
    try:
        assert resolving.main(["--quick", "--out", str(out)]) == 0
    finally:
        jax.config.update("jax_enable_x64", False)  # the script's, for the whole process
    report = json.loads(out.read_text())
    assert report["blueprints"] == [0, 10] and report["iterations"] == 100
    depth = report["games"]["leduc"]["depths"]["3"]
    for method, rows in depth["rows"].items():
        assert [r["blueprint"] for r in rows] == [0, 10]
        for r in rows:
            if method == "unsafe":
                assert r["bound"] is None
            else:  # the gadgets' guarantee: NashConv rises by at most the bound
                assert 2 * r["after"] <= 2 * r["before"] + r["bound"] + 1e-9
    assert report["one_call"]["states"] == 37  # Leduc's states of depth 6 with decisions
    table = gen_pages.resolving(report)
    assert "| Leduc poker | 3 (2 states) | uniform |" in table
    assert "faster than a Python loop over its 37 public states" in \
        gen_pages.figure("resolving.one_call", report)
    assert "wrote " in capsys.readouterr().out
