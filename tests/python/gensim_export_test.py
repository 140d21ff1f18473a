"""`latentctl export DIR --format gensim` opens in gensim: LdaModel.load
reads it, its show_topics top words and probabilities are `latentctl
topics`' (words of equal probability may come in either order), its
dictionary is the model's vocabulary in order, and get_document_topics
answers. The model is trained here on the test corpus (tests/testdata)
with $LATENTCTL; gensim runs in this interpreter (--python).

Skipped (exit 77, saying so) where gensim is not installed
(python3-gensim, ops/install-deps.sh).
"""

import json
import os
import sys
import tempfile
import unittest

try:
    from gensim.models import LdaModel
except ImportError as e:
    print(f"SKIP: gensim is not installed ({e}): python3-gensim")
    sys.exit(77)

from latentctl_run import latentctl, train_test_model

TOP = 10


class GensimExportTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.model = os.path.join(cls.tmp.name, "m")
        train_test_model(cls.model, 8)
        cls.out = os.path.join(cls.tmp.name, "gensim")
        proc = latentctl("export", cls.model, "--format", "gensim", "--out",
                         cls.out, "--python", sys.executable, "--json")
        cls.summary = json.loads(proc.stdout)
        cls.stderr = proc.stderr
        cls.lda = LdaModel.load(os.path.join(cls.out, "lda.gensim"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_summary(self):
        self.assertEqual(self.summary["format"], "gensim")
        self.assertEqual(self.summary["files"], ["lda.gensim"])
        self.assertIn("LdaModel.load", self.stderr)

    def test_top_words_equal_latentctl_topics(self):
        theirs = latentctl("topics", self.model, "--top", str(TOP), "--json")
        topics = json.loads(theirs.stdout)["topics"]
        self.assertEqual(len(topics), 8)
        self.assertEqual(self.lda.num_topics, 8)
        shown = dict(self.lda.show_topics(num_topics=-1, num_words=TOP,
                                          formatted=False))
        for t in topics:
            k = t.get("id", 0)
            ours = [(w["word"], w["probability"]) for w in t["topWords"]]
            gensim_words = shown[k]
            self.assertEqual(len(gensim_words), TOP)
            for (w1, p1), (w2, p2) in zip(ours, gensim_words):
                self.assertAlmostEqual(p1, p2, delta=1e-9 + 1e-6 * p1,
                                       msg=(k, ours, gensim_words))
            # The same words in the same order, up to ties: within a run
            # of equal probabilities, either order.
            def groups(pairs):
                out = {}
                for w, p in pairs:
                    out.setdefault(round(p, 12), set()).add(w)
                return out
            g_ours, g_gensim = groups(ours), groups(gensim_words)
            last = min(min(g_ours), min(g_gensim))  # a run cut by TOP
            for p in g_ours:
                if p != last:
                    self.assertEqual(g_ours[p], g_gensim.get(p),
                                     (k, ours, gensim_words))

    def test_dictionary_is_the_vocabulary_in_order(self):
        with open(os.path.join(self.model, "vocab.txt")) as f:
            vocab = f.read().splitlines()
        self.assertEqual(len(self.lda.id2word), len(vocab))
        for i in (0, 1, len(vocab) // 2, len(vocab) - 1):
            self.assertEqual(self.lda.id2word[i], vocab[i])
        self.assertEqual(self.lda.id2word.token2id[vocab[3]], 3)

    def test_get_document_topics(self):
        bow = self.lda.id2word.doc2bow("oil prices rose opec oil".split())
        self.assertTrue(bow)
        mix = self.lda.get_document_topics(bow, minimum_probability=0)
        self.assertEqual(len(mix), 8)
        self.assertAlmostEqual(sum(p for _, p in mix), 1.0, places=6)

    def test_topics_are_latentd_phi(self):
        phi = self.lda.get_topics()
        self.assertEqual(phi.shape, (8, len(self.lda.id2word)))
        for row in phi:
            self.assertAlmostEqual(float(row.sum()), 1.0, places=9)


if __name__ == "__main__":
    unittest.main()
