"""latentd.estimator.LatentdLDA as scikit-learn uses it: in a Pipeline after
CountVectorizer, in GridSearchCV over n_components, cloned, get_params and
set_params; transform's rows sum to 1 and separate the topics the corpus
was generated from. The corpus is generated here (three topics of eight
words, 90 documents); latentctl trains it ($LATENTCTL).

Skipped (exit 77, saying so) where scikit-learn is not installed
(python3-sklearn, ops/install-deps.sh).
"""

import os
import random
import sys
import unittest

try:
    import numpy as np
    from sklearn.base import clone
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline
except ImportError as e:
    print(f"SKIP: scikit-learn is not installed ({e}): python3-sklearn")
    sys.exit(77)

from latentd.estimator import LatentdLDA, feature_word

TOPICS = [
    "jury election senate vote tax bill court judge".split(),
    "church faith prayer sermon spirit bible priest choir".split(),
    "ball team game coach season player score league".split(),
]


def corpus(n=90, length=40, seed=7):
    """n documents, document d mostly of topic d % 3; its labels."""
    rng = random.Random(seed)
    docs, labels = [], []
    for d in range(n):
        main = d % 3
        words = [rng.choice(TOPICS[main] if rng.random() < 0.9 else
                            TOPICS[rng.randrange(3)]) for _ in range(length)]
        docs.append(" ".join(words))
        labels.append(main)
    return docs, labels


def estimator(**kw):
    return LatentdLDA(max_iter=150, random_state=3,
                      latentctl=os.environ["LATENTCTL"], **kw)


class LatentdLDATest(unittest.TestCase):

    def test_grid_search_in_a_pipeline(self):
        docs, labels = corpus()
        pipe = Pipeline([("counts", CountVectorizer()),
                         ("lda", estimator(n_components=2))])
        search = GridSearchCV(pipe, {"lda__n_components": [1, 2, 3]}, cv=3)
        search.fit(docs)
        scores = search.cv_results_["mean_test_score"]
        self.assertTrue(np.all(np.isfinite(scores)), scores)
        # Held-out likelihood finds the three topics the corpus has.
        self.assertEqual(search.best_params_, {"lda__n_components": 3},
                         scores)
        self.assertLess(scores[0], scores[2], scores)
        theta = search.transform(docs)
        self.assertEqual(theta.shape, (90, 3))
        np.testing.assert_allclose(theta.sum(axis=1), 1.0, atol=1e-9)
        self.assertTrue(np.all(theta >= 0))
        # Each generated topic's documents share one dominant topic, a
        # different one per generated topic.
        dominant = theta.argmax(axis=1)
        majority = []
        for t in range(3):
            mine = dominant[[i for i, l in enumerate(labels) if l == t]]
            top = np.bincount(mine, minlength=3).argmax()
            self.assertGreaterEqual(np.mean(mine == top), 0.9, (t, mine))
            majority.append(top)
        self.assertEqual(sorted(majority), [0, 1, 2], majority)

    def test_components_and_fit_transform(self):
        docs, _ = corpus()
        counts = CountVectorizer()
        X = counts.fit_transform(docs)
        lda = estimator(n_components=3)
        theta = lda.fit_transform(X)
        self.assertEqual(theta.shape, (90, 3))
        np.testing.assert_allclose(theta.sum(axis=1), 1.0, atol=1e-9)
        self.assertEqual(lda.components_.shape, (3, X.shape[1]))
        # Pseudo-counts: the word counts plus beta, all the tokens.
        self.assertAlmostEqual(
            lda.components_.sum() - 3 * X.shape[1] * lda.topic_word_prior_,
            X.sum(), places=6)
        # A topic's top words are one generated topic's words.
        names = counts.get_feature_names_out()
        for k in range(3):
            top = {names[j] for j in np.argsort(-lda.components_[k])[:6]}
            self.assertTrue(any(top <= set(words) for words in TOPICS), top)
        # The same input, the same rows (seeded fold-in); a row without a
        # known word gets the prior.
        np.testing.assert_array_equal(lda.transform(X), lda.transform(X))
        empty = lda.transform(np.zeros((1, X.shape[1])))
        np.testing.assert_allclose(
            empty[0], lda.doc_topic_prior_ / lda.doc_topic_prior_.sum())
        self.assertTrue(np.isfinite(lda.score(X)))
        self.assertGreater(lda.perplexity(X), 1.0)
        with self.assertRaises(ValueError):
            lda.transform(np.ones((1, X.shape[1] + 1)))
        with self.assertRaises(ValueError):
            lda.fit(-np.ones((2, 2)))

    def test_params_and_clone(self):
        lda = estimator(n_components=4, doc_topic_prior=0.5)
        params = lda.get_params()
        self.assertEqual(params["n_components"], 4)
        self.assertEqual(params["doc_topic_prior"], 0.5)
        self.assertIs(lda.set_params(n_components=6, max_iter=10), lda)
        self.assertEqual(lda.get_params()["n_components"], 6)
        copy = clone(lda)
        self.assertEqual(copy.get_params(), lda.get_params())
        X = CountVectorizer().fit_transform(corpus(n=30)[0])
        copy.fit(X)
        self.assertEqual(copy.components_.shape[0], 6)
        np.testing.assert_allclose(copy.doc_topic_prior_, 0.5)
        self.assertFalse(hasattr(lda, "components_"))

    def test_feature_words_survive_the_tokenizer(self):
        self.assertEqual(feature_word(0), "zqa")
        self.assertEqual(feature_word(25), "zqz")
        self.assertEqual(feature_word(26), "zqba")
        words = {feature_word(j) for j in range(5000)}
        self.assertEqual(len(words), 5000)


if __name__ == "__main__":
    unittest.main()
