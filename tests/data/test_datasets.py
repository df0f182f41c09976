"""Tests for latentzoo.data.datasets."""

import numpy as np
import pytest

from latentzoo.data import CoOccurrence, list_datasets, load


def test_load_reuters():
    X = load("reuters")
    assert isinstance(X, CoOccurrence)
    assert X.shape == (395, 4258)
    assert X.total == 84010
    assert X.row_labels.shape == (395,)
    assert X.col_labels.shape == (4258,)
    assert X.row_labels[0].startswith("0 UK: Prince Charles")


def test_load_toy_has_two_blocks():
    X = load("toy")
    assert X.shape == (6, 8)
    dense = X.toarray()
    assert dense[:3, 4:].sum() == 0 and dense[3:, :4].sum() == 0
    assert (dense[:3, :4] > 0).all() and (dense[3:, 4:] > 0).all()


def test_load_returns_independent_copies():
    first = load("toy")
    first.counts.data[:] = 0
    assert load("toy").total > 0


def test_unknown_dataset():
    with pytest.raises(
        ValueError,
        match=r"unknown dataset 'foo'; known datasets: 20newsgroups, ptb-adjnoun, reuters, reuters-r8, toy",
    ):
        load("foo")


def test_list_datasets():
    table = list_datasets()
    assert list(table.columns) == [
        "name",
        "n_rows",
        "n_cols",
        "observations",
        "source",
        "licence",
        "description",
    ]
    assert {"reuters", "toy"} <= set(table["name"])
    rows = table.set_index("name")
    assert (rows.loc["reuters", "n_rows"], rows.loc["reuters", "n_cols"]) == (395, 4258)
    assert rows.loc["reuters", "observations"] == 84010
    assert rows.loc["toy", "observations"] == load("toy").total
    assert "lda" in rows.loc["reuters", "source"]
    assert "MPL-2.0" in rows.loc["reuters", "licence"]
    assert np.issubdtype(table["observations"].dtype, np.integer)


def test_an_option_the_dataset_does_not_take_is_refused_in_one_line_naming_what_it_takes():
    from latentzoo.data import DatasetOptionError

    with pytest.raises(ValueError, match=r"^dataset 'toy' takes no options, got \['size'\]$"):
        load("toy", size=3)
    with pytest.raises(DatasetOptionError, match="'n_textures', 'size', 'random_state', got"):
        load("texture-mosaic", colour=True)
    with pytest.raises(
        TypeError, match=r"'senate106' takes only the option 'missing', got \['x'\]"
    ):
        load("senate106", x=1)
    # An unknown name is reported as such, whatever the options.
    with pytest.raises(ValueError, match="unknown dataset 'nope'"):
        load("nope", size=3)
