"""The answers of the latentd API as Python objects.

One frozen dataclass per message of service/api.proto, with snake_case field
names as in the .proto; 64-bit counts (which protobuf's JSON mapping sends as
strings) are ints, repeated fields tuples. Fields the daemon adds later are
ignored, fields it leaves out get the proto3 default, so a client keeps
working against a newer or older daemon.

Two answers hold a table and can become a pandas DataFrame: TopicList
(``to_frame()``: one row per topic and top word) and DocumentTopics
(``to_frame()``: one row per document, one column per topic). pandas is
imported only there; everything else needs the standard library alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple


def _int(msg: Mapping[str, Any], name: str) -> int:
    # int64/uint64 arrive as JSON strings, 32-bit ints as numbers.
    return int(msg.get(name, 0))


def _missing(msg: Mapping[str, Any]) -> Tuple[str, ...]:
    # The cluster members that did not answer a scattered query.
    return tuple(msg.get("missingMembers", ()))


def _float(msg: Mapping[str, Any], name: str) -> float:
    # Non-finite doubles arrive as "NaN" / "Infinity" / "-Infinity".
    return float(msg.get(name, 0.0))


def _optional_float(msg: Mapping[str, Any], name: str) -> Optional[float]:
    # proto3 `optional`: absent means "not known yet", not 0.0.
    return float(msg[name]) if name in msg else None


def _pandas(what: str) -> Any:
    try:
        import pandas  # pylint: disable=import-outside-toplevel
    except ImportError as e:
        raise ImportError(
            f"{what} needs pandas, which is not installed (Debian: apt-get "
            "install python3-pandas; or pip install pandas); the client's "
            "other answers need only the standard library") from e
    return pandas


@dataclass(frozen=True)
class ModelVersion:
    """The model an answer was computed from: ``sweep`` (sweeps completed)
    and ``view`` (bumped whenever the published model changes). Two answers
    with the same view come from the same frozen model."""
    sweep: int = 0
    view: int = 0

    @classmethod
    def from_json(cls, msg: Optional[Mapping[str, Any]]) -> "ModelVersion":
        msg = msg or {}
        return cls(sweep=_int(msg, "sweep"), view=_int(msg, "view"))


@dataclass(frozen=True)
class WordWeight:
    """A word and its probability φ_wk in a topic."""
    word: str
    probability: float

    @classmethod
    def from_json(cls, msg: Mapping[str, Any]) -> "WordWeight":
        return cls(word=msg.get("word", ""),
                   probability=_float(msg, "probability"))


def _words(msg: Mapping[str, Any]) -> Tuple[WordWeight, ...]:
    return tuple(WordWeight.from_json(w) for w in msg.get("topWords", ()))


@dataclass(frozen=True)
class TopicWeight:
    """A topic and a weight (θ_k of a document or user, or p(k | word));
    ``top_words`` only where the call fills them (user profiles)."""
    topic: int
    weight: float
    top_words: Tuple[WordWeight, ...] = ()

    @classmethod
    def from_json(cls, msg: Mapping[str, Any]) -> "TopicWeight":
        return cls(topic=_int(msg, "topic"), weight=_float(msg, "weight"),
                   top_words=_words(msg))


def _topic_weights(msg: Mapping[str, Any]) -> Tuple[TopicWeight, ...]:
    return tuple(TopicWeight.from_json(t) for t in msg.get("topics", ()))


@dataclass(frozen=True)
class Topic:
    """A topic: its id, α_k, n_k (tokens) and its top words, best first;
    its coherence (UMass, NPMI over the daemon's documents) once the daemon
    has computed it, else None."""
    id: int
    alpha: float
    tokens: int
    top_words: Tuple[WordWeight, ...] = ()
    coherence_umass: Optional[float] = None
    coherence_npmi: Optional[float] = None

    @classmethod
    def from_json(cls, msg: Mapping[str, Any]) -> "Topic":
        return cls(id=_int(msg, "id"), alpha=_float(msg, "alpha"),
                   tokens=_int(msg, "tokens"), top_words=_words(msg),
                   coherence_umass=_optional_float(msg, "coherenceUmass"),
                   coherence_npmi=_optional_float(msg, "coherenceNpmi"))


@dataclass(frozen=True)
class TopicList:
    """ListTopics: every topic of one model version, by id."""
    version: ModelVersion
    topics: Tuple[Topic, ...]

    @classmethod
    def from_json(cls, msg: Mapping[str, Any]) -> "TopicList":
        return cls(version=ModelVersion.from_json(msg.get("version")),
                   topics=tuple(Topic.from_json(t)
                                for t in msg.get("topics", ())))

    def __iter__(self) -> Iterator[Topic]:
        return iter(self.topics)

    def __len__(self) -> int:
        return len(self.topics)

    def __getitem__(self, index: int) -> Topic:
        return self.topics[index]

    def to_frame(self) -> Any:
        """A pandas DataFrame with one row per (topic, top word), columns
        topic, alpha, tokens, rank (0 = best), word, probability; a topic
        without words gets no row. Raises ImportError without pandas."""
        pd = _pandas("TopicList.to_frame")
        rows = [(t.id, t.alpha, t.tokens, rank, w.word, w.probability)
                for t in self.topics for rank, w in enumerate(t.top_words)]
        return pd.DataFrame(rows, columns=["topic", "alpha", "tokens", "rank",
                                           "word", "probability"])


@dataclass(frozen=True)
class WordTopics:
    """WordTopics: a word's normalised form, its count n_w and its topics
    p(k | word), by decreasing weight."""
    version: ModelVersion
    word: str
    count: int
    topics: Tuple[TopicWeight, ...]

    @classmethod
    def from_json(cls, msg: Mapping[str, Any]) -> "WordTopics":
        return cls(version=ModelVersion.from_json(msg.get("version")),
                   word=msg.get("word", ""), count=_int(msg, "count"),
                   topics=_topic_weights(msg))


@dataclass(frozen=True)
class Inference:
    """InferDocument: a document's topic mixture θ by fold-in, by decreasing
    weight (all topics or the ones asked for; see Client.infer), and how many
    of its tokens the model knows. ``id`` is the caller's label for the
    document ("" unless given to Client.infer_documents)."""
    version: ModelVersion
    known_tokens: int
    unknown_tokens: int
    topics: Tuple[TopicWeight, ...]
    id: str = ""

    @classmethod
    def from_json(cls, msg: Mapping[str, Any], doc_id: str = "") -> "Inference":
        return cls(version=ModelVersion.from_json(msg.get("version")),
                   known_tokens=_int(msg, "knownTokens"),
                   unknown_tokens=_int(msg, "unknownTokens"),
                   topics=_topic_weights(msg), id=doc_id)

    def theta(self) -> Dict[int, float]:
        """{topic: weight} of the topics returned."""
        return {t.topic: t.weight for t in self.topics}


@dataclass(frozen=True)
class DocumentTopics:
    """Client.infer_documents: one Inference per document, in input order,
    and the model's number of topics K (the width of the dense matrix)."""
    num_topics: int
    documents: Tuple[Inference, ...]

    def __iter__(self) -> Iterator[Inference]:
        return iter(self.documents)

    def __len__(self) -> int:
        return len(self.documents)

    def __getitem__(self, index: int) -> Inference:
        return self.documents[index]

    def matrix(self) -> List[List[float]]:
        """The dense document-topic matrix, one row of K weights per
        document (0.0 for a topic the daemon did not return)."""
        rows = []
        for doc in self.documents:
            row = [0.0] * self.num_topics
            for t in doc.topics:
                if t.topic < self.num_topics:
                    row[t.topic] = t.weight
            rows.append(row)
        return rows

    def to_frame(self) -> Any:
        """A pandas DataFrame of matrix(): index = the documents' ids (their
        positions where no ids were given), named "document"; columns =
        topic ids 0..K-1, named "topic". Raises ImportError without pandas."""
        pd = _pandas("DocumentTopics.to_frame")
        ids = [d.id for d in self.documents]
        index = (ids if any(ids) else list(range(len(self.documents))))
        return pd.DataFrame(self.matrix(),
                            index=pd.Index(index, name="document"),
                            columns=pd.RangeIndex(self.num_topics,
                                                  name="topic"))


@dataclass(frozen=True)
class UserProfile:
    """GetUserProfile: θ of a user's documents (all its events), with each
    topic's top words, and how many tokens and events they hold. In a
    cluster, ``missing_members`` names the members whose part of the user
    could not be read (``partial``): their events are not counted."""
    version: ModelVersion
    user: str
    tokens: int
    events: int
    topics: Tuple[TopicWeight, ...]
    missing_members: Tuple[str, ...] = ()

    @classmethod
    def from_json(cls, msg: Mapping[str, Any]) -> "UserProfile":
        return cls(version=ModelVersion.from_json(msg.get("version")),
                   user=msg.get("user", ""), tokens=_int(msg, "tokens"),
                   events=_int(msg, "events"), topics=_topic_weights(msg),
                   missing_members=_missing(msg))

    @property
    def partial(self) -> bool:
        """Whether a member's part of the user is missing."""
        return bool(self.missing_members)


@dataclass(frozen=True)
class DocumentMixture:
    """GetDocumentTopics: a document of the model (found by its id), its
    mixture θ_dk = (n_dk + α_k) / (n_d + Σα) by decreasing weight (all K
    topics unless fewer were asked for; they sum to 1), its tokens n_d and
    its counts {topic: n_dk} (every non-zero one). ``version`` names the
    model the counts were read at. In a cluster, ``missing_members`` names
    the members that did not answer while the document was looked for on
    them."""
    version: ModelVersion
    document: str
    tokens: int
    topics: Tuple[TopicWeight, ...]
    counts: Dict[int, int]
    missing_members: Tuple[str, ...] = ()

    @classmethod
    def from_json(cls, msg: Mapping[str, Any]) -> "DocumentMixture":
        return cls(version=ModelVersion.from_json(msg.get("version")),
                   document=msg.get("document", ""),
                   tokens=_int(msg, "tokens"), topics=_topic_weights(msg),
                   counts={_int(c, "topic"): _int(c, "count")
                           for c in msg.get("counts", ())},
                   missing_members=_missing(msg))

    def theta(self) -> Dict[int, float]:
        """{topic: weight} of the topics returned."""
        return {t.topic: t.weight for t in self.topics}


@dataclass(frozen=True)
class DocumentWeight:
    """One of TopicDocuments' documents: its id, θ_dk, n_dk and n_d."""
    document: str
    weight: float
    count: int
    tokens: int


@dataclass(frozen=True)
class TopicDocuments:
    """TopicDocuments: the documents with the highest weight θ_dk in a
    topic, best first (in a cluster, of every member's documents);
    ``version`` names the model the counts were read at. A cluster member
    that did not answer is named in ``missing_members`` (``partial``)."""
    version: ModelVersion
    topic: int
    documents: Tuple[DocumentWeight, ...]
    missing_members: Tuple[str, ...] = ()

    @classmethod
    def from_json(cls, msg: Mapping[str, Any]) -> "TopicDocuments":
        return cls(version=ModelVersion.from_json(msg.get("version")),
                   topic=_int(msg, "topic"),
                   documents=tuple(
                       DocumentWeight(d.get("document", ""),
                                      _float(d, "weight"), _int(d, "count"),
                                      _int(d, "tokens"))
                       for d in msg.get("documents", ())),
                   missing_members=_missing(msg))

    @property
    def partial(self) -> bool:
        """Some cluster member did not answer: its documents are missing."""
        return bool(self.missing_members)

    def ids(self) -> List[str]:
        """The documents' ids, best first."""
        return [d.document for d in self.documents]


@dataclass(frozen=True)
class Neighbor:
    """One of SimilarDocuments' or SimilarUsers' answers: a document id or
    user id, its Hellinger distance to the query's topic mixture (in [0,
    1]), and the model view its mixture was computed at."""
    id: str
    distance: float
    view: int


@dataclass(frozen=True)
class Similar:
    """SimilarDocuments or SimilarUsers: the nearest first, and how stale
    they can be: ``oldest_view`` (the oldest mixture among them),
    ``index_oldest_view`` and ``index_newest_view`` (over the whole index),
    ``current`` (the model published now), whether a full scan answered
    (``exact``), and the items ``indexed``. In a cluster the neighbours are
    of every member's items; one that did not answer is named in
    ``missing_members`` (``partial``)."""
    neighbors: Tuple[Neighbor, ...]
    oldest_view: int
    index_oldest_view: int
    index_newest_view: int
    current: ModelVersion
    exact: bool
    indexed: int
    missing_members: Tuple[str, ...] = ()

    @classmethod
    def from_json(cls, msg: Mapping[str, Any]) -> "Similar":
        s = msg.get("staleness") or {}
        return cls(
            neighbors=tuple(Neighbor(n.get("id", ""), _float(n, "distance"),
                                     _int(n, "view"))
                            for n in msg.get("neighbors", ())),
            oldest_view=_int(s, "oldestView"),
            index_oldest_view=_int(s, "indexOldestView"),
            index_newest_view=_int(s, "indexNewestView"),
            current=ModelVersion.from_json(s.get("current")),
            exact=bool(s.get("exact", False)), indexed=_int(s, "indexed"),
            missing_members=_missing(msg))

    @property
    def partial(self) -> bool:
        """Some cluster member did not answer: its items are missing."""
        return bool(self.missing_members)

    def ids(self) -> List[str]:
        """The neighbours' ids, nearest first."""
        return [n.id for n in self.neighbors]


@dataclass(frozen=True)
class Document:
    """A document or user event to ingest. With ``user`` its tokens join
    that user's one growing document; ``source`` is an optional idempotency
    key (a source already ingested is dropped, not counted as accepted)."""
    text: str
    id: str = ""
    user: str = ""
    source: str = ""

    def to_json(self) -> Dict[str, str]:
        out = {"text": self.text}
        for name in ("id", "user", "source"):
            value = getattr(self, name)
            if value:
                out[name] = value
        return out


@dataclass(frozen=True)
class IngestResult:
    """Ingest: documents accepted (durable in the node's ingest log; they
    join the model at its next sweep boundary) and their log sequences."""
    accepted: int
    first_sequence: int
    last_sequence: int

    @classmethod
    def from_json(cls, msg: Mapping[str, Any]) -> "IngestResult":
        return cls(accepted=_int(msg, "accepted"),
                   first_sequence=_int(msg, "firstSequence"),
                   last_sequence=_int(msg, "lastSequence"))


@dataclass(frozen=True)
class LogLikelihoodPart:
    """A cluster node's part of the cluster's joint log p(w, z) at its latest
    evaluated sweep: summed over the ring's members, (doc_log_likelihood +
    owned_word_log_likelihood) / tokens is the cluster's log-likelihood per
    token, comparable with a single node's (`latentctl cluster status`)."""
    sweep: int
    tokens: int
    doc_log_likelihood: float
    owned_word_log_likelihood: float

    @classmethod
    def from_json(cls, msg: Optional[Mapping[str, Any]]
                  ) -> Optional["LogLikelihoodPart"]:
        if msg is None:
            return None
        return cls(sweep=_int(msg, "sweep"), tokens=_int(msg, "tokens"),
                   doc_log_likelihood=_float(msg, "docLogLikelihood"),
                   owned_word_log_likelihood=_float(
                       msg, "ownedWordLogLikelihood"))


@dataclass(frozen=True)
class Status:
    """Status: the node's model, training and ingestion figures; in cluster
    mode its id, the ring's members, the peers found unreachable and its
    part of the cluster's log-likelihood (log_likelihood_per_token is then
    this node's own figure, not comparable with a single node's)."""
    version: ModelVersion
    topics: int
    documents: int
    tokens: int
    vocabulary: int
    tokens_per_second: float
    log_likelihood_per_token: float
    users: int
    ingested: int
    pending: int
    merged_sequence: int
    checkpoint_sweep: int
    training: bool
    uptime_seconds: float
    node_id: str = ""
    cluster_members: Tuple[str, ...] = field(default=())
    unavailable_peers: Tuple[str, ...] = field(default=())
    # The means of the topics' coherence (None until computed) and the model
    # sweep it was computed at.
    mean_coherence_umass: Optional[float] = None
    mean_coherence_npmi: Optional[float] = None
    coherence_sweep: int = 0
    # Cluster mode, once the node evaluated a sweep; else None.
    log_likelihood_part: Optional[LogLikelihoodPart] = None

    @classmethod
    def from_json(cls, msg: Mapping[str, Any]) -> "Status":
        return cls(
            version=ModelVersion.from_json(msg.get("version")),
            topics=_int(msg, "topics"),
            documents=_int(msg, "documents"),
            tokens=_int(msg, "tokens"),
            vocabulary=_int(msg, "vocabulary"),
            tokens_per_second=_float(msg, "tokensPerSecond"),
            log_likelihood_per_token=_float(msg, "logLikelihoodPerToken"),
            users=_int(msg, "users"),
            ingested=_int(msg, "ingested"),
            pending=_int(msg, "pending"),
            merged_sequence=_int(msg, "mergedSequence"),
            checkpoint_sweep=_int(msg, "checkpointSweep"),
            training=bool(msg.get("training", False)),
            uptime_seconds=_float(msg, "uptimeSeconds"),
            node_id=msg.get("nodeId", ""),
            cluster_members=tuple(msg.get("clusterMembers", ())),
            unavailable_peers=tuple(msg.get("unavailablePeers", ())),
            mean_coherence_umass=_optional_float(msg, "meanCoherenceUmass"),
            mean_coherence_npmi=_optional_float(msg, "meanCoherenceNpmi"),
            coherence_sweep=_int(msg, "coherenceSweep"),
            log_likelihood_part=LogLikelihoodPart.from_json(
                msg.get("logLikelihoodPart")),
        )


@dataclass(frozen=True)
class Checkpoint:
    """Checkpoint: the sweep of the checkpoint written and its path (on the
    daemon's machine)."""
    sweep: int
    path: str

    @classmethod
    def from_json(cls, msg: Mapping[str, Any]) -> "Checkpoint":
        return cls(sweep=_int(msg, "sweep"), path=msg.get("path", ""))


__all__ = [
    "Checkpoint", "Document", "DocumentTopics", "Inference", "IngestResult",
    "ModelVersion", "Status", "Topic", "TopicList", "TopicWeight",
    "UserProfile", "WordTopics", "WordWeight",
]
