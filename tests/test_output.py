"""How guards talks: colour only on a terminal and never with NO_COLOR; safe paths; ages;
short listings."""

from __future__ import annotations

import io
import os

import pytest

from guards import output


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")
    assert output.paint("x", "1", FakeTty()) == "\033[1mx\033[0m"
    assert output.paint("x", "1", io.StringIO()) == "x"
    monkeypatch.setenv("NO_COLOR", "")
    assert output.paint("x", "1", FakeTty()) == "x"


def test_show_path_quotes_like_git() -> None:
    assert output.show_path("plain/name.txt") == "plain/name.txt"
    assert output.show_path("new\nline") == '"new\\nline"'
    assert output.show_path('quote"d') == '"quote\\"d"'
    assert output.show_path(os.fsdecode(b"caf\xe9")) == '"caf\\351"'
    assert output.show_path("ünï") == "ünï"
    assert output.show_path("evil\u202etxt.exe") == '"evil\\342\\200\\256txt.exe"'


def test_age_reads_like_a_person() -> None:
    assert output.age(None) == "-"
    assert output.age(100.0, now=100.0 + 125) == "2 min ago"
    assert output.age(0.0, now=3 * 7 * 86400.0) == "3 weeks ago"


def test_a_listing_names_a_few_then_counts_the_rest() -> None:
    assert output.listing([], 3) == ""
    assert output.listing(["a", "b", "c"], 3) == "a, b, c"
    assert output.listing(["a", "b", "c", "d", "e"], 3) == "a, b, c and 2 more"
    assert output.listing(("x", "y"), 1) == "x and 1 more"


def test_held_lines_are_written_when_it_ends_each_once_in_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from guards import output

    with output.Held():
        output.warn("first")
        output.warn("second")
        output.warn("first")
        assert capsys.readouterr().err == ""  # nothing yet: the last look is not over
    assert capsys.readouterr().err == "guards: warning: first\nguards: warning: second\n"


def test_one_home_for_how_many_names_a_listing_shows() -> None:
    """The "N names and M more" limits were four constants (rescue naming, the decision,
    land, doctor); they are guards.output's two."""
    from guards.doctor import findings

    assert output.SHOWN == 3 and findings.LIST_MAX == output.SHOWN_IN_REPORTS == 5
    assert output.listing(["a", "b", "c", "d"]) == "a, b, c and 1 more"
