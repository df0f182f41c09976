"""The mutation suite as tests.

Default run (fast): every catalog entry applies cleanly to the current code (its snippet occurs
exactly once, the replacement differs and the mutated file still compiles), so the catalog cannot
silently rot while the code changes.

``-m slow``: each mutation applied alone to a copy of the package must make ``latentzoo.validate``
fail (a failed check, or an exception whose message is recorded), and each family's unmutated
copy must pass. Each case is a subprocess that compiles the numba kernels afresh and runs every
quick level, i.e. minutes per case; run them one at a time, or choose with ``-k``.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from tests.mutation.catalog import FAMILIES, KINDS, MUTATIONS, fast_method, model_for
from tests.mutation.run import (
    ROOT,
    apply_mutation,
    merge_runs,
    render_report,
    run_control,
    run_mutation,
)

SEED = 0
IDS = [m.id for m in MUTATIONS]


def test_catalog_entries_are_well_formed():
    assert len(set(IDS)) == len(IDS), "duplicate mutation ids"
    for m in MUTATIONS:
        assert m.family in FAMILIES, m.id
        assert m.kind in KINDS, m.id
        assert m.new != m.old, m.id
        assert m.path.split("/")[0] in ("latentzoo", "models", "inference", "data"), m.id


def test_catalog_covers_what_the_issue_asks():
    def count(kind, families):
        return sum(m.kind == kind and m.family in families for m in MUTATIONS)

    for family in ("aspect", "one_sided", "two_sided"):
        assert count("gibbs", {family}) >= 5, family
    assert count("gibbs", {"dpm", "finite_mixture"}) >= 5
    # Issue 25: at least 3 mutations of every fast method validate runs; the annealed EMs here.
    for family in ("aspect", "one_sided", "two_sided", "product_space"):
        assert count("em", {family}) >= 3, family
    assert count("pymc", set(FAMILIES)) >= 2
    # Issue 25: at least 3 mutations of every fast method of the families without a sampler
    # (BHC's three builders by id prefix) and of the HACM's Gibbs sampler and EM.
    for prefix in ("bhc-", "rbhc-", "embhc-"):
        assert sum(m.id.startswith(prefix) for m in MUTATIONS) >= 3, prefix
    for family, kind in [
        ("bayesian_sets", "score"),
        ("pairwise", "annealing"),
        ("central", "annealing"),
        ("cluster_abstraction", "gibbs"),
        ("cluster_abstraction", "em"),
        ("topic_tree", "lp"),
        ("iomm", "gibbs"),
        ("bpm", "gibbs"),
    ]:
        assert count(kind, {family}) >= 3, (family, kind)
    assert any(m.id == "hacm-draw-tau-eta" for m in MUTATIONS), "the issue's missed HACM draw"


def test_every_fast_method_has_three_mutations():
    """Issue 25: at least 3 mutations of every registered fast method (``latentzoo list``); a
    method no level runs has its reason in ``UNREACHED_METHODS``."""
    from latentzoo.zoo import ZOO

    catalog_family = {"mixture": "finite_mixture"}
    counts = Counter((m.family, fast_method(m)) for m in MUTATIONS)
    for name, entry in ZOO.items():
        family = catalog_family.get(name, name.replace("-", "_"))
        assert family in FAMILIES, name
        for method, implementation in entry.methods.items():
            # Names of one implementation (two_sided's mean_field and annealed_em) share its count.
            names = [n for n, other in entry.methods.items() if other is implementation]
            assert sum(counts[family, n] for n in names) >= 3, (family, method)


def test_readme_lists_the_catalog():
    readme = (ROOT / "tests/mutation/README.md").read_text()
    listed = re.findall(r"^\| ([a-z0-9-]+) \| [a-z_]+ \| [a-z]+ \| `", readme, flags=re.M)
    assert listed == IDS, "README's catalog table differs from catalog.MUTATIONS"


def test_a_previous_report_merges_back_to_itself():
    """``--merge RESULTS.md`` rebuilds the report's cases from its markdown (its ``.json`` may be
    gone): the tables it renders again are the report's own (not "Per level": the markdown has
    no passed checks, so a case counts as run at its relevant levels)."""
    report = ROOT / "tests/mutation/RESULTS.md"
    settings, controls, outcomes = merge_runs([report])
    again = render_report(outcomes, controls, settings, not_run=True)

    def section(text, title):
        return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]

    titles = ["Mutations", "Details", "Controls (unmutated copies; must pass)"]
    if "\n## Not run this round\n" in report.read_text():
        titles.append("Not run this round")
    for title in titles:
        assert section(again, title) == section(report.read_text(), title), title


@pytest.mark.parametrize("mutation", MUTATIONS, ids=IDS)
def test_mutation_applies_to_current_code(mutation):
    path = ROOT / mutation.path
    text = path.read_text()
    occurrences = text.count(mutation.old)
    assert occurrences == 1, f"{mutation.id}: snippet occurs {occurrences} times in {mutation.path}"
    mutated = apply_mutation(text, mutation)
    assert mutated != text
    compile(mutated, str(path), "exec")


# Every model the suite validates: each family's, and the mutations' own.
CONTROLS = list(dict.fromkeys([*FAMILIES.items(), *((m.family, model_for(m)) for m in MUTATIONS)]))

# Tiers: the whole suite is hours on two cores (``tests/mutation/RESULTS.md``: 1 to 4 minutes per
# case), so it is marked ``heavy`` (``make test-heavy``) except for one family's control and one
# mutation (the EM's), which the slow tier of ``.ci/run`` runs so that the harness is exercised
# end to end on every CI run. The Gibbs and PyMC mutations of that family left the slow tier on
# the 2-core Intel Xeon of 2026-11-28, where each case took 3 to 10 minutes: the heavy tier runs
# them with the rest.
IN_SLOW_TIER = {
    "aspect",
    "aspect-em-theta-alpha",
}


def _tier(case_id):
    return () if case_id in IN_SLOW_TIER else (pytest.mark.heavy,)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("family", "model"),
    [
        pytest.param(f, m, id=f"{f}:{m}", marks=_tier(f if m == FAMILIES[f] else None))
        for f, m in CONTROLS
    ],
)
def test_unmutated_copy_passes(family, model):
    outcome = run_control(family, model, seed=SEED)
    assert outcome.imported_from, "the subprocess did not report where latentzoo came from"
    failed = [c for c in outcome.checks if not c["passed"]]
    assert outcome.passed, f"control {family}: error {outcome.error!r}, failed checks {failed}"


@pytest.mark.slow
@pytest.mark.parametrize(
    "mutation", [pytest.param(m, id=m.id, marks=_tier(m.id)) for m in MUTATIONS]
)
def test_validate_fails_on_mutation(mutation):
    outcome = run_mutation(mutation, seed=SEED)
    assert outcome.caught, (
        f"{mutation.id} ({mutation.description}) at {model_for(mutation)} passed validate: "
        f"{[(c['level'], c['name'], c['detail']) for c in outcome.checks]}"
    )
    if outcome.error:
        # A crash counts only with its message recorded.
        assert outcome.error.strip()
