"""GetDocumentTopics and TopicDocuments in a running latentd, through the
Python client (HTTP/JSON) and latentctl (framed protobuf/TCP and
HTTP/JSON): a training document's topic mixture by its id, and a topic's
top documents.

The corpus is drawn from a known structure (K topics with their own
words; every document 90% from one dominant topic). After training stops
and the document table is read at the final model:
  - a document's mixture has all K topics, sums to 1, equals
    (n_dk + α_k) / (n_d + Σα) of its counts and ListTopics' α, its counts
    sum to its length (the words of its line), and its dominant topic is
    shared by its siblings;
  - the counts equal those of the model's own token assignments, read
    independently from the data directory after a checkpoint: `latentctl
    export DIR --format mallet` (the Mallet state file's topic per token,
    doc_topic.csv's document ids);
  - a topic's top documents are ranked by θ_dk, their weights and counts
    equal GetDocumentTopics', and they are the siblings of one dominant
    topic;
  - latentctl prints the same over TCP and HTTP/JSON;
  - bad input (unknown or empty id, unknown topic, top over 1000) is an
    error naming what is wrong.

Usage: document_topics_daemon_test.py LATENTD LATENTCTL (PYTHONPATH=python).
"""

import collections
import csv
import gzip
import json
import os
import random
import subprocess
import sys
import time
import unittest

import latentd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python"))
from latentd_process import (LatentdProcess, drop_proxies,  # noqa: E402
                             planted_word)

K = 4
WORDS_PER_TOPIC = 30
DOCS = 200
SWEEPS = 150
SEED = 52

LATENTD = LATENTCTL = None
_daemon = None


RNG = random.Random(SEED)
LINES = []
TOPIC_OF = {}  # document id (line number, from 1) -> its dominant topic
for d in range(DOCS):
    t = d % K
    n = 40 + RNG.randrange(30)  # lengths differ: n_d is checked
    words = []
    for _ in range(n):
        topic = t if RNG.random() < 0.95 else RNG.randrange(K)
        words.append(planted_word(topic, RNG.randrange(WORDS_PER_TOPIC)))
    LINES.append(" ".join(words))
    TOPIC_OF[str(d + 1)] = t


def make_args(d):
    corpus = os.path.join(d, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join(LINES) + "\n")
    return ["--corpus", corpus, "--format", "lines", "--topics", str(K),
            "--max-sweeps", str(SWEEPS)]


def latentctl(*args, protocol="tcp", check=True):
    return _daemon.ctl(LATENTCTL, *args, protocol=protocol, check=check)


def client():
    return latentd.Client(_daemon.http)


def setUpModule():
    global _daemon
    drop_proxies()
    _daemon = LatentdProcess(LATENTD, "document_topics_daemon_test",
                             make_args)
    c = client()
    deadline = time.monotonic() + 90
    while True:  # sampling stopped and the table read at the final model
        s = c.status()
        if not s.training and c.document_topics("1").version == s.version:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"no final table:\n{_daemon.log_tail()}")
        time.sleep(0.1)


def tearDownModule():
    if _daemon is not None:
        _daemon.stop()


class DocumentTopicsTest(unittest.TestCase):
    def test_mixture_sums_to_one_and_matches_counts(self):
        c = client()
        alpha = {t.id: t.alpha for t in c.list_topics().topics}
        alpha_sum = sum(alpha.values())
        dominant = collections.defaultdict(collections.Counter)
        for doc in [str(i) for i in range(1, DOCS + 1)]:
            m = c.document_topics(doc)
            self.assertEqual(m.document, doc)
            self.assertEqual(len(m.topics), K)
            self.assertAlmostEqual(sum(t.weight for t in m.topics), 1.0,
                                   delta=1e-12)
            self.assertEqual(m.tokens, len(LINES[int(doc) - 1].split()))
            self.assertEqual(sum(m.counts.values()), m.tokens)
            for t in m.topics:
                expected = ((m.counts.get(t.topic, 0) + alpha[t.topic]) /
                            (m.tokens + alpha_sum))
                self.assertAlmostEqual(t.weight, expected, delta=1e-12)
            weights = [t.weight for t in m.topics]
            self.assertEqual(weights, sorted(weights, reverse=True))
            dominant[TOPIC_OF[doc]][m.topics[0].topic] += 1
        # Documents drawn from one topic share their dominant model topic.
        for planted, found in dominant.items():
            self.assertGreaterEqual(found.most_common(1)[0][1],
                                    0.9 * DOCS / K, (planted, found))

    def test_top_and_words(self):
        m = client().document_topics("7", top=2, top_words=3)
        self.assertEqual(len(m.topics), 2)
        for t in m.topics:
            self.assertEqual(len(t.top_words), 3)
            self.assertTrue(all(w.word.startswith("q") for w in t.top_words))

    def test_topic_documents(self):
        c = client()
        for topic in range(K):
            a = c.topic_documents(topic, top=20)
            self.assertEqual(a.topic, topic)
            self.assertEqual(len(a.documents), 20)
            w = [d.weight for d in a.documents]
            self.assertEqual(w, sorted(w, reverse=True))
            planted = collections.Counter(TOPIC_OF[d] for d in a.ids())
            self.assertGreaterEqual(planted.most_common(1)[0][1], 18,
                                    (topic, planted))
            for d in a.documents[:5]:
                m = c.document_topics(d.document)
                self.assertAlmostEqual(m.theta()[topic], d.weight,
                                       delta=1e-12)
                self.assertEqual(m.counts.get(topic, 0), d.count)
                self.assertEqual(m.tokens, d.tokens)
        # Every document ranked once, no document above the first.
        everything = c.topic_documents(0, top=1000)
        self.assertEqual(len(everything.documents), DOCS)
        self.assertEqual(len(set(everything.ids())), DOCS)

    def test_latentctl_same_over_tcp_and_json(self):
        m = client().document_topics("12", top=0, top_words=2)
        for protocol in ("tcp", "json"):
            _, out, _ = latentctl("document", "12", "--top", "0", "--words",
                                  "2", "--json", protocol=protocol)
            msg = json.loads(out)
            self.assertEqual([t["topic"] for t in msg["topics"]],
                             [t.topic for t in m.topics], protocol)
            self.assertEqual(int(msg["tokens"]), m.tokens)
            _, out, _ = latentctl("topic-documents", "1", "--top", "5",
                                  "--json", protocol=protocol)
            self.assertEqual([d["document"] for d in
                              json.loads(out)["documents"]],
                             client().topic_documents(1, top=5).ids())
        _, out, _ = latentctl("document", "12", "--top", "2")
        lines = out.splitlines()
        self.assertTrue(lines[0].startswith(f"document 12: {m.tokens} tokens"),
                        out)
        self.assertEqual(len(lines), 3, out)
        topic, weight, count, words = lines[1].strip().split("\t")
        self.assertEqual(topic, f"topic {m.topics[0].topic}")
        self.assertAlmostEqual(float(weight), m.topics[0].weight, delta=1e-4)
        self.assertEqual(int(count), m.counts[m.topics[0].topic])
        self.assertEqual(len(words.split()), 5)

    def test_bad_input(self):
        c = client()
        with self.assertRaises(latentd.NotFoundError) as e:
            c.document_topics("no-such-doc")
        self.assertIn("document 'no-such-doc'", e.exception.message)
        with self.assertRaises(latentd.InvalidArgumentError) as e:
            c.document_topics("")
        self.assertIn("a document is needed", e.exception.message)
        with self.assertRaises(latentd.NotFoundError) as e:
            c.topic_documents(K)
        self.assertIn(f"topic {K} does not exist", e.exception.message)
        with self.assertRaises(latentd.InvalidArgumentError) as e:
            c.topic_documents(0, top=1001)
        self.assertIn("top 1001 is over the limit of 1000",
                      e.exception.message)
        rc, _, err = latentctl("document", "nope", check=False)
        self.assertNotEqual(rc, 0)
        self.assertIn("document 'nope' is not in this node's model", err)


class IndependentCountsTest(unittest.TestCase):
    def test_counts_equal_the_mallet_state(self):
        c = client()
        api = {str(i): c.document_topics(str(i)).counts
               for i in range(1, DOCS + 1)}
        # Sampling has stopped: the store no longer changes; the checkpoint
        # gives the export its model.bin.
        latentctl("checkpoint")
        self.assertEqual(c.document_topics("1").version, c.status().version)
        out = os.path.join(_daemon.dir, "mallet")
        for fmt in ("mallet", "csv"):
            p = subprocess.run([LATENTCTL, "export", _daemon.data_dir,
                                "--format", fmt, "--out", out, "--overwrite"],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
        ids = {}
        with open(os.path.join(out, "doc_topic.csv"), newline="",
                  encoding="utf-8") as f:
            for row in csv.DictReader(f):
                ids[row["doc"]] = row["id"]
        state = collections.defaultdict(collections.Counter)
        state_file = [n for n in os.listdir(out) if n.endswith(".gz")]
        self.assertEqual(len(state_file), 1, os.listdir(out))
        with gzip.open(os.path.join(out, state_file[0]), "rt",
                       encoding="utf-8") as f:
            for line in f:
                if line.startswith("#"):
                    continue
                doc, _, _, _, _, topic = line.split()
                state[ids[doc]][int(topic)] += 1
        self.assertEqual(len(state), DOCS)
        for doc, counts in api.items():
            self.assertEqual(dict(state[doc]), counts, doc)


# Last (unittest runs the classes by name): the document it ingests would
# join the other tests' rankings and exports.
class SourceLookupTest(unittest.TestCase):
    def test_an_ingested_document_is_found_by_its_source(self):
        # Sent without an id, a document is found by its source once
        # merged and the table read again (at every publication now that
        # sampling has stopped).
        c = client()
        words = [planted_word(2, i) for i in range(12)]
        c.ingest([latentd.Document(" ".join(words), source="feed/item-7")])
        deadline = time.monotonic() + 30
        while True:
            try:
                mix = c.document_topics("feed/item-7")
                break
            except latentd.NotFoundError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.assertEqual(mix.tokens, len(words))
        self.assertAlmostEqual(sum(t.weight for t in mix.topics), 1.0,
                               places=9)


if __name__ == "__main__":
    LATENTD, LATENTCTL = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1])
