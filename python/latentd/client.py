"""A client of one latentd daemon over its HTTP/JSON API.

The daemon serves every call of service/api.proto as ``POST /v1/<Call>`` with
the message in protobuf's JSON mapping (service/http_gateway.cc); this client
sends those requests with urllib and turns the answers into the dataclasses
of latentd.messages, and error answers into latentd.errors exceptions.

    import latentd
    client = latentd.Client("127.0.0.1:7070")          # the daemon's --http
    for topic in client.list_topics(top_words=5):
        print(topic.id, [w.word for w in topic.top_words])
    theta = client.infer("oil prices rose again").theta()

Authentication: the bearer token is the ``token`` argument, else the
environment variable LATENTD_TOKEN (as latentctl); none is sent when both
are empty.

TLS (a daemon with --tls-cert): an ``https://HOST:PORT`` address, or
``ca_file=`` (which makes a bare HOST:PORT https). The daemon's certificate
is verified against ``ca_file`` (PEM), else the system's CAs, and must name
the host or IP address dialled; a certificate that does not verify raises
InvalidArgumentError (code FAILED_PRECONDITION) saying so, as does a plain
http:// address at a daemon that serves only HTTPS. Timeouts: ``timeout`` seconds (default 30) bound connecting and
each wait for the daemon's bytes, per call; a call may pass its own.

Thread-safety: a Client holds no connection and no mutable state after
construction (each call opens its own HTTP connection), so one Client may be
used from any number of threads at once.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
from typing import (Any, Dict, Iterable, List, Mapping, Optional, Sequence,
                    Tuple, Union)

from latentd.errors import (LatentdError, code_for_http_status, error_for)
from latentd.messages import (Checkpoint, Document, DocumentMixture,
                              DocumentTopics, Inference, IngestResult,
                              Similar, Status, Topic, TopicDocuments,
                              TopicList, UserProfile, WordTopics, _float)
from latentd.model_export import Model, fetch_model

DEFAULT_TIMEOUT_SECONDS = 30.0
# latentd's default --http.
DEFAULT_ADDRESS = "127.0.0.1:7070"

# api.proto's uint32 `top` maximum: "every topic" for InferDocument.
_ALL_TOPICS = 2**32 - 1

DocumentLike = Union[str, Document, Mapping[str, str]]


def _base_url(address: str, tls: bool = False) -> str:
    """http://HOST:PORT (https:// with `tls`) for "HOST:PORT"; a URL (http
    or https) as given, without a trailing slash."""
    scheme = "https" if tls else "http"
    url = address if "://" in address else f"{scheme}://{address}"
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not a latentd HTTP address: {address!r} (want "
                         "HOST:PORT, the daemon's --http, or an http(s) URL)")
    try:
        _ = parts.port  # raises ValueError on a port that is not a number
    except ValueError as e:
        raise ValueError(f"bad port in latentd address {address!r}") from e
    return url.rstrip("/")


class Client:
    """Calls one latentd daemon; see the module docstring.

    Every method raises a latentd.LatentdError subclass on failure: the
    daemon's own code and message for an error answer, UnavailableError when
    it cannot be reached, DeadlineExceededError on a timeout.
    """

    def __init__(self, address: str = DEFAULT_ADDRESS,
                 token: Optional[str] = None,
                 timeout: float = DEFAULT_TIMEOUT_SECONDS,
                 ca_file: Optional[str] = None) -> None:
        """`address`: the daemon's HTTP address (HOST:PORT or a URL;
        default latentd's default --http, 127.0.0.1:7070).
        `token`: the bearer token; None takes $LATENTD_TOKEN. `timeout`:
        seconds, > 0. `ca_file`: TLS, verifying the daemon's certificate
        against this CA file (PEM); an https:// address without it verifies
        against the system's CAs. Raises ValueError for a malformed
        address, a token holding white space, a timeout that is not
        positive, or ca_file with an http:// address; OSError or
        ssl.SSLError for a CA file that cannot be loaded."""
        self._url = _base_url(address, tls=ca_file is not None)
        self._ca_file = ca_file
        self._ssl: Optional[ssl.SSLContext] = None
        if self._url.startswith("https://"):
            # Verifies the chain and the host name or IP (the defaults).
            self._ssl = ssl.create_default_context(cafile=ca_file)
        elif ca_file is not None:
            raise ValueError(f"ca_file is for TLS, but {address!r} is an "
                             "http:// address")
        if token is None:
            token = os.environ.get("LATENTD_TOKEN", "")
        if token and any(c.isspace() for c in token):
            raise ValueError("a latentd token holds no white space")
        self._token = token
        if not timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
        self._timeout = float(timeout)

    @classmethod
    def from_data_dir(cls, data_dir: str, **kwargs: Any) -> "Client":
        """A client of the daemon running on this machine with --data-dir
        `data_dir`, at the HTTP address it wrote to DIR/ports (so --http
        with port 0 works). Raises OSError if the file cannot be read,
        ValueError if it names no HTTP address."""
        path = os.path.join(data_dir, "ports")
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("http="):
                    return cls(line[len("http="):].strip(), **kwargs)
        raise ValueError(f"{path} names no HTTP address: start latentd "
                         "with --http HOST:PORT")

    @property
    def url(self) -> str:
        """The daemon's base URL, e.g. http://127.0.0.1:7070."""
        return self._url

    def __repr__(self) -> str:
        # Never the token.
        return (f"latentd.Client({self._url!r}, "
                f"token={'set' if self._token else 'none'}, "
                f"timeout={self._timeout})")

    # The API calls, one method each (service/api.proto).

    def status(self) -> Status:
        """The node's status (Status call; read role)."""
        return Status.from_json(self.call("Status"))

    def list_topics(self, top_words: int = 10) -> TopicList:
        """Every topic with its `top_words` (at most 50) best words (ListTopics;
        read role). TopicList.to_frame() gives a DataFrame."""
        return TopicList.from_json(
            self.call("ListTopics", {"topWords": top_words}))

    def topic(self, topic: int, top_words: int = 10) -> Topic:
        """One topic (GetTopic; read role). NotFoundError for a topic >= K."""
        msg = self.call("GetTopic", {"topic": topic, "topWords": top_words})
        return Topic.from_json(msg.get("topic", {}))

    def word_topics(self, word: str, top: int = 10) -> WordTopics:
        """A word's topics p(k | word), best first (WordTopics; read role).
        The word is normalised like training text; NotFoundError if the
        model does not hold it."""
        return WordTopics.from_json(
            self.call("WordTopics", {"word": word, "top": top}))

    def infer(self, text: str, *, top: Optional[int] = None, seed: int = 0,
              iterations: int = 0, burn_in: int = 0,
              doc_id: str = "") -> Inference:
        """The topic mixture θ of `text` by fold-in against the current
        model (InferDocument; read role). `top`: None = every topic (θ sums
        to 1), n = the n heaviest, 0 = those over 1/(2K) (the daemon's
        default). `seed`, `iterations`, `burn_in`: 0 = the
        daemon's defaults; the same text, seed and model view give the same
        θ. `doc_id` only labels the answer. InvalidArgumentError for an
        empty text or one without a word the model knows."""
        request = {"text": text, "top": _ALL_TOPICS if top is None else top}
        for name, value in (("seed", seed), ("iterations", iterations),
                            ("burnIn", burn_in)):
            if value:
                request[name] = value
        return Inference.from_json(self.call("InferDocument", request),
                                   doc_id)

    def infer_documents(self, documents: Union[Sequence[str],
                                               Mapping[str, str]],
                        **kwargs: Any) -> DocumentTopics:
        """infer() for each document, in order: a list of texts, or a
        mapping {id: text} whose ids label the answers (and index the
        DataFrame of DocumentTopics.to_frame()). Takes infer()'s keyword
        arguments. One call per document; the first failure raises, its
        message naming the document (position and id)."""
        if isinstance(documents, str):
            raise TypeError("infer_documents takes a list of texts or a "
                            "mapping {id: text}; infer() takes one text")
        if isinstance(documents, Mapping):
            items: Iterable[Tuple[str, str]] = documents.items()
        else:
            items = (("", text) for text in documents)
        num_topics = self.status().topics
        answers = []
        for i, (doc_id, text) in enumerate(items):
            try:
                answers.append(self.infer(text, doc_id=doc_id, **kwargs))
            except LatentdError as e:
                which = f"document {i}" + (f" ({doc_id!r})" if doc_id else "")
                raise error_for(e.code, f"{which}: {e.message}",
                                http_status=e.http_status,
                                method=e.method) from e
        return DocumentTopics(num_topics=num_topics, documents=tuple(answers))

    def ingest(self, documents: Iterable[DocumentLike], *,
               user: str = "") -> IngestResult:
        """Ingests documents (Ingest; write role): texts, Documents, or
        mappings with Document's fields. A text becomes a document of
        `user` when given (a user event), else a document of its own.
        Returns once all are durable on the node; they join the model at
        its next sweep boundary (Status.pending counts those waiting). On
        an error none was accepted (in cluster mode users' events already
        forwarded to their owners may have been: retry with Document.source
        set, which makes the retry idempotent)."""
        if isinstance(documents, (str, Document)):
            raise TypeError("ingest takes a list of documents, not one")
        docs = []
        for d in documents:
            if isinstance(d, str):
                d = Document(text=d, user=user)
            elif isinstance(d, Mapping):
                d = Document(**d)
            docs.append(d.to_json())
        return IngestResult.from_json(self.call("Ingest", {"documents": docs}))

    def user_profile(self, user: str, top: int = 5,
                     top_words: int = 5) -> UserProfile:
        """A user's profile, θ of all its events, with `top` topics and
        `top_words` words each (GetUserProfile; read role). NotFoundError
        for a user the model does not hold yet (events not merged)."""
        return UserProfile.from_json(self.call(
            "GetUserProfile", {"user": user, "top": top,
                               "topWords": top_words}))

    def document_topics(self, document: str, top: int = 0,
                        top_words: int = 0) -> DocumentMixture:
        """The topic mixture and counts of the model's document `document`
        (a training document's corpus id, or an ingested document's id),
        its `top` topics (0: all K) with `top_words` words each
        (GetDocumentTopics; read role). NotFoundError naming the document
        if this node's model lacks it (unknown, a user's events, or not
        merged yet); InvalidArgumentError for an empty id."""
        return DocumentMixture.from_json(self.call(
            "GetDocumentTopics", {"document": document, "top": top,
                                  "topWords": top_words}))

    def topic_documents(self, topic: int, top: int = 10) -> TopicDocuments:
        """The `top` documents (1..1000) with the highest weight θ_dk in
        `topic` (TopicDocuments; read role). NotFoundError for a topic the
        model lacks."""
        return TopicDocuments.from_json(self.call(
            "TopicDocuments", {"topic": topic, "top": top}))

    def similar_documents(self, document: str = "", *, text: str = "",
                          top: int = 10, seed: int = 0) -> Similar:
        """The `top` documents nearest (by Hellinger distance between topic
        mixtures) the model's document `document` (a training document's
        corpus id or an ingested document's id), itself left out, or a new
        `text` (inferred first; `seed` as infer's) (SimilarDocuments; read
        role). Exactly one of the two. NotFoundError for a document not in
        the index; InvalidArgumentError for top outside 1..1000, both or
        neither of document and text, or a text without a known word."""
        request: Dict[str, Any] = {"top": top}
        if document:
            request["document"] = document
        if text:
            request["text"] = text
        if seed:
            request["seed"] = seed
        return Similar.from_json(self.call("SimilarDocuments", request))

    def similar_users(self, user: str, top: int = 10) -> Similar:
        """The `top` users nearest `user` by Hellinger distance between
        their profiles' topic mixtures (SimilarUsers; read role).
        NotFoundError for a user not in the index."""
        return Similar.from_json(self.call("SimilarUsers",
                                           {"user": user, "top": top}))

    def checkpoint(self) -> Checkpoint:
        """Writes a checkpoint now (Checkpoint; admin role)."""
        return Checkpoint.from_json(self.call("Checkpoint"))

    def export_model(self, *, page_words: int = 10000,
                     attempts: int = 3) -> Model:
        """The whole model, counts n_wk of every word with α, β and n_k,
        fetched `page_words` words per ExportModel call (read role) and
        checked (latentd.model_export). Starts over when the model moves
        between pages, at most `attempts` times, then raises ABORTED:
        export once the node has stopped sampling (--max-sweeps). Model
        gives φ (topic_word(), to_frame()), the term frequencies and the
        vocabulary."""
        return fetch_model(self.call, page_words, attempts)

    # The graph model (a daemon started with --graph-edges; docs/api.md
    # "Graph calls"). Vertex ids are the edge list's integer ids. A
    # vertex the graph lacks raises NotFoundError naming it; a daemon that
    # serves no graph InvalidArgumentError (code FAILED_PRECONDITION).

    def embedding(self, vertex: int) -> List[float]:
        """z_vertex, the vertex's d values (GetEmbedding; read role)."""
        msg = self.call("GetEmbedding", {"vertex": str(vertex)})
        return [float(x) for x in msg.get("vector", ())]

    def score_pairs(self, pairs: Iterable[Tuple[int, int]], *,
                    skip_unknown: bool = False) -> List[Optional[float]]:
        """<z_a, z_b> for each (a, b), in order (ScorePairs; read role).
        With skip_unknown a pair with an unknown vertex gives None and the
        rest are scored; without, it raises NotFoundError naming it."""
        request = {"pairs": [{"a": str(a), "b": str(b)} for a, b in pairs],
                   "skipUnknown": skip_unknown}
        msg = self.call("ScorePairs", request)
        return [None if s.get("error") else _float(s, "score")
                for s in msg.get("scores", ())]

    def nearest_vertices(self, vertex: int,
                         top: int = 10) -> List[Tuple[int, float]]:
        """The `top` vertices u with the highest <z_vertex, z_u>, best
        first, as (id, score) (NearestVertices; read role)."""
        msg = self.call("NearestVertices", {"vertex": str(vertex), "top": top})
        return [(int(n.get("vertex", 0)), _float(n, "score"))
                for n in msg.get("neighbors", ())]

    def ingest_edges(self, edges: Iterable[Sequence[float]]) -> Dict[str, int]:
        """Adds edges (src, dst) or (src, dst, weight) to the graph
        (IngestEdges; write role); returns once they are durable, with
        {"accepted", "duplicates", "pending"}. They are trained on from
        the daemon's next epoch. All or nothing: a self-loop or a bad
        weight raises InvalidArgumentError and none is added."""
        request = []
        for e in edges:
            edge = {"src": str(int(e[0])), "dst": str(int(e[1]))}
            if len(e) > 2:
                edge["weight"] = float(e[2])
            request.append(edge)
        msg = self.call("IngestEdges", {"edges": request})
        return {k: int(msg.get(k, 0))
                for k in ("accepted", "duplicates", "pending")}

    # The transport.

    def call(self, method: str, request: Optional[Mapping[str, Any]] = None,
             *, timeout: Optional[float] = None) -> Dict[str, Any]:
        """POSTs `request` (a dict in protobuf's JSON mapping; None = {}) to
        /v1/`method` and returns the decoded JSON answer: the way to reach
        a call or field this client does not wrap. Raises as the other
        methods do."""
        body = json.dumps(request or {}).encode("utf-8")
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        url = f"{self._url}/v1/{urllib.parse.quote(method)}"
        req = urllib.request.Request(url, data=body, headers=headers,
                                     method="POST")
        seconds = self._timeout if timeout is None else timeout
        try:
            with urllib.request.urlopen(req, timeout=seconds,
                                        context=self._ssl) as resp:
                answer = resp.read()
        except urllib.error.HTTPError as e:
            raise self._error_answer(method, e) from None
        except urllib.error.URLError as e:
            raise self._transport_error(method, e.reason, seconds) from e
        except (OSError, http.client.HTTPException) as e:
            raise self._transport_error(method, e, seconds) from e
        try:
            decoded = json.loads(answer.decode("utf-8"))
        except ValueError as e:
            raise LatentdError("UNKNOWN", f"the answer from {url} is not "
                               f"JSON: {answer[:200]!r}", http_status=200,
                               method=method) from e
        if not isinstance(decoded, dict):
            raise LatentdError("UNKNOWN", f"the answer from {url} is not a "
                               f"JSON object: {answer[:200]!r}",
                               http_status=200, method=method)
        return decoded

    def _error_answer(self, method: str,
                      e: urllib.error.HTTPError) -> LatentdError:
        """The exception for an error answer: its api.Error body's code and
        message, else a code from the HTTP status and the body's start."""
        try:
            raw = e.read()
        except (OSError, http.client.HTTPException):
            raw = b""
        finally:
            e.close()
        try:
            body = json.loads(raw.decode("utf-8"))
            if isinstance(body, dict) and isinstance(body.get("code"), str):
                return error_for(body["code"], str(body.get("message", "")),
                                 http_status=e.code, method=method)
        except ValueError:
            pass
        text = raw[:200].decode("utf-8", "replace").strip()
        if e.code == 400 and text.startswith("This port serves HTTPS"):
            return error_for("FAILED_PRECONDITION",
                             f"{self._url} serves HTTPS only: use an "
                             "https:// address or ca_file=",
                             http_status=e.code, method=method)
        return error_for(code_for_http_status(e.code),
                         f"HTTP {e.code} {e.reason} from {self._url}"
                         + (f": {text}" if text else ""),
                         http_status=e.code, method=method)

    def _transport_error(self, method: str, reason: Any,
                         seconds: float) -> LatentdError:
        """The exception for a call without an HTTP answer."""
        if isinstance(reason, ssl.SSLCertVerificationError):
            against = (f"the CA in {self._ca_file}" if self._ca_file
                       else "the system's CAs")
            return error_for("FAILED_PRECONDITION",
                             f"the certificate of {self._url} does not "
                             f"verify against {against}: "
                             f"{reason.verify_message}", method=method)
        if isinstance(reason, (socket.timeout, TimeoutError)):
            return error_for("DEADLINE_EXCEEDED",
                             f"no answer from {self._url} within {seconds} s",
                             method=method)
        return error_for("UNAVAILABLE",
                         f"cannot reach latentd at {self._url}: {reason}",
                         method=method)
