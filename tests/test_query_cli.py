"""``latentzoo query``: Bayesian Sets from the command line (Heller 2007, chapter 4)."""

import pytest

from latentzoo.cli import main


def _run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_query_movielens_ranks_by_score_with_labels_and_features(capsys):
    code, out, err = _run(capsys, "query", "--data", "movielens", "--item", "Toy Story (1995)",
                          "--item", "Finding Nemo (2003)", "--top", "5")  # fmt: skip
    assert code == 0, err
    lines = out.strip().splitlines()
    assert lines[1] == "query: Toy Story (1995); Finding Nemo (2003)"
    ranked = lines[2:]
    assert len(ranked) == 5 and ranked[0].startswith("  1. ")
    scores = [float(line.split("[")[0].split()[-1]) for line in ranked]
    assert scores == sorted(scores, reverse=True)
    assert all("<- user_" in line and "[" in line for line in ranked)
    assert not any("Toy Story (1995)" in line for line in ranked)  # the query is left out
    assert sum("Animation" in line for line in ranked) >= 3


def test_query_by_row_numbers_on_counts_binarises_by_presence(capsys, tmp_path):
    path = tmp_path / "counts.csv"
    path.write_text("doc,cat,dog,fish\na,3,0,0\nb,2,1,0\nc,0,0,5\nd,1,0,0\n")
    code, out, err = _run(capsys, "query", "--data", str(path), "--items", "0,b", "--top", "2")
    assert code == 0, err
    assert "binarised as presence" in out
    assert out.strip().splitlines()[2].split()[1] == "d"


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--data", "movielens", "--items", "Toy Storyy"], "no item named 'Toy Storyy'"),
        (["--data", "movielens", "--items", "toy story"], "did you mean 'Toy Story (1995)'"),
        (["--data", "movielens"], "give the query with --items"),
        (["--data", "movielens", "--items", "0", "--top", "0"], "--top must be a positive"),
        (["--data", "reuters", "--items", "0"], "holds CoOccurrence data"),
        (["--data", "nope", "--items", "0"], "unknown data 'nope'"),
        (["--data", "digits", "--items", "0,0"], "query"),
        (["--data", "images", "--items", "0", "--binarize", "none"], "--binarize none"),
    ],
)
def test_query_bad_input_is_one_line(capsys, argv, words):
    code, _, err = _run(capsys, "query", *argv)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and words in lines[0], err
