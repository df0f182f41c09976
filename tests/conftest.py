"""Shared test configuration: a non-interactive matplotlib backend, and a summary of the common
checks (``tests/test_common.py``) and of the hypothesis examples (``tests/test_fuzz.py``) at the end
of the run."""

from collections import Counter, defaultdict

import matplotlib

matplotlib.use("Agg")

_COMMON: dict[str, Counter] = defaultdict(Counter)
_FUZZ: dict[str, Counter] = defaultdict(Counter)


def pytest_runtest_logreport(report):
    """Collect the outcome of each common check per family and the examples of each fuzz test
    (the tests record them with ``record_property``)."""
    if report.when != "call":
        return
    properties = dict(report.user_properties)
    family = properties.get("common_family")
    if family is not None:
        _COMMON[family][report.outcome] += 1
    method = properties.get("fuzz_method")
    if method is not None:
        _FUZZ[method]["examples"] += properties.get("hypothesis_examples", 0)
        _FUZZ[method]["refused"] += properties.get("hypothesis_refused", 0)
        _FUZZ[method][report.outcome] += 1


def pytest_terminal_summary(terminalreporter):
    if _COMMON:
        terminalreporter.section("common checks per model (latentzoo.testing)")
        for family, outcomes in sorted(_COMMON.items()):
            terminalreporter.write_line(
                f"{family:<16} {sum(outcomes.values()):4d} checks: {outcomes['passed']:4d} passed, "
                f"{outcomes['skipped']:3d} skipped, {outcomes['failed']:3d} failed"
            )
    if _FUZZ:
        terminalreporter.section("hypothesis examples per method (tests/test_fuzz.py)")
        for method, counts in sorted(_FUZZ.items()):
            verdict = "failed" if counts["failed"] else "passed"
            terminalreporter.write_line(
                f"{method:<28} {counts['examples']:6d} examples ({counts['refused']} refused "
                f"with ValueError), {verdict}"
            )
