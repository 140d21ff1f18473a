"""The Python client (python/latentd) against a real latentd.

Starts one latentd (env LATENTD_BIN) on 127.0.0.1 with ports the kernel
picks (read back from DATA_DIR/ports, so no two tests can collide), with a
tokens file (read, write, admin) and a corpus written here: 120 documents
on three themes, 3 topics, 20 sweeps, after which sampling stops and the
model only moves by merged ingests. Every client call is exercised, with
its errors (unknown topic, word and user, empty document, bad and missing
token, a role too low, an unreachable daemon, a timeout, a non-JSON
answer); TLS (ca_file=, https://, a wrong CA, plain http at an HTTPS
port) against a second daemon with a test CA; export_model's paging, restarts and checks also against a fake
daemon serving a moving or damaged model; the pandas DataFrames when
pandas is installed (else that test is skipped, saying so).

Usage: LATENTD_BIN=build/cli/latentd PYTHONPATH=python \
           python3 tests/python/latentd_client_test.py
"""

import dataclasses
import http.server
import importlib.util
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from unittest import mock

import latentd
from latentd_process import LatentdProcess

TOPICS = 3
SWEEPS = 20
GRAPH_VERTICES = 40
GRAPH_DIM = 8
THEMES = [
    "oil prices opec crude barrel energy oil market",
    "football match goal team player season goal goal",
    "court judge trial jury lawyer verdict appeal",
]
DOCUMENTS = 120
CORPUS = [THEMES[d % 3] for d in range(DOCUMENTS)]
CORPUS_TOKENS = sum(len(line.split()) for line in CORPUS)
VOCABULARY = sorted({w for line in THEMES for w in line.split()})
READ = "read-token-0123456789abcdef"
WRITE = "write-token-0123456789abcdef"
ADMIN = "admin-token-0123456789abcdef"

_daemon = None  # the module's Daemon


def corpus_args(extra_args=()):
    """What the module's daemons read, written into their directory."""
    def make(d):
        corpus = os.path.join(d, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            f.write("\n".join(CORPUS) + "\n")
        edges = os.path.join(d, "edges.txt")
        with open(edges, "w", encoding="utf-8") as f:
            for i in range(GRAPH_VERTICES):  # a ring with chords
                f.write(f"{i} {(i + 1) % GRAPH_VERTICES}\n"
                        f"{i} {(i + 7) % GRAPH_VERTICES}\n")
        tokens = os.path.join(d, "tokens")
        with open(tokens, "w", encoding="utf-8") as f:
            f.write(f"read {READ}\nwrite {WRITE}\nadmin {ADMIN}\n")
        return ["--corpus", corpus, "--topics", str(TOPICS), "--max-sweeps",
                str(SWEEPS), "--api-tokens", tokens, "--graph-edges", edges,
                "--graph-dim", str(GRAPH_DIM), "--graph-max-epochs", "3",
                *extra_args]
    return make


def Daemon(binary, extra_args=()):
    return LatentdProcess(binary, "latentd_client_test",
                          corpus_args(extra_args))


def setUpModule():
    global _daemon
    binary = os.environ.get("LATENTD_BIN")
    if not binary:
        raise RuntimeError("set LATENTD_BIN to the latentd binary")
    # The daemon is on loopback: no proxy may stand between.
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        os.environ.pop(name, None)
    os.environ.pop("LATENTD_TOKEN", None)
    _daemon = Daemon(binary)
    client = latentd.Client(_daemon.address, token=READ)
    deadline = time.monotonic() + 60
    while client.status().training:
        if time.monotonic() > deadline:
            raise RuntimeError(f"still training:\n{_daemon.log_tail()}")
        time.sleep(0.1)


def tearDownModule():
    if _daemon is not None:
        _daemon.stop()


def client(token=READ, **kwargs):
    return latentd.Client(_daemon.address, token=token, **kwargs)


def wait_merged(c):
    """Waits until nothing ingested is pending; returns that Status."""
    deadline = time.monotonic() + 30
    while True:
        status = c.status()
        if status.pending == 0:
            return status
        if time.monotonic() > deadline:
            raise AssertionError(f"ingest not merged: {status}")
        time.sleep(0.05)


class ModelQueries(unittest.TestCase):
    """Status, ListTopics, GetTopic, WordTopics on the trained model."""

    def test_status(self):
        s = client().status()
        self.assertIsInstance(s, latentd.Status)
        self.assertEqual(s.topics, TOPICS)
        self.assertEqual(s.version.sweep, SWEEPS)
        self.assertFalse(s.training)
        self.assertEqual(s.vocabulary, len(VOCABULARY))
        # Ingests in other tests add documents of users, never words.
        self.assertGreaterEqual(s.documents, DOCUMENTS)
        self.assertEqual(s.documents - s.users, DOCUMENTS)
        self.assertGreaterEqual(s.tokens, CORPUS_TOKENS)
        self.assertTrue(math.isfinite(s.log_likelihood_per_token))
        self.assertLess(s.log_likelihood_per_token, 0)
        self.assertGreater(s.uptime_seconds, 0)
        self.assertEqual(s.cluster_members, ())
        self.assertIsNone(s.log_likelihood_part)

    def test_list_topics(self):
        c = client()
        status = c.status()
        topics = c.list_topics(top_words=3)
        self.assertIsInstance(topics, latentd.TopicList)
        self.assertEqual(topics.version, status.version)
        self.assertEqual([t.id for t in topics], list(range(TOPICS)))
        self.assertEqual(sum(t.tokens for t in topics), status.tokens)
        for t in topics:
            self.assertGreater(t.alpha, 0)
            self.assertEqual(len(t.top_words), 3)
            probabilities = [w.probability for w in t.top_words]
            self.assertEqual(probabilities, sorted(probabilities, reverse=True))
            for w in t.top_words:
                self.assertIn(w.word, VOCABULARY)
                self.assertTrue(0 < w.probability < 1)
        # The default is 10 words (fewer when the topic holds fewer, as a
        # topic that separates one of the three themes' 6-7 words does).
        default = c.list_topics()[0].top_words
        self.assertEqual(default, c.list_topics(top_words=10)[0].top_words)
        self.assertEqual(len(default),
                         min(10, len(c.list_topics(top_words=50)[0].top_words)))

    def test_coherence(self):
        # The daemon scores coherence once more when sampling stops; wait for
        # that score, then the topics' values must average to the means.
        c = client()
        deadline = time.monotonic() + 30
        status = c.status()
        while status.coherence_sweep < SWEEPS:
            if time.monotonic() > deadline:
                raise AssertionError(f"no coherence at sweep {SWEEPS}: {status}")
            time.sleep(0.05)
            status = c.status()
        topics = c.list_topics(top_words=2)
        umass = [t.coherence_umass for t in topics]
        npmi = [t.coherence_npmi for t in topics]
        self.assertNotIn(None, umass)
        self.assertNotIn(None, npmi)
        for u, n in zip(umass, npmi):
            # log((D(a,b)+1)/D(b)) is at most log 2 (when D(a,b) = D(b)).
            self.assertLessEqual(u, math.log(2) + 1e-9)
            self.assertTrue(-1.0 <= n <= 1.0, n)
        self.assertAlmostEqual(status.mean_coherence_umass,
                               sum(umass) / len(umass), places=9)
        self.assertAlmostEqual(status.mean_coherence_npmi,
                               sum(npmi) / len(npmi), places=9)

    def test_topic(self):
        c = client()
        topics = c.list_topics(top_words=4)
        for k in range(TOPICS):
            self.assertEqual(c.topic(k, top_words=4), topics[k])

    def test_unknown_topic(self):
        with self.assertRaises(latentd.NotFoundError) as e:
            client().topic(TOPICS)
        self.assertEqual(e.exception.code, "NOT_FOUND")
        self.assertEqual(e.exception.http_status, 404)
        self.assertEqual(e.exception.method, "GetTopic")
        self.assertIn(f"topic {TOPICS} does not exist", e.exception.message)
        self.assertFalse(e.exception.retryable)
        self.assertIsInstance(e.exception, LookupError)

    def test_top_words_over_the_limit(self):
        with self.assertRaises(latentd.InvalidArgumentError) as e:
            client().list_topics(top_words=51)
        self.assertEqual(e.exception.code, "INVALID_ARGUMENT")
        self.assertEqual(e.exception.http_status, 400)
        self.assertIn("over the limit of 50", e.exception.message)

    def test_word_topics(self):
        w = client().word_topics("GOAL", top=TOPICS)
        self.assertEqual(w.word, "goal")
        self.assertEqual(w.count, CORPUS.count(THEMES[1]) * 3)
        self.assertEqual(len(w.topics), TOPICS)
        self.assertAlmostEqual(sum(t.weight for t in w.topics), 1.0, places=9)
        weights = [t.weight for t in w.topics]
        self.assertEqual(weights, sorted(weights, reverse=True))
        with self.assertRaises(latentd.NotFoundError) as e:
            client().word_topics("zebra")
        self.assertIn("zebra", e.exception.message)


class Inference(unittest.TestCase):
    """InferDocument, one document and many."""

    def test_infer(self):
        c = client()
        inf = c.infer("Oil prices zebra unicorn", seed=7)
        self.assertIsInstance(inf, latentd.Inference)
        self.assertEqual(inf.known_tokens, 2)  # oil, prices
        self.assertEqual(inf.unknown_tokens, 2)  # zebra, unicorn
        self.assertEqual(len(inf.topics), TOPICS)  # every topic by default
        self.assertAlmostEqual(sum(inf.theta().values()), 1.0, places=9)
        self.assertEqual(set(inf.theta()), set(range(TOPICS)))
        weights = [t.weight for t in inf.topics]
        self.assertEqual(weights, sorted(weights, reverse=True))
        # Deterministic for one text, seed and model view.
        self.assertEqual(c.infer("Oil prices zebra unicorn", seed=7).theta(),
                         inf.theta())
        best = c.infer("Oil prices zebra unicorn", seed=7, top=1)
        self.assertEqual(best.topics, inf.topics[:1])
        self.assertEqual(
            c.infer("judge jury", iterations=5, burn_in=1).known_tokens, 2)

    def test_empty_document(self):
        for text in ("", "  ... !? "):
            with self.assertRaises(latentd.InvalidArgumentError) as e:
                client().infer(text)
            self.assertEqual(e.exception.code, "INVALID_ARGUMENT")
            self.assertEqual(e.exception.method, "InferDocument")
            self.assertIn("empty document", e.exception.message)

    def test_no_known_word(self):
        with self.assertRaises(latentd.InvalidArgumentError) as e:
            client().infer("zebra unicorn")
        self.assertIn("none of the document's 2 words is in the model",
                      e.exception.message)

    def test_bad_iterations(self):
        with self.assertRaises(latentd.InvalidArgumentError) as e:
            client().infer("oil", iterations=5, burn_in=5)
        self.assertIn("burn_in", e.exception.message)

    def test_infer_documents(self):
        c = client()
        docs = {"a": "oil opec crude", "b": "jury verdict", "c": "goal team"}
        result = c.infer_documents(docs, seed=3)
        self.assertIsInstance(result, latentd.DocumentTopics)
        self.assertEqual(result.num_topics, TOPICS)
        self.assertEqual([d.id for d in result], ["a", "b", "c"])
        for doc_id, row in zip(docs, result.matrix()):
            self.assertEqual(len(row), TOPICS)
            self.assertAlmostEqual(sum(row), 1.0, places=9)
            self.assertEqual(
                row, [c.infer(docs[doc_id], seed=3).theta()[k]
                      for k in range(TOPICS)])
        plain = c.infer_documents(["oil", "goal"])
        self.assertEqual([d.id for d in plain], ["", ""])
        self.assertEqual(len(plain), 2)

    def test_infer_documents_names_the_bad_one(self):
        with self.assertRaises(latentd.InvalidArgumentError) as e:
            client().infer_documents({"a": "oil", "b": ""})
        self.assertIn("document 1 ('b'): empty document", e.exception.message)
        with self.assertRaises(TypeError):
            client().infer_documents("oil prices")


class IngestAndProfiles(unittest.TestCase):
    """Ingest (write role), GetUserProfile, Checkpoint (admin role)."""

    def test_ingest_and_profile(self):
        c = client(WRITE)
        before = c.status()
        r = c.ingest(["oil prices opec", "oil crude"], user="ann")
        self.assertIsInstance(r, latentd.IngestResult)
        self.assertEqual(r.accepted, 2)
        self.assertEqual(r.last_sequence, r.first_sequence + 1)
        # Documents and mappings too; a source makes a retry a no-op.
        event = latentd.Document(text="barrel energy", user="ann",
                                 source="test:ann-1")
        self.assertEqual(c.ingest([event]).accepted, 1)
        self.assertEqual(c.ingest([event]).accepted, 0)
        self.assertEqual(c.ingest([{"text": "oil market", "user": "ann"}])
                         .accepted, 1)
        after = wait_merged(c)
        self.assertEqual(after.ingested, before.ingested + 4)
        self.assertEqual(after.tokens, before.tokens + 9)
        profile = c.user_profile("ann", top=TOPICS, top_words=2)
        self.assertIsInstance(profile, latentd.UserProfile)
        self.assertEqual(profile.user, "ann")
        self.assertEqual(profile.events, 4)
        self.assertEqual(profile.tokens, 9)
        self.assertEqual(profile.version, after.version)
        self.assertEqual(profile.missing_members, ())  # one node: complete
        self.assertFalse(profile.partial)
        self.assertEqual(len(profile.topics), TOPICS)
        self.assertAlmostEqual(sum(t.weight for t in profile.topics), 1.0,
                               places=9)
        for t in profile.topics:
            self.assertEqual(len(t.top_words), 2)
        self.assertEqual(len(c.user_profile("ann").topics[0].top_words), 5)

    def test_unknown_user(self):
        with self.assertRaises(latentd.NotFoundError) as e:
            client().user_profile("nobody")
        self.assertIn("user 'nobody' is not in the model", e.exception.message)

    def test_bad_ingest(self):
        c = client(WRITE)
        before = c.status()
        with self.assertRaises(latentd.InvalidArgumentError) as e:
            c.ingest(["oil", "  "], user="bob")
        self.assertIn("document 1 (id ''): empty document",
                      e.exception.message)
        with self.assertRaises(latentd.InvalidArgumentError) as e:
            c.ingest([])
        self.assertIn("holds no documents", e.exception.message)
        with self.assertRaises(TypeError):
            c.ingest("oil prices")
        # Nothing of a failed request was accepted.
        after = wait_merged(c)
        self.assertEqual(after.ingested, before.ingested)
        self.assertEqual(after.users, before.users)
        with self.assertRaises(latentd.NotFoundError):
            c.user_profile("bob")

    def test_ingest_needs_write(self):
        with self.assertRaises(latentd.PermissionDeniedError) as e:
            client(READ).ingest(["oil"])
        self.assertEqual(e.exception.code, "PERMISSION_DENIED")
        self.assertEqual(e.exception.http_status, 403)
        self.assertIn("(read) cannot call Ingest: it needs write",
                      e.exception.message)

    def test_graph(self):
        c = client()
        z0 = c.embedding(0)
        self.assertEqual(len(z0), GRAPH_DIM)
        nearest = c.nearest_vertices(0, top=3)
        self.assertEqual(len(nearest), 3)
        self.assertNotIn(0, [v for v, _ in nearest])
        self.assertGreaterEqual(nearest[0][1], nearest[2][1])
        v, score = nearest[0]
        zv = c.embedding(v)
        scores = c.score_pairs([(0, v), (0, 10**12)], skip_unknown=True)
        self.assertAlmostEqual(scores[0], sum(a * b for a, b in zip(z0, zv)),
                               places=4)
        self.assertAlmostEqual(scores[0], score, places=4)
        self.assertIsNone(scores[1])
        with self.assertRaises(latentd.NotFoundError) as e:
            c.score_pairs([(0, 10**12)])
        self.assertIn("pair 0: vertex 1000000000000 is not in the graph",
                      e.exception.message)
        with self.assertRaises(latentd.NotFoundError):
            c.embedding(10**12)
        with self.assertRaises(latentd.PermissionDeniedError):
            c.ingest_edges([(0, 10**12)])
        with self.assertRaises(latentd.InvalidArgumentError):
            client(WRITE).ingest_edges([(5, 5)])
        added = client(WRITE).ingest_edges([(0, 10**12, 2.0), (0, 1)])
        self.assertEqual(added["accepted"], 1)
        self.assertEqual(added["duplicates"], 1)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            graph = c.call("Status").get("graph", {})
            if int(graph.get("pendingEdges", 0)) == 0:
                break
            time.sleep(0.1)
        self.assertEqual(len(c.embedding(10**12)), GRAPH_DIM)

    def test_checkpoint(self):
        cp = client(ADMIN).checkpoint()
        self.assertIsInstance(cp, latentd.Checkpoint)
        self.assertEqual(cp.sweep, SWEEPS)
        self.assertEqual(cp.path, os.path.join(_daemon.data_dir, "model.bin"))
        self.assertTrue(os.path.exists(cp.path))
        self.assertEqual(client().status().checkpoint_sweep, SWEEPS)
        with self.assertRaises(latentd.PermissionDeniedError) as e:
            client(WRITE).checkpoint()
        self.assertIn("needs admin", e.exception.message)


class Authentication(unittest.TestCase):
    """The token: argument, else LATENTD_TOKEN; missing or unknown."""

    def test_no_token(self):
        with mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop("LATENTD_TOKEN", None)
            with self.assertRaises(latentd.AuthenticationError) as e:
                client(token=None).status()
        self.assertEqual(e.exception.code, "UNAUTHENTICATED")
        self.assertEqual(e.exception.http_status, 401)

    def test_bad_token(self):
        with self.assertRaises(latentd.AuthenticationError) as e:
            client("not-a-known-token-0123").list_topics()
        self.assertEqual(e.exception.code, "UNAUTHENTICATED")

    def test_token_from_environment(self):
        with mock.patch.dict(os.environ, {"LATENTD_TOKEN": READ}):
            self.assertEqual(client(token=None).status().topics, TOPICS)
        # The argument wins over the environment.
        with mock.patch.dict(os.environ, {"LATENTD_TOKEN": "wrong-0123456789"}):
            self.assertEqual(client(READ).status().topics, TOPICS)
            with self.assertRaises(latentd.AuthenticationError):
                client(token=None).status()


class Transport(unittest.TestCase):
    """Addresses, the raw call, failures without an API answer."""

    def test_arguments(self):
        for bad in ("", "ftp://host:1", "host:port", "http://"):
            with self.assertRaises(ValueError, msg=bad):
                latentd.Client(bad)
        with self.assertRaises(ValueError):
            latentd.Client("127.0.0.1:1", token="two words")
        with self.assertRaises(ValueError):
            latentd.Client("127.0.0.1:1", timeout=0)
        self.assertEqual(latentd.Client().url, "http://127.0.0.1:7070")
        c = latentd.Client("http://127.0.0.1:1/", token=ADMIN)
        self.assertEqual(c.url, "http://127.0.0.1:1")
        self.assertNotIn(ADMIN, repr(c))

    def test_from_data_dir(self):
        c = latentd.Client.from_data_dir(_daemon.data_dir, token=READ)
        self.assertEqual(c.url, f"http://{_daemon.address}")
        self.assertEqual(c.status().topics, TOPICS)
        with self.assertRaises(OSError):
            latentd.Client.from_data_dir(os.path.join(_daemon.dir, "none"))

    def test_raw_call(self):
        self.assertEqual(client().call("Status")["topics"], TOPICS)
        with self.assertRaises(latentd.NotFoundError) as e:
            client().call("NoSuchCall")
        self.assertIn("no API call named 'NoSuchCall'", e.exception.message)
        with self.assertRaises(latentd.InvalidArgumentError) as e:
            client().call("ListTopics", {"noSuchField": 1})
        self.assertIn("malformed JSON", e.exception.message)

    def test_partial_cluster_answers(self):
        # A cluster node names the members that did not answer a scattered
        # query (missingMembers); a complete answer has none.
        self.assertFalse(client().topic_documents(0, top=3).partial)
        missing = {"missingMembers": ["127.0.0.1:7001"]}
        docs = latentd.TopicDocuments.from_json(dict(missing, topic=2))
        self.assertTrue(docs.partial)
        self.assertEqual(docs.missing_members, ("127.0.0.1:7001",))
        similar = latentd.Similar.from_json(dict(missing, neighbors=[]))
        self.assertTrue(similar.partial)
        self.assertEqual(similar.missing_members, ("127.0.0.1:7001",))
        mixture = latentd.DocumentMixture.from_json(missing)
        self.assertEqual(mixture.missing_members, ("127.0.0.1:7001",))
        profile = latentd.UserProfile.from_json(dict(missing, user="ann"))
        self.assertTrue(profile.partial)
        self.assertEqual(profile.missing_members, ("127.0.0.1:7001",))

    def test_unreachable(self):
        with socket.socket() as s:  # a port nothing listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        c = latentd.Client(f"127.0.0.1:{port}", timeout=5)
        with self.assertRaises(latentd.UnavailableError) as e:
            c.status()
        self.assertEqual(e.exception.code, "UNAVAILABLE")
        self.assertIsNone(e.exception.http_status)
        self.assertTrue(e.exception.retryable)
        self.assertIn(f"cannot reach latentd at http://127.0.0.1:{port}",
                      e.exception.message)

    def test_timeout(self):
        with socket.socket() as s:  # accepts connections, never answers
            s.bind(("127.0.0.1", 0))
            s.listen(4)
            c = latentd.Client(f"127.0.0.1:{s.getsockname()[1]}", timeout=0.3)
            with self.assertRaises(latentd.DeadlineExceededError) as e:
                c.status()
            self.assertIn("no answer from", e.exception.message)
            self.assertIsInstance(e.exception, TimeoutError)
            self.assertTrue(e.exception.retryable)
            # A call's own timeout.
            with self.assertRaises(latentd.DeadlineExceededError) as e:
                latentd.Client(c.url).call("Status", timeout=0.2)
            self.assertIn("within 0.2 s", e.exception.message)

    def test_answers_that_are_not_the_api(self):
        # What a proxy in front of the daemon may answer.
        def answer(method, _):
            if method == "Status":
                return 502, b"<html>upstream down</html>"
            return 200, b"not json"

        with FakeDaemon(answer) as address:
            c = latentd.Client(address)
            with self.assertRaises(latentd.UnavailableError) as e:
                c.status()
            self.assertEqual(e.exception.http_status, 502)
            self.assertIn("HTTP 502", e.exception.message)
            self.assertIn("upstream down", e.exception.message)
            with self.assertRaises(latentd.LatentdError) as e:
                c.list_topics()
            self.assertEqual(e.exception.code, "UNKNOWN")
            self.assertIn("is not JSON", e.exception.message)


def make_test_ca(directory):
    """A test CA (ca.pem), a second CA (other-ca.pem) and a server
    certificate for IP 127.0.0.1 signed by the first (server.pem,
    server.key), made with the openssl CLI in `directory`."""
    def run(*args):
        subprocess.run(["openssl", *args], check=True, cwd=directory,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for name in ("ca", "other-ca"):
        run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-subj", f"/CN=latentd test {name}", "-keyout", f"{name}.key",
            "-out", f"{name}.pem")
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=latentd node",
        "-keyout", "server.key", "-out", "server.csr")
    with open(os.path.join(directory, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey",
        "ca.key", "-CAcreateserial", "-days", "2", "-extfile", "san.ext",
        "-out", "server.pem")


class Tls(unittest.TestCase):
    """A daemon with --tls-cert: ca_file= and https:// verify it; another
    CA's trust, and plain http://, fail with FAILED_PRECONDITION saying
    why; the token is still wanted over TLS."""

    @classmethod
    def setUpClass(cls):
        cls.pki = tempfile.mkdtemp(prefix="latentd_client_tls.")
        make_test_ca(cls.pki)
        cls.ca = os.path.join(cls.pki, "ca.pem")
        cls.daemon = Daemon(os.environ["LATENTD_BIN"], [
            "--tls-cert", os.path.join(cls.pki, "server.pem"),
            "--tls-key", os.path.join(cls.pki, "server.key")])

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()
        shutil.rmtree(cls.pki, ignore_errors=True)

    def test_verified(self):
        c = latentd.Client(self.daemon.address, token=READ, ca_file=self.ca)
        self.assertTrue(c.url.startswith("https://127.0.0.1:"))
        self.assertEqual(c.status().topics, TOPICS)
        url = latentd.Client("https://" + self.daemon.address, token=READ,
                             ca_file=self.ca)
        self.assertEqual(url.status().topics, TOPICS)

    def test_other_ca(self):
        c = latentd.Client(self.daemon.address, token=READ,
                           ca_file=os.path.join(self.pki, "other-ca.pem"))
        with self.assertRaises(latentd.InvalidArgumentError) as e:
            c.status()
        self.assertEqual(e.exception.code, "FAILED_PRECONDITION")
        self.assertIn("does not verify against the CA in", str(e.exception))

    def test_system_cas_do_not_know_the_test_ca(self):
        c = latentd.Client("https://" + self.daemon.address, token=READ)
        with self.assertRaises(latentd.InvalidArgumentError) as e:
            c.status()
        self.assertIn("system's CAs", str(e.exception))

    def test_plain_http_is_told(self):
        c = latentd.Client(self.daemon.address, token=READ, timeout=10)
        started = time.monotonic()
        with self.assertRaises(latentd.InvalidArgumentError) as e:
            c.status()
        self.assertLess(time.monotonic() - started, 5)
        self.assertEqual(e.exception.code, "FAILED_PRECONDITION")
        self.assertIn("serves HTTPS only", str(e.exception))

    def test_token_still_wanted(self):
        c = latentd.Client(self.daemon.address, token="", ca_file=self.ca)
        with self.assertRaises(latentd.AuthenticationError):
            c.status()

    def test_ca_file_needs_tls(self):
        with self.assertRaises(ValueError):
            latentd.Client("http://" + self.daemon.address, ca_file=self.ca)


class FakeDaemon:
    """An HTTP server on 127.0.0.1 answering POST /v1/METHOD with
    answer(METHOD, request dict) -> (HTTP status, body bytes or a dict);
    `with` gives its address."""

    def __init__(self, answer):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                request = json.loads(
                    self.rfile.read(int(self.headers["Content-Length"])))
                status, body = answer(self.path[len("/v1/"):], request)
                if isinstance(body, dict):
                    body = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self._server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
            daemon=True)

    def __enter__(self):
        self._thread.start()
        return f"127.0.0.1:{self._server.server_port}"

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


class ExportModel(unittest.TestCase):
    """export_model(): the whole model, paged and checked."""

    def test_export(self):
        c = client()
        status = c.status()
        model = c.export_model()
        self.assertIsInstance(model, latentd.Model)
        self.assertEqual(model.version, status.version)
        self.assertEqual(model.num_topics, TOPICS)
        self.assertEqual(model.vocabulary, status.vocabulary)
        self.assertEqual(sorted(model.words), VOCABULARY)
        self.assertEqual(model.pages, 1)
        self.assertEqual(sum(model.topic_tokens), status.tokens)
        self.assertEqual(sum(model.word_counts()), status.tokens)
        frequency = dict(zip(model.words, model.word_counts()))
        self.assertEqual(frequency["goal"], c.word_topics("goal").count)
        # φ is the model's: the daemon's top words and probabilities.
        phi = model.topic_word()
        self.assertEqual(len(phi), TOPICS)
        for k, topic in enumerate(c.list_topics(top_words=5)):
            self.assertEqual(model.alpha[k], topic.alpha)
            self.assertEqual(model.topic_tokens[k], topic.tokens)
            self.assertAlmostEqual(sum(phi[k]), 1.0, places=9)
            for w in topic.top_words:
                self.assertAlmostEqual(phi[k][model.words.index(w.word)],
                                       w.probability, places=12)
        # Small pages give the same model.
        paged = c.export_model(page_words=3)
        self.assertEqual(paged.pages, math.ceil(model.vocabulary / 3))
        self.assertEqual(dataclasses.replace(paged, pages=1), model)
        with self.assertRaises(ValueError):
            c.export_model(page_words=0)

    def _pages(self, words, version=lambda first_word: 1, topic_tokens=None):
        """An ExportModel answer over `words` [(word, topics, counts)],
        one word per page, K = 2."""
        if topic_tokens is None:
            topic_tokens = [sum(n for _, ts, ns in words
                                for t, n in zip(ts, ns) if t == k)
                            for k in range(2)]

        def answer(method, request):
            self.assertEqual(method, "ExportModel")
            first = request.get("firstWord", 0)
            page = {"version": {"sweep": "5", "view": str(version(first))},
                    "topics": 2, "beta": 0.1, "vocabulary": len(words),
                    "firstWord": first,
                    "words": [{"word": w, "topics": ts, "counts": ns}
                              for w, ts, ns in words[first:first + 1]]}
            if first == 0:
                page["alpha"] = [0.5, 0.5]
                page["topicTokens"] = [str(n) for n in topic_tokens]
            return 200, page
        return answer

    def test_model_that_keeps_moving(self):
        words = [("a", [0], [2]), ("b", [0, 1], [1, 3])]
        views = iter(range(1, 100))
        with FakeDaemon(self._pages(words, lambda _: next(views))) as address:
            with self.assertRaises(latentd.LatentdError) as e:
                latentd.Client(address).export_model(attempts=2)
        self.assertEqual(e.exception.code, "ABORTED")
        self.assertIn("changed while it was being fetched, 2 times",
                      e.exception.message)
        self.assertIn("--max-sweeps", e.exception.message)
        # Moving once, then still: the second attempt gets it.
        views = iter([1, 2] + [3] * 10)
        with FakeDaemon(self._pages(words, lambda _: next(views))) as address:
            model = latentd.Client(address).export_model(attempts=2)
        self.assertEqual(model.version.view, 3)
        self.assertEqual(model.counts, (((0, 2),), ((0, 1), (1, 3))))
        self.assertEqual(model.word_counts(), [2, 4])
        phi = model.topic_word()
        self.assertAlmostEqual(phi[1][0], 0.1 / (3 + 2 * 0.1))
        self.assertAlmostEqual(phi[1][1], 3.1 / (3 + 2 * 0.1))

    def test_pages_that_do_not_fit(self):
        cases = [
            ([("a", [0], [2]), ("b", [0, 1], [1, 3])], [3, 4],
             "topic 1: the words' counts add up to 3, the node says n_k = 4"),
            ([("a", [1, 0], [2, 1])], None, "topics [1, 0]"),
            ([("a", [2], [2])], None, "topics rising below K = 2"),
            ([("a", [0], [0])], None, "one positive count each"),
        ]
        for words, totals, message in cases:
            with FakeDaemon(self._pages(words, topic_tokens=totals)) as address:
                with self.assertRaises(latentd.LatentdError, msg=message) as e:
                    latentd.Client(address).export_model()
            self.assertEqual(e.exception.code, "DATA_LOSS")
            self.assertIn(message, e.exception.message)


def _has_pandas():
    return importlib.util.find_spec("pandas") is not None


class DataFrames(unittest.TestCase):
    """to_frame() with pandas, and its error without."""

    @unittest.skipUnless(
        _has_pandas(), f"pandas is not installed for {sys.executable}: "
        "the DataFrame path (to_frame of TopicList, DocumentTopics, Model) "
        "is untested here (Debian: apt-get install python3-pandas)")
    def test_frames(self):
        c = client()
        topics = c.list_topics(top_words=4)
        frame = topics.to_frame()
        self.assertEqual(list(frame.columns), ["topic", "alpha", "tokens",
                                               "rank", "word", "probability"])
        self.assertEqual(len(frame), TOPICS * 4)
        for t in topics:
            rows = frame[frame.topic == t.id].sort_values("rank")
            self.assertEqual(list(rows.word), [w.word for w in t.top_words])
            self.assertEqual(list(rows.probability),
                             [w.probability for w in t.top_words])
            self.assertEqual(set(rows.tokens), {t.tokens})
        docs = c.infer_documents({"x": "oil opec", "y": "judge"})
        df = docs.to_frame()
        self.assertEqual(list(df.index), ["x", "y"])
        self.assertEqual(df.index.name, "document")
        self.assertEqual(list(df.columns), list(range(TOPICS)))
        self.assertEqual(df.values.tolist(), docs.matrix())
        for total in df.sum(axis=1):
            self.assertAlmostEqual(total, 1.0, places=9)
        self.assertEqual(list(c.infer_documents(["oil"]).to_frame().index),
                         [0])
        model = c.export_model()
        phi = model.to_frame()
        self.assertEqual(phi.shape, (TOPICS, len(VOCABULARY)))
        self.assertEqual(list(phi.columns), list(model.words))
        self.assertEqual(phi.values.tolist(), model.topic_word())
        for t in topics:
            for w in t.top_words:
                self.assertAlmostEqual(phi.loc[t.id, w.word], w.probability,
                                       places=12)

    def test_without_pandas(self):
        topics = client().list_topics(top_words=2)
        with mock.patch.dict(sys.modules, {"pandas": None}):
            with self.assertRaises(ImportError) as e:
                topics.to_frame()
        self.assertIn("TopicList.to_frame needs pandas", str(e.exception))
        # The rest needs no pandas.
        self.assertEqual(len(topics), TOPICS)


if __name__ == "__main__":
    unittest.main(verbosity=2)
