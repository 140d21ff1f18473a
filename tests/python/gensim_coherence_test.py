"""`latentctl coherence --convention gensim` gives gensim's numbers: each
topic's u_mass equals gensim's CoherenceModel(coherence="u_mass") and its
NPMI equals CoherenceModel(coherence="c_npmi") with a window no shorter
than the longest document, within 1e-6, on the test corpus (tests/testdata,
the AP-like LDA-C corpus the other tests train on). The default (mimno)
convention differs from gensim on the same model, which shows the flag
does something. gensim gets latentd's top words and the training
documents, read from the LDA-C file here.

Skipped (exit 77, saying so) where gensim is not installed
(python3-gensim, ops/install-deps.sh).
"""

import json
import os
import sys
import tempfile
import unittest

try:
    from gensim.corpora import Dictionary
    from gensim.models.coherencemodel import CoherenceModel
except ImportError as e:
    print(f"SKIP: gensim is not installed ({e}): python3-gensim")
    sys.exit(77)

from latentctl_run import CORPUS, latentctl, train_test_model

TOP = 10
TOPICS = 8


def read_ldac(path, vocab_path):
    """The documents as lists of words, each word repeated by its count."""
    with open(vocab_path) as f:
        vocab = f.read().splitlines()
    docs = []
    with open(path) as f:
        for line in f:
            fields = line.split()
            if not fields:
                continue
            words = []
            for pair in fields[1:]:
                w, n = pair.split(":")
                words.extend([vocab[int(w)]] * int(n))
            if words:
                docs.append(words)
    return docs


class GensimCoherenceTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.model = os.path.join(cls.tmp.name, "m")
        train_test_model(cls.model, TOPICS)
        cls.ours = json.loads(
            latentctl("coherence", cls.model, "--top", str(TOP),
                      "--convention", "gensim", "--json").stdout)
        cls.mimno = json.loads(
            latentctl("coherence", cls.model, "--top", str(TOP),
                      "--json").stdout)
        cls.texts = read_ldac(f"{CORPUS}/corpus.ldac", f"{CORPUS}/vocab.txt")
        cls.dictionary = Dictionary(cls.texts)
        cls.topics = [t["words"] for t in cls.ours["topics"]]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def gensim(self, **kwargs):
        model = CoherenceModel(topics=self.topics, dictionary=self.dictionary,
                               processes=1, **kwargs)
        return model.get_coherence_per_topic(), model.get_coherence()

    def test_same_documents_and_topics(self):
        self.assertEqual(self.ours["convention"], "gensim")
        self.assertEqual(self.ours["documents"], len(self.texts))
        self.assertEqual(len(self.topics), TOPICS)
        for words in self.topics:
            self.assertEqual(len(words), TOP)

    def test_u_mass_equals_gensims(self):
        corpus = [self.dictionary.doc2bow(t) for t in self.texts]
        per_topic, mean = self.gensim(corpus=corpus, coherence="u_mass")
        for t, theirs in zip(self.ours["topics"], per_topic):
            self.assertAlmostEqual(t["umass"], theirs, delta=1e-6,
                                   msg=t["words"])
        self.assertAlmostEqual(self.ours["meanUmass"], mean, delta=1e-6)
        # Mimno's +1 differs from gensim's ε on a real model.
        self.assertGreater(abs(self.mimno["meanUmass"] - mean), 1e-3)

    def test_c_npmi_with_a_document_window_equals_gensims(self):
        window = max(len(t) for t in self.texts)
        per_topic, mean = self.gensim(texts=self.texts, coherence="c_npmi",
                                      window_size=window)
        for t, theirs in zip(self.ours["topics"], per_topic):
            self.assertAlmostEqual(t["npmi"], theirs, delta=1e-6,
                                   msg=t["words"])
        self.assertAlmostEqual(self.ours["meanNpmi"], mean, delta=1e-6)


if __name__ == "__main__":
    unittest.main()
