"""The Dask backend of annealed EM (issue 29): same parameters as in memory, bit-identical with any
number of workers, shards on disk checked and streamed, workers that die survived."""

import os
import signal
from dataclasses import dataclass

import numpy as np
import pytest

import latentzoo
from latentzoo.data import load
from latentzoo.inference import dask_backend
from latentzoo.inference.aspect import AspectBlocks
from latentzoo.models import (
    AspectModel,
    BayesianHierarchicalClustering,
    ClusterAbstractionModel,
    OneSidedClustering,
    ProductSpaceMixture,
    TwoSidedClustering,
)

distributed = pytest.importorskip("distributed")

SCHEDULE = {"betas": [0.8, 1.0], "max_iter": 3, "tol": 0.0, "random_state": 1,
            "progressbar": False}  # fmt: skip


def _cluster(n_workers, processes=False, **worker):
    return dask_backend.local_cluster(n_workers, processes, **worker)


@pytest.fixture(scope="module")
def client():
    with _cluster(2) as cluster, distributed.Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def reuters():
    return load("reuters")


def _assert_same(got, want, rtol=1e-12, atol=0.0):
    assert sorted(got.params) == sorted(want.params)
    for name, value in want.params.items():
        np.testing.assert_allclose(got.params[name], value, rtol=rtol, atol=atol, err_msg=name)


def test_aspect_on_7_blocks_gives_the_in_memory_parameters(client, reuters):
    model = AspectModel(5)
    memory = latentzoo.fit(model, reuters, **SCHEDULE)
    dask = latentzoo.fit(model, reuters, backend="dask", client=client, blocks=7, **SCHEDULE)
    _assert_same(dask, memory)
    np.testing.assert_allclose(dask.trace["free_energy"], memory.trace["free_energy"], rtol=1e-12)
    assert dask.settings["blocks"] == 7 and dask.model == memory.model


def test_one_sided_on_7_blocks_gives_the_in_memory_parameters(client, reuters):
    model = OneSidedClustering(4)
    memory = latentzoo.fit(model, reuters, **SCHEDULE)
    dask = latentzoo.fit(model, reuters, backend="dask", client=client, blocks=7, **SCHEDULE)
    # A posterior sums hundreds of n log q per document: the last bits of q (summed in another
    # order) move the posteriors by up to ~2e-14 (measured).
    _assert_same(dask, memory, atol=1e-12)
    np.testing.assert_allclose(dask.params["q"], memory.params["q"], rtol=1e-12)


@pytest.mark.parametrize("tau", ["leaf", "object"])
def test_cluster_abstraction_on_7_blocks_gives_the_in_memory_parameters(client, reuters, tau):
    # "object": each row's level weights stay with its block; "leaf": they are on the word side.
    model, part = ClusterAbstractionModel(2, tau=tau), reuters.subset(rows=np.arange(150))
    memory = latentzoo.fit(model, part, **SCHEDULE)
    dask = latentzoo.fit(model, part, backend="dask", client=client, blocks=7, **SCHEDULE)
    # Measured: q, tau, rho within 3e-14 relative, the posteriors within 3e-13.
    _assert_same(dask, memory, atol=1e-12)
    assert dask.plot is memory.plot
    np.testing.assert_allclose(dask.trace["free_energy"], memory.trace["free_energy"], rtol=1e-12)


def test_product_space_on_7_blocks_gives_the_in_memory_parameters(client, reuters):
    # Each block keeps its rows of p_row as numerators; their column sums travel (p_row is
    # normalised over all rows). Measured: every parameter within 1e-15 relative.
    model, part = ProductSpaceMixture(2, 3, eta=1.2), reuters.subset(rows=np.arange(150))
    memory = latentzoo.fit(model, part, **SCHEDULE)
    dask = latentzoo.fit(model, part, backend="dask", client=client, blocks=7, **SCHEDULE)
    _assert_same(dask, memory, atol=1e-15)
    np.testing.assert_allclose(dask.trace["free_energy"], memory.trace["free_energy"], rtol=1e-12)


def test_the_method_s_own_defaults_apply_on_dask(client):
    fitted = latentzoo.fit(ProductSpaceMixture(2, 2), load("toy"), backend="dask", client=client,
                           blocks=2, max_iter=2, progressbar=False)  # fmt: skip
    assert fitted.settings["tol"] == 1e-8  # the product-space EM's declared default


def test_two_sided_mean_field_on_7_blocks_gives_the_in_memory_parameters(client, reuters):
    # One pass per iteration: the next block counts come from n^T <I> and the new <J> on the
    # client. Measured: <I>, <J> within 1e-13, c, pi, the weights within 5e-15 relative.
    model, part = TwoSidedClustering(3, 2), reuters.subset(rows=np.arange(150))
    memory = latentzoo.fit(model, part, **SCHEDULE)
    dask = latentzoo.fit(model, part, backend="dask", client=client, blocks=7, **SCHEDULE)
    _assert_same(dask, memory, rtol=1e-12, atol=1e-12)
    for column in ("free_energy", "log_likelihood"):
        np.testing.assert_allclose(dask.trace[column], memory.trace[column], rtol=1e-12)


@pytest.mark.parametrize(
    ("model", "tol"), [(AspectModel(3), 1e-2), (OneSidedClustering(3), 1e-4)],
    ids=["AspectModel", "OneSidedClustering"],
)  # fmt: skip
def test_stages_that_stop_early_drop_the_step_submitted_ahead(client, reuters, model, tol):
    # Each step submits the next before it waits for its statistics; a stage that ends by tol
    # makes that guess wrong (the next step is at another beta, or the final E-step): the step
    # submitted ahead is dropped or, for the final E-step of a mixture, used as it.
    schedule = {**SCHEDULE, "max_iter": 60, "tol": tol}  # both stages stop by tol (2-4 steps)
    part = reuters.subset(rows=np.arange(150))
    memory = latentzoo.fit(model, part, **schedule)
    dask = latentzoo.fit(model, part, backend="dask", client=client, blocks=3, **schedule)
    assert memory.stages["stopped"].tolist() == ["tolerance", "tolerance"]
    assert dask.trace["iteration"].tolist() == memory.trace["iteration"].tolist()
    _assert_same(dask, memory, atol=1e-12)


@pytest.mark.parametrize(
    ("model", "tol"),
    [
        (AspectModel(3), 1e-2),
        (OneSidedClustering(3), 1e-4),
        (ClusterAbstractionModel(2, tau="object"), 0.0),
        (ProductSpaceMixture(2, 3, eta=1.2), 0.0),
        (TwoSidedClustering(3, 2), 0.0),
    ],
    ids=lambda value: type(value).__name__ if not isinstance(value, float) else f"tol{value}",
)
def test_one_block_runs_pass_and_m_step_as_one_task_with_the_in_memory_result(
    client, reuters, model, tol
):
    # One block has nothing to reduce: its pass and M-step are one task whose Iterate is the
    # next step's rows and word side alike; stages that stop by tol drop the fused step
    # submitted ahead, and a mixture's final E-step reads the fused output.
    schedule = {**SCHEDULE, "max_iter": 60 if tol else 3, "tol": tol}
    part = reuters.subset(rows=np.arange(150))
    memory = latentzoo.fit(model, part, **schedule)
    dask = latentzoo.fit(model, part, backend="dask", client=client, blocks=1, **schedule)
    assert dask.trace["iteration"].tolist() == memory.trace["iteration"].tolist()
    _assert_same(dask, memory, atol=1e-12)


def test_a_step_is_submitted_ahead_only_while_the_plan_lasts(client):
    blocks = AspectBlocks(AspectModel(2).for_method("annealed_em"))
    toy = load("toy")
    problem = dask_backend.DaskEM(blocks, client, [], [toy.n_rows], toy.n_cols)
    problem.sources = [client.submit(dask_backend._prepared, blocks, client.scatter(toy))]
    params = problem.scatter_start(blocks.start(toy, np.random.default_rng(0)))
    problem.plan([1.0], [2])
    params, _ = problem.step(params, 1.0)
    assert dask_backend._submitted_for(problem._ahead, params, 1.0)
    params, _ = problem.step(params, 1.0)
    assert problem._ahead is None  # the budget is spent: nothing follows
    # One block: the step's word side and rows are one task's output, its pass and M-step.
    assert params["word"] is params["rows"].futures[0]
    assert params["word"].key.startswith("latentzoo-pass-m-step-")


@dataclass(frozen=True)
class _PreparedAspectBlocks(AspectBlocks):
    """The aspect model's blocks with a ``prepare`` that tags its output (around the family's own
    ``prepare``, if it has one): the passes must be given what it returned."""

    def prepare(self, block):
        own = getattr(super(), "prepare", None)
        return "prepared", block if own is None else own(block)

    def block_pass(self, prepared, rows, shared, beta):
        tag, block = prepared
        assert tag == "prepared"
        return super().block_pass(block, rows, shared, beta)


def test_a_block_class_s_prepare_runs_once_per_block_and_its_output_feeds_the_passes(
    client, tmp_path
):
    toy, model = load("toy"), AspectModel(2).for_method("annealed_em")
    plain = dask_backend.annealed_em(model, toy, block_em=AspectBlocks, client=client, blocks=3,
                                     **SCHEDULE)  # fmt: skip
    prepared = dask_backend.annealed_em(model, toy, block_em=_PreparedAspectBlocks,
                                        client=client, blocks=3, **SCHEDULE)  # fmt: skip
    dask_backend.write_shards(toy, tmp_path, 2)
    shards = dask_backend.annealed_em(model, tmp_path, block_em=_PreparedAspectBlocks,
                                      client=client, **SCHEDULE)  # fmt: skip
    for name in plain.params:
        assert np.array_equal(plain.params[name], prepared.params[name]), name
        np.testing.assert_allclose(shards.params[name], plain.params[name], rtol=1e-12)


def test_one_and_two_workers_give_bit_identical_fits(client, reuters):
    two = latentzoo.fit(AspectModel(5), reuters, backend="dask", client=client, blocks=7,
                        **SCHEDULE)  # fmt: skip
    with _cluster(1) as cluster, distributed.Client(cluster) as alone:
        one = latentzoo.fit(AspectModel(5), reuters, backend="dask", client=alone, blocks=7,
                            **SCHEDULE)  # fmt: skip
    for name in two.params:
        assert np.array_equal(one.params[name], two.params[name]), name
    assert one.trace["free_energy"].tolist() == two.trace["free_energy"].tolist()


def test_shards_give_the_fit_of_the_same_blocks_in_memory(client, reuters, tmp_path):
    shards = dask_backend.write_shards(reuters, tmp_path, 60)
    assert shards.rows == (60,) * 6 + (35,)
    from_disk = latentzoo.fit(AspectModel(5), tmp_path, backend="dask", client=client, **SCHEDULE)
    memory = latentzoo.fit(AspectModel(5), reuters, **SCHEDULE)
    _assert_same(from_disk, memory)
    assert from_disk.coords["doc"] == list(reuters.row_labels)


def test_a_corrupt_shard_is_refused_naming_it(client, tmp_path):
    shards = dask_backend.write_shards(load("toy"), tmp_path, 2)
    broken = shards.paths[1]
    with open(broken, "r+b") as file:
        file.seek(40)
        file.write(b"\0" * 64)
    with pytest.raises(ValueError, match="shard-00001.npz"):
        latentzoo.fit(AspectModel(2), tmp_path, backend="dask", client=client, **SCHEDULE)


def test_a_shard_of_the_wrong_shape_is_refused_naming_it(client, tmp_path):
    data = load("toy")
    shards = dask_backend.write_shards(data, tmp_path, 2)
    data.subset(rows=[0, 1, 2]).to_npz(shards.paths[2])
    with pytest.raises(ValueError, match=r"shard-00002.npz holds 3 x 8 counts; its manifest"):
        latentzoo.fit(AspectModel(2), tmp_path, backend="dask", client=client, **SCHEDULE)


def test_a_folder_without_manifest_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not a shard folder"):
        dask_backend.read_shards(tmp_path)


def test_backends_and_options_are_checked_before_any_cluster_starts():
    toy = load("toy")
    with pytest.raises(ValueError, match="unknown backend 'spark'; backends: memory, dask"):
        latentzoo.fit(AspectModel(2), toy, backend="spark")
    with pytest.raises(ValueError, match="bhc's method 'bhc' has no Dask backend"):
        latentzoo.fit(BayesianHierarchicalClustering(), toy, method="bhc", backend="dask")
    with pytest.raises(
        ValueError, match="gibbs' has no Dask backend.*methods with one: annealed_em"
    ):
        latentzoo.fit(AspectModel(2), toy, method="gibbs", backend="dask")
    with pytest.raises(ValueError, match="explicit schedule"):
        latentzoo.fit(AspectModel(2), toy, backend="dask", betas="auto")
    with pytest.raises(ValueError, match="client and blocks need backend='dask'"):
        latentzoo.fit(AspectModel(2), toy, blocks=3)


@pytest.mark.slow
@pytest.mark.parametrize(
    "model",
    [
        OneSidedClustering(4),
        ClusterAbstractionModel(2, tau="object"),
        ProductSpaceMixture(2, 3, eta=1.2),
        TwoSidedClustering(3, 2),
    ],
    ids=lambda model: type(model).__name__,
)
def test_every_family_is_bit_identical_with_one_and_two_workers(client, reuters, model):
    two = latentzoo.fit(model, reuters, backend="dask", client=client, blocks=7, **SCHEDULE)
    with _cluster(1) as cluster, distributed.Client(cluster) as alone:
        one = latentzoo.fit(model, reuters, backend="dask", client=alone, blocks=7, **SCHEDULE)
    for name in two.params:
        assert np.array_equal(one.params[name], two.params[name]), name
    assert one.trace["free_energy"].tolist() == two.trace["free_energy"].tolist()


@pytest.mark.slow
def test_without_a_client_a_local_cluster_of_processes_is_started_and_closed():
    # Slow: two worker processes take 10-20 s to start, import and stop on a loaded machine.
    toy = load("toy")
    fitted = latentzoo.fit(AspectModel(2), toy, backend="dask", blocks=3, **SCHEDULE)
    with _cluster(1) as cluster, distributed.Client(cluster) as threads:
        again = latentzoo.fit(AspectModel(2), toy, backend="dask", client=threads, blocks=3,
                              **SCHEDULE)  # fmt: skip
    for name in fitted.params:
        assert np.array_equal(fitted.params[name], again.params[name]), name


# ------------------------------------------------------------------------------ out of core
def _stacked(data, times):
    import scipy.sparse as sp

    from latentzoo.data import CoOccurrence

    return CoOccurrence(sp.vstack([data.counts] * times).tocsr())


def _rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def test_between_passes_workers_hold_the_document_side_not_the_shards(client, tmp_path):
    from distributed.sizeof import sizeof

    from latentzoo.data import CoOccurrence

    shards = dask_backend.write_shards(_stacked(load("reuters"), 4), tmp_path, 200)
    shard_bytes = sum(os.path.getsize(path) for path in shards.paths)

    blocks = AspectBlocks(AspectModel(5).for_method("annealed_em"))
    problem = dask_backend.DaskEM(blocks, client, shards.paths, list(shards.rows), shards.n_cols)
    params = problem.shard_start(np.random.default_rng(0))
    params, _ = problem.step(params, 1.0)
    params, _ = problem.step(params, 1.0)

    def held(dask_worker):
        values = list(dask_worker.data.values())
        return sum(sizeof(v) for v in values), any(isinstance(v, CoOccurrence) for v in values)

    # A worker holding its half of the shards would hold at least shard_bytes / 2; what it
    # holds instead (document side and the last passes' word tables, released as the scheduler
    # forgets them) measured 0.2-0.27 of shard_bytes, so the bound sits between the two.
    for size, holds_counts in client.run(held).values():
        assert not holds_counts
        assert size < shard_bytes / 3, (size, shard_bytes)


@pytest.mark.slow
def test_ten_times_the_worker_memory_of_shards_is_fitted_within_the_limit(tmp_path):
    """A worker process with numba, scipy and latentzoo imported already holds ~230 MB, so no
    worker runs under 150 MB: the limit is 400 MB, ~170 MB above that footprint, and the shards
    total over 10 times that (1.9 GB). The manifest lists 4 shard files 40 times each (every pass
    reads each entry from disk): the corpus of a big folder without writing one. Dask kills a
    worker that passes 95% of its limit; none may be lost."""
    import json

    limit_mb = 400
    dask_backend.write_shards(_stacked(load("reuters"), 48), tmp_path, 4740)
    manifest = json.loads((tmp_path / dask_backend.MANIFEST).read_text())
    manifest["shards"] *= 40
    manifest["rows"] *= 40
    (tmp_path / dask_backend.MANIFEST).write_text(json.dumps(manifest))
    shards = dask_backend.read_shards(tmp_path)
    shard_bytes = sum(os.path.getsize(path) for path in shards.paths)
    with (
        _cluster(2, processes=True, memory_limit=f"{limit_mb}MB") as cluster,
        distributed.Client(cluster) as client,
    ):  # fmt: skip
        client.run(__import__, "latentzoo.inference.aspect")
        footprint = max(client.run(_rss_mb).values())
        assert shard_bytes > 10 * (limit_mb - footprint) * 2**20, (shard_bytes, footprint)
        pids = client.run(os.getpid)
        result = latentzoo.fit(AspectModel(5), tmp_path, backend="dask", client=client,
                               betas=[1.0], max_iter=1, tol=0, progressbar=False)  # fmt: skip
        assert client.run(os.getpid) == pids, "a worker passed its memory limit and was killed"
        assert max(client.run(_rss_mb).values()) < limit_mb
    assert result.params["theta"].shape == (shards.n_rows, 5)


@pytest.mark.slow
def test_a_worker_killed_mid_fit_is_survived_with_the_same_result(tmp_path):
    dask_backend.write_shards(_stacked(load("reuters"), 10), tmp_path, 400)
    schedule = {**SCHEDULE, "max_iter": 15}

    def kill_at_iteration(dask_worker, first=15):
        # A timer was a race: once the steady state got faster than the first fit's start-up, the
        # kill could land after the fit. Task keys name their iteration, so this is mid-fit.
        import re

        class Killer:
            def transition(self, key, start, finish, **kwargs):
                found = re.search(r"-i(\d{5})", str(key))
                if finish == "executing" and found and int(found.group(1)) >= first:
                    os.kill(os.getpid(), signal.SIGKILL)

        dask_worker.plugins["latentzoo-test-killer"] = Killer()

    with _cluster(2, processes=True) as cluster, distributed.Client(cluster) as client:
        calm = latentzoo.fit(AspectModel(5), tmp_path, backend="dask", client=client, **schedule)
        pids = client.run(os.getpid)
        client.run(kill_at_iteration, workers=[sorted(pids)[0]])
        survived = latentzoo.fit(AspectModel(5), tmp_path, backend="dask", client=client,
                                 **schedule)  # fmt: skip
        assert set(client.run(os.getpid).values()) != set(pids.values()), "no worker was killed"
    for name in calm.params:
        assert np.array_equal(calm.params[name], survived.params[name]), name
