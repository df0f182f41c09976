"""Helpers that several test files share: a fast sampler as ``sbc`` calls it, the layout every
Gibbs ``InferenceData`` of co-occurrence data has, and loading in a fresh interpreter without
optional sources."""

import subprocess
import sys

import numpy as np


def sbc_gibbs(gibbs, model, tune: int = 50, thin: int = 5):
    """``sampler(data, generator, n_draws)`` for :func:`~latentzoo.inference.calibration.sbc`: one
    chain of ``gibbs(model, data, ...)`` per simulated data set."""

    def sampler(data, generator, n_draws):
        return gibbs(model, data, chains=1, draws=n_draws, tune=tune, thin=thin,
                     random_state=generator, progressbar=False)  # fmt: skip

    return sampler


def assert_cooccurrence_idata(idata, data, simplices: dict) -> None:
    """The coordinates, groups and attributes of a Gibbs fit of ``data`` (a CoOccurrence); every
    ``simplices`` entry ``name: dim`` is a posterior variable whose draws sum to one over ``dim``."""
    post = idata.posterior
    assert list(post["doc"].values) == list(data.row_labels)
    assert list(post["word"].values) == list(data.col_labels)
    assert idata.log_likelihood["counts"].dims == ("chain", "draw", "doc")
    assert idata.sample_stats["lp"].dims == ("chain", "draw")
    assert np.array_equal(idata.observed_data["counts"].values, data.toarray())
    assert post.attrs["method"] == "gibbs"
    for name, dim in simplices.items():
        np.testing.assert_allclose(post[name].sum(dim), 1.0, rtol=1e-12)


def load_without(module: str, expression: str, tmp_path, then: str = "") -> str:
    """What ``print(expression)`` prints (``load`` imported from ``latentzoo.data``) in a fresh
    interpreter where ``module`` cannot be imported, no program is on PATH (no Rscript, no dpkg)
    and HOME is empty; ``then`` is code run after it. Fails the test if the interpreter fails."""
    code = (
        f"import sys; sys.modules[{module!r}] = None\n"
        "from latentzoo.data import load\n"
        f"print({expression})\n{then}"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PATH": str(tmp_path), "HOME": str(tmp_path)},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def random_hacm_params(rng, model, n_rows: int, n_cols: int) -> dict:
    """Random parameters of a cluster-abstraction model for ``n_rows x n_cols`` data: ``tau`` of
    the model's form (positive on every path, zero below it), ``rho`` and ``q`` from flat
    Dirichlets."""
    tree = model.tree
    valid = tree.paths >= 0
    if model.tau == "constant":
        tau = model.default_tau()
    else:
        lead = (n_rows,) if model.tau == "object" else ()
        raw = np.where(valid, rng.random((*lead, *valid.shape)) + 0.05, 0.0)
        tau = raw / raw.sum(axis=-1, keepdims=True)
    return {
        "rho": rng.dirichlet(np.ones(tree.n_leaves)),
        "q": rng.dirichlet(np.ones(n_cols), size=tree.n_nodes),
        "tau": tau,
    }
