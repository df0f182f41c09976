"""The shared progress bar: shown on a terminal, silent in a log (issue 24)."""

import io
import sys

import pytest

from latentzoo.inference.progress import progress_bar


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize(
    "stream, progressbar, shown",
    [(Terminal(), True, True), (io.StringIO(), True, False), (Terminal(), False, False)],
    ids=["terminal", "log", "off"],
)
def test_the_bar_shows_only_on_a_terminal_when_asked(monkeypatch, stream, progressbar, shown):
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    assert sum(progress_bar(range(50), progressbar=progressbar, desc="work")) == 1225
    assert ("work" in stream.getvalue()) == shown
