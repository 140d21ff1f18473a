"""SimilarDocuments and SimilarUsers in a running latentd, through every
surface: the Python client (HTTP/JSON), latentctl over framed protobuf/TCP
and over HTTP/JSON (its C++ ApiClient), text and --json output.

The corpus is drawn here from a known structure: K topics, each with its
own words (and a few shared ones), and every document drawn 90% from one
dominant topic, so that a document's siblings are the documents of its
topic. After training stops:
  - by id and by a new text, at least 90% of the 10 nearest documents are
    the query's siblings, and TCP, HTTP/JSON and Python give the same ids;
  - users whose events come from one topic find each other first;
  - a document ingested with an id is findable by SimilarDocuments within
    the staleness docs/api.md states (in the index within 5 s of being
    merged), and it ranks its siblings first;
  - bad input (unknown id, top beyond 1000, empty or unknown text, both
    or neither of document and text) is an error naming what is wrong.

Usage: similarity_daemon_test.py LATENTD LATENTCTL (PYTHONPATH=python).
"""

import json
import os
import random
import sys
import time
import unittest

import latentd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python"))
from latentd_process import (LatentdProcess, drop_proxies,  # noqa: E402
                             planted_word)

K = 4
WORDS_PER_TOPIC = 40
DOCS = 240
DOC_LENGTH = 60
SWEEPS = 80
SEED = 34

LATENTD = LATENTCTL = None
_daemon = None


def word(topic, i):
    """A word of topic `topic`."""
    return planted_word(topic, i)


SHARED = [word(25, i) for i in range(10)]  # drawn by every topic


def draw_text(rng, topic):
    out = []
    for _ in range(DOC_LENGTH):
        r = rng.random()
        if r < 0.9:
            out.append(word(topic, rng.randrange(WORDS_PER_TOPIC)))
        elif r < 0.95:
            other = rng.randrange(K)
            out.append(word(other, rng.randrange(WORDS_PER_TOPIC)))
        else:
            out.append(rng.choice(SHARED))
    return " ".join(out)


RNG = random.Random(SEED)
TOPIC_OF = {}  # document id (line number, from 1) -> its dominant topic
LINES = []
for d in range(DOCS):
    t = d % K
    LINES.append(draw_text(RNG, t))
    TOPIC_OF[str(d + 1)] = t


def make_args(d):
    corpus = os.path.join(d, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join(LINES) + "\n")
    return ["--corpus", corpus, "--format", "lines", "--topics", str(K),
            "--max-sweeps", str(SWEEPS), "--similarity-refresh-seconds", "1"]


def latentctl(*args, protocol="tcp", check=True):
    """Runs latentctl similar against the daemon; (exit status, out, err)."""
    return _daemon.ctl(LATENTCTL, "similar", *args, protocol=protocol,
                       check=check)


def client():
    return latentd.Client(_daemon.http)


def siblings(ids, topic):
    return sum(1 for i in ids if TOPIC_OF.get(i) == topic)


def setUpModule():
    global _daemon
    drop_proxies()
    _daemon = LatentdProcess(LATENTD, "similarity_daemon_test", make_args)
    c = client()
    deadline = time.monotonic() + 90
    while True:  # sampling stopped and the index refreshed at that model
        s = c.status()
        if not s.training:
            try:
                a = c.similar_documents("1", top=1)
                if a.index_oldest_view == a.current.view:
                    return
            except latentd.UnavailableError:
                pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"no final index:\n{_daemon.log_tail()}")
        time.sleep(0.1)


def tearDownModule():
    if _daemon is not None:
        _daemon.stop()


class SimilarDocumentsTest(unittest.TestCase):
    def test_siblings_first_by_id_on_every_surface(self):
        c = client()
        hits = total = 0
        for doc in ["1", "2", "3", "4", "101", "150", "203", "240"]:
            a = c.similar_documents(doc, top=10)
            ids = a.ids()
            self.assertEqual(len(ids), 10)
            self.assertNotIn(doc, ids)
            d = [n.distance for n in a.neighbors]
            self.assertEqual(d, sorted(d))
            self.assertTrue(all(0 <= x <= 1 for x in d), d)
            self.assertTrue(a.exact)
            self.assertEqual(a.indexed, DOCS)
            self.assertEqual(a.oldest_view, a.current.view)
            hits += siblings(ids, TOPIC_OF[doc])
            total += len(ids)
            # The same answer over TCP and HTTP/JSON from latentctl.
            for protocol in ("tcp", "json"):
                _, out, _ = latentctl("--doc", doc, "--top", "10", "--json",
                                      protocol=protocol)
                msg = json.loads(out)
                self.assertEqual([n["id"] for n in msg["neighbors"]], ids,
                                 protocol)
                self.assertEqual(int(msg["staleness"]["current"]["view"]),
                                 a.current.view)
        self.assertGreaterEqual(hits / total, 0.9, f"{hits}/{total}")

    def test_text_output(self):
        _, out, _ = latentctl("--doc", "5", "--top", "3")
        lines = out.splitlines()
        self.assertEqual(len(lines), 4, out)
        for rank, line in enumerate(lines[:3], 1):
            r, doc, dist, view = line.split("\t")
            self.assertEqual(int(r), rank)
            self.assertEqual(TOPIC_OF[doc], TOPIC_OF["5"], out)
            self.assertTrue(view.startswith("view "))
        self.assertIn("3 of 240 indexed (exact)", lines[3])

    def test_siblings_first_by_new_text(self):
        rng = random.Random(7)
        c = client()
        for topic in range(K):
            text = draw_text(rng, topic)
            ids = c.similar_documents(text=text, top=10).ids()
            self.assertGreaterEqual(siblings(ids, topic), 9, ids)
            _, out, _ = latentctl("--text", text, "--json")
            tcp_ids = [n["id"] for n in json.loads(out)["neighbors"]]
            self.assertEqual(tcp_ids, ids)  # the same seed: the same θ

    def test_bad_input(self):
        c = client()
        with self.assertRaises(latentd.NotFoundError) as e:
            c.similar_documents("no-such-doc")
        self.assertIn("document 'no-such-doc'", e.exception.message)
        with self.assertRaises(latentd.InvalidArgumentError) as e:
            c.similar_documents("1", top=10**9)
        self.assertIn("top must be in 1..1000", e.exception.message)
        self.assertIn("1000000000", e.exception.message)
        with self.assertRaises(latentd.InvalidArgumentError) as e:
            c.similar_documents("", text="")
        self.assertIn("both are empty", e.exception.message)
        with self.assertRaises(latentd.InvalidArgumentError) as e:
            c.similar_documents("1", text="qaaa")
        self.assertIn("not both", e.exception.message)
        with self.assertRaises(latentd.InvalidArgumentError) as e:
            c.similar_documents(text="zzzz yyyy xxxx")
        self.assertIn("SimilarDocuments text", e.exception.message)
        with self.assertRaises(latentd.InvalidArgumentError) as e:
            c.similar_users("")
        with self.assertRaises(latentd.NotFoundError) as e:
            c.similar_users("nobody")
        self.assertIn("user 'nobody'", e.exception.message)
        # latentctl: the daemon's message over TCP; its own range check.
        rc, _, err = latentctl("--doc", "no-such-doc", check=False)
        self.assertNotEqual(rc, 0)
        self.assertIn("document 'no-such-doc'", err)
        rc, _, err = latentctl("--doc", "1", "--top", "5000", check=False)
        self.assertNotEqual(rc, 0)
        self.assertIn("--top", err)
        rc, _, err = latentctl("--doc", "1", "--user", "u", check=False)
        self.assertNotEqual(rc, 0)

    def test_z_ingested_users_and_documents_are_found(self):
        # (named _z_: runs last, after the tests that count the index)
        c = client()
        rng = random.Random(11)
        docs = []
        for user, topic in [("ann", 0), ("amy", 0), ("bob", 1), ("ben", 1),
                            ("cat", 2)]:
            for _ in range(3):
                docs.append(latentd.Document(draw_text(rng, topic),
                                             user=user))
        fresh = draw_text(rng, 3)
        docs.append(latentd.Document(fresh, id="fresh-1"))
        acked = c.ingest(docs)
        self.assertEqual(acked.accepted, len(docs))
        # Merged: nothing pending, and the model moved past the ack.
        deadline = time.monotonic() + 30
        while c.status().pending:
            self.assertLess(time.monotonic(), deadline, _daemon.log_tail())
            time.sleep(0.05)
        merged_at = time.monotonic()
        merged_view = c.status().version.view
        while True:  # the stated staleness: in the index within 5 s
            try:
                a = c.similar_documents("fresh-1", top=10)
                break
            except latentd.NotFoundError:
                self.assertLess(time.monotonic() - merged_at, 5.0,
                                _daemon.log_tail())
                time.sleep(0.05)
        self.assertGreaterEqual(siblings(a.ids(), 3), 9, a.ids())
        self.assertEqual(a.indexed, DOCS + 1)
        by_text = c.similar_documents(text=fresh, top=DOCS + 1).ids()
        self.assertIn("fresh-1", by_text[:10])
        while True:
            try:
                u = c.similar_users("ann", top=4)
                break
            except latentd.NotFoundError:
                self.assertLess(time.monotonic() - merged_at, 5.0)
                time.sleep(0.05)
        self.assertEqual(u.ids()[0], "amy", u)
        self.assertEqual(len(u.ids()), 4)
        self.assertGreaterEqual(u.neighbors[0].view, merged_view - 1)
        _, out, _ = latentctl("--user", "bob", "--json", protocol="json")
        self.assertEqual(json.loads(out)["neighbors"][0]["id"], "ben", out)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: similarity_daemon_test.py LATENTD LATENTCTL")
    LATENTD, LATENTCTL = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1])
