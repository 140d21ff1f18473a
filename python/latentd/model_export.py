"""The whole model a daemon serves, fetched page by page (ExportModel).

Client.export_model() pages through the ExportModel call the way latentctl
export does (cli/export_command.cc): from word 0 until the vocabulary is
covered, keeping the pages only if all carry the model version of the
first, else starting over (at most `attempts` times: the model moves while
the node trains or merges ingested documents). Every page is checked
against the first (K, V, where it starts, topics rising below K, counts
positive) and each topic's column against the n_k the node sent; a page
that does not fit raises DATA_LOSS, a model that kept moving ABORTED.

The result, Model, holds the counts n_wk sparsely (per word, its non-zero
topics) with α, β and n_k, and gives what topic-model tools take: the
topic-word distributions φ_kw = (n_wk + β) / (n_k + Vβ) (smoothed like the
model), the term frequencies n_w and the vocabulary in WordId order (the
order of the node's vocab.txt).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import (Any, Callable, Dict, List, Mapping, Optional, Tuple)

from latentd.errors import LatentdError
from latentd.messages import ModelVersion, _int, _pandas

# One word's non-zero counts: (topic, n_wk) pairs by increasing topic.
WordCounts = Tuple[Tuple[int, int], ...]


@dataclass(frozen=True)
class Model:
    """A daemon's model at one version (see the module docstring). `words`
    and `counts` are indexed by WordId; `alpha` and `topic_tokens` (n_k)
    by topic; `pages` is how many ExportModel calls the fetch took."""
    version: ModelVersion
    beta: float
    alpha: Tuple[float, ...]
    topic_tokens: Tuple[int, ...]
    words: Tuple[str, ...]
    counts: Tuple[WordCounts, ...]
    pages: int = 1

    @property
    def num_topics(self) -> int:
        """K."""
        return len(self.alpha)

    @property
    def vocabulary(self) -> int:
        """V."""
        return len(self.words)

    def word_counts(self) -> List[int]:
        """n_w of every word (its term frequency), by WordId."""
        return [sum(n for _, n in c) for c in self.counts]

    def topic_word(self) -> List[List[float]]:
        """φ: K rows of V probabilities (n_wk + β) / (n_k + Vβ), each row
        summing to 1. Dense, K·V floats: for a large model use `counts`."""
        v_beta = self.vocabulary * self.beta
        rows = [[self.beta / (n_k + v_beta)] * self.vocabulary
                for n_k in self.topic_tokens]
        for w, word_counts in enumerate(self.counts):
            for k, n in word_counts:
                rows[k][w] = (n + self.beta) / (self.topic_tokens[k] + v_beta)
        return rows

    def to_frame(self) -> Any:
        """topic_word() as a pandas DataFrame: index "topic" 0..K-1, one
        column per word. Raises ImportError without pandas."""
        pd = _pandas("Model.to_frame")
        return pd.DataFrame(self.topic_word(),
                            index=pd.RangeIndex(self.num_topics, name="topic"),
                            columns=pd.Index(self.words, name="word"))


def _data_loss(message: str) -> LatentdError:
    return LatentdError("DATA_LOSS", message, method="ExportModel")


class _Fetch:
    """One pass from word 0: the pages of one version, checked."""

    def __init__(self, first: Mapping[str, Any]) -> None:
        self.version = ModelVersion.from_json(first.get("version"))
        self.k = _int(first, "topics")
        self.v = _int(first, "vocabulary")
        self.beta = float(first.get("beta", 0.0))
        self.alpha = tuple(float(a) for a in first.get("alpha", ()))
        self.topic_tokens = tuple(int(n) for n in first.get("topicTokens", ()))
        if (self.k < 1 or len(self.alpha) != self.k
                or len(self.topic_tokens) != self.k):
            raise _data_loss(
                f"first page: K = {self.k} with {len(self.alpha)} alphas and "
                f"{len(self.topic_tokens)} topic totals")
        self.words: List[str] = []
        self.counts: List[WordCounts] = []
        self.pages = 0

    def add(self, page: Mapping[str, Any]) -> None:
        """Appends the words of `page`; DATA_LOSS if it does not fit."""
        start = len(self.words)
        words = page.get("words", [])
        if (_int(page, "topics") != self.k or _int(page, "vocabulary") != self.v
                or _int(page, "firstWord") != start
                or len(words) > self.v - start
                or (not words and start < self.v)):
            raise _data_loss(
                f"page at word {start} does not fit the model: K = "
                f"{_int(page, 'topics')}, V = {_int(page, 'vocabulary')}, "
                f"first_word {_int(page, 'firstWord')}, {len(words)} words "
                f"(model: K = {self.k}, V = {self.v})")
        for w in words:
            word = w.get("word", "")
            topics = [int(k) for k in w.get("topics", ())]
            counts = [int(n) for n in w.get("counts", ())]
            if (not word or len(topics) != len(counts)
                    or any(k >= self.k for k in topics)
                    or any(n <= 0 for n in counts)
                    or any(a >= b for a, b in zip(topics, topics[1:]))):
                raise _data_loss(
                    f"word {len(self.words)} ({word!r}): topics {topics}, "
                    f"counts {counts} (want a word, topics rising below "
                    f"K = {self.k}, one positive count each)")
            self.words.append(word)
            self.counts.append(tuple(zip(topics, counts)))
        self.pages += 1

    def done(self) -> bool:
        return len(self.words) >= self.v

    def model(self) -> Model:
        """The fetched model; DATA_LOSS if a column misses its n_k."""
        totals = [0] * self.k
        for word_counts in self.counts:
            for k, n in word_counts:
                totals[k] += n
        for k, (got, want) in enumerate(zip(totals, self.topic_tokens)):
            if got != want:
                raise _data_loss(f"topic {k}: the words' counts add up to "
                                 f"{got}, the node says n_k = {want}")
        return Model(version=self.version, beta=self.beta, alpha=self.alpha,
                     topic_tokens=self.topic_tokens, words=tuple(self.words),
                     counts=tuple(self.counts), pages=self.pages)


def fetch_model(call: Callable[[str, Optional[Dict[str, Any]]],
                               Dict[str, Any]],
                page_words: int, attempts: int) -> Model:
    """Pages ExportModel through `call` (Client.call); see the module
    docstring."""
    if page_words < 1 or attempts < 1:
        raise ValueError(f"page_words ({page_words}) and attempts "
                         f"({attempts}) must be at least 1")
    moves = []
    for _ in range(attempts):
        page = call("ExportModel", {"firstWord": 0, "maxWords": page_words})
        fetch = _Fetch(page)
        fetch.add(page)
        moved: Optional[ModelVersion] = None
        while not fetch.done():
            page = call("ExportModel", {"firstWord": len(fetch.words),
                                        "maxWords": page_words})
            version = ModelVersion.from_json(page.get("version"))
            if version != fetch.version:
                moved = version
                break
            fetch.add(page)
        if moved is None:
            return fetch.model()
        moves.append((fetch.version, moved))
    first, last = moves[-1]
    raise LatentdError(
        "ABORTED",
        f"the model changed while it was being fetched, {len(moves)} times "
        f"running (last from sweep {first.sweep}, view {first.view} to sweep "
        f"{last.sweep}, view {last.view}): training is moving the model (or "
        "ingested documents are being merged); export once the node has "
        "stopped sampling (start latentd with --max-sweeps)",
        method="ExportModel")
