"""`make coverage`'s per-suite figures: each suite counts the lines run under its own context and
those run while pytest collected the tests, never another suite's."""

from __future__ import annotations

from pathlib import Path

import coverage
import pytest

from tests.support.coverage_by_suite import COLLECTION, percent


def test_a_suite_counts_its_own_lines_and_the_collected_ones_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a ten-line module: lines 1-2 ran at collection, 3-4 under unit, 5-9 under e2e
    monkeypatch.chdir(tmp_path)
    module = tmp_path / "module.py"
    module.write_text("".join(f"x{n} = {n}\n" for n in range(1, 11)))
    data = coverage.CoverageData(basename=str(tmp_path / ".coverage"))
    for context, lines in (("", [1, 2]), ("unit", [3, 4]), ("e2e", [5, 6, 7, 8, 9])):
        data.set_context(context)
        data.add_lines({str(module): lines})
    data.write()
    measured = coverage.Coverage(data_file=str(tmp_path / ".coverage"), config_file=False)
    measured.load()
    # Then each suite's share is its lines and the collection's, and all suites' share is the union
    assert percent(measured, ["^unit$", COLLECTION], tmp_path) == pytest.approx(40.0)
    assert percent(measured, ["^e2e$", COLLECTION], tmp_path) == pytest.approx(70.0)
    assert percent(measured, ["^integration$", COLLECTION], tmp_path) == pytest.approx(20.0)
    assert percent(measured, None, tmp_path) == pytest.approx(90.0)


def test_copies_of_the_tree_outside_the_checkout_are_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the checkout's module half run, and a copy elsewhere (a test's clone) fully run
    monkeypatch.chdir(tmp_path)
    checkout, copy = tmp_path / "checkout", tmp_path / "clone"
    for root in (checkout, copy):
        root.mkdir()
        (root / "module.py").write_text("".join(f"x{n} = {n}\n" for n in range(1, 5)))
    data = coverage.CoverageData(basename=str(tmp_path / ".coverage"))
    data.set_context("unit")
    data.add_lines({str(checkout / "module.py"): [1, 2], str(copy / "module.py"): [1, 2, 3, 4]})
    data.write()
    (copy / "module.py").unlink()  # as a test's temporary clone is gone by the report
    measured = coverage.Coverage(data_file=str(tmp_path / ".coverage"), config_file=False)
    measured.load()
    # Then only the checkout's lines count
    assert percent(measured, ["^unit$"], checkout) == pytest.approx(50.0)
