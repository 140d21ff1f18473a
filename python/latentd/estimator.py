"""LatentdLDA: a scikit-learn estimator that trains LDA with latentctl.

It takes what scikit-learn's LatentDirichletAllocation takes, a document-term
count matrix (dense or scipy.sparse, as CountVectorizer makes it), so it
drops into a Pipeline and GridSearchCV:

    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline
    from latentd.estimator import LatentdLDA

    pipe = Pipeline([("counts", CountVectorizer()),
                     ("lda", LatentdLDA(n_components=10, max_iter=200))])
    search = GridSearchCV(pipe, {"lda__n_components": [5, 10, 20]}).fit(texts)
    theta = search.transform(texts)      # rows sum to 1

fit() writes the matrix as an LDA-C corpus (column j a word of its own) in a
model directory, runs `latentctl train` on it and reads the counts back;
transform() runs `latentctl infer` (fold-in Gibbs against the trained
model, seeded, so the same input gives the same rows); score() runs
`latentctl evaluate` (held-out log-likelihood per token by document
completion: higher is better, which is what GridSearchCV maximizes).

Needs numpy, scipy and scikit-learn (Debian: python3-sklearn) and the
latentctl program: `latentctl=` names it, else $LATENTCTL, else the one on
PATH. Not thread-safe: one estimator, one thread (clones are independent).
"""

import json
import os
import shutil
import subprocess
import tempfile
import weakref

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

__all__ = ["LatentdLDA", "feature_word"]

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def feature_word(j):
    """The word column j of the count matrix is named in latentd's files:
    "zq" and j in base 26 as letters ("zqa", "zqb", ..., "zqba"), so that
    latentd's tokenizer keeps it as it is (letters only, no stop word)."""
    digits = ""
    while True:
        digits = _LETTERS[j % 26] + digits
        j //= 26
        if j == 0:
            return "zq" + digits


def _feature_index(word):
    """The column of a feature_word; None for any other word."""
    if not word.startswith("zq") or len(word) < 3:
        return None
    j = 0
    for c in word[2:]:
        k = _LETTERS.find(c)
        if k < 0:
            return None
        j = j * 26 + k
    return j


def _counts(X):
    """X as a CSR matrix of non-negative integer counts."""
    X = sp.csr_matrix(X)
    if X.nnz and (X.data.min() < 0 or np.any(X.data != np.round(X.data))):
        raise ValueError("LatentdLDA needs non-negative integer counts "
                         "(a document-term matrix, as CountVectorizer makes)")
    X = X.astype(np.int64)
    X.eliminate_zeros()
    return X


class LatentdLDA(TransformerMixin, BaseEstimator):
    """Latent Dirichlet allocation trained by latentd's Gibbs sampler.

    Parameters (scikit-learn's LatentDirichletAllocation names where they
    exist):
      n_components      topics K
      max_iter          Gibbs sweeps of training
      doc_topic_prior   alpha_k of every topic (None: 1/K, scikit-learn's
                        default; latentctl's own is 50/K, too smooth for
                        short documents)
      topic_word_prior  beta (None: latentd's 0.01)
      optimize_alpha    learn an asymmetric alpha while training
      random_state      seed of training and of the fold-in (None: 1)
      n_jobs            sampler threads
      infer_iterations, infer_burn_in
                        fold-in sweeps of transform() and score()
      latentctl         path of latentctl (None: $LATENTCTL, else PATH)
      model_dir         where the model is kept (None: a temporary
                        directory, removed with the estimator)

    Fitted attributes: components_ (K x n_features, the topic-word counts
    plus topic_word_prior, as scikit-learn's are pseudo-counts: normalize
    a row for phi), n_features_in_, doc_topic_prior_ (alpha per topic),
    topic_word_prior_, seed_ (of training and the fold-in), model_dir_ (the
    latentd model directory: latentctl topics, export, ... read it).
    """

    def __init__(self, n_components=10, max_iter=100, doc_topic_prior=None,
                 topic_word_prior=None, optimize_alpha=False,
                 random_state=None, n_jobs=1, infer_iterations=50,
                 infer_burn_in=20, latentctl=None, model_dir=None):
        self.n_components = n_components
        self.max_iter = max_iter
        self.doc_topic_prior = doc_topic_prior
        self.topic_word_prior = topic_word_prior
        self.optimize_alpha = optimize_alpha
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.infer_iterations = infer_iterations
        self.infer_burn_in = infer_burn_in
        self.latentctl = latentctl
        self.model_dir = model_dir

    # ---- scikit-learn's API ----

    def fit(self, X, y=None):
        """Trains on the count matrix X (n_samples x n_features)."""
        X = _counts(X)
        if X.nnz == 0:
            raise ValueError("LatentdLDA.fit: every document is empty")
        self.n_features_in_ = X.shape[1]
        self.seed_ = self._draw_seed()
        if self.model_dir is not None:
            os.makedirs(self.model_dir, exist_ok=True)
            work = self.model_dir
        else:
            work = tempfile.mkdtemp(prefix="latentd-lda-")
            self._cleanup = weakref.finalize(self, shutil.rmtree, work, True)
        self.model_dir_ = os.path.join(work, "model")
        corpus, vocab = self._write_ldac(X, os.path.join(work, "train"))
        args = ["train", "--corpus", corpus, "--vocab", vocab,
                "--format", "ldac", "--topics", str(self.n_components),
                "--sweeps", str(self.max_iter), "--threads", str(self.n_jobs),
                "--seed", str(self._seed()), "--optimize-alpha",
                "on" if self.optimize_alpha else "off", "--out",
                self.model_dir_, "--overwrite"]
        alpha = self.doc_topic_prior
        if alpha is None:
            alpha = 1.0 / self.n_components  # scikit-learn's default
        args += ["--alpha", repr(float(alpha))]
        if self.topic_word_prior is not None:
            args += ["--beta", repr(float(self.topic_word_prior))]
        self._run(args)
        self._read_model()
        return self

    def transform(self, X):
        """The topic mixture theta of each row of X (rows sum to 1): fold-in
        against the trained model. A row without a word the model knows gets
        the prior, alpha normalized."""
        check_is_fitted(self, "components_")
        X = self._check_features(X)
        prior = self.doc_topic_prior_ / self.doc_topic_prior_.sum()
        theta = np.tile(prior, (X.shape[0], 1))
        lines = []
        for i in range(X.shape[0]):
            row = X.getrow(i)
            lines.append(" ".join(
                " ".join([feature_word(j)] * int(c))
                for j, c in zip(row.indices, row.data)))
        out = self._run(["infer", self.model_dir_, "--json", "--top",
                         str(self.n_components), "--seed",
                         str(self._seed()), "--iterations",
                         str(self.infer_iterations), "--burn-in",
                         str(self.infer_burn_in)],
                        stdin="\n".join(lines) + "\n")
        for line in out.splitlines():
            answer = json.loads(line)
            if "error" in answer:
                continue  # no known word: the prior stays
            row = np.zeros(self.n_components)
            for t in answer.get("topics", []):
                row[t.get("topic", 0)] = t.get("weight", 0.0)
            theta[answer["line"] - 1] = row / row.sum()
        return theta

    def score(self, X, y=None):
        """Held-out log-likelihood per token of X by document completion
        (latentctl evaluate): higher is better."""
        check_is_fitted(self, "components_")
        X = self._check_features(X)
        with tempfile.TemporaryDirectory(prefix="latentd-lda-") as tmp:
            corpus, vocab = self._write_ldac(X, tmp)
            out = self._run(["evaluate", self.model_dir_, "--corpus", corpus,
                             "--vocab", vocab, "--format", "ldac", "--json",
                             "--seed", str(self._seed()), "--iterations",
                             str(self.infer_iterations), "--burn-in",
                             str(self.infer_burn_in)])
        return float(json.loads(out)["logLikelihoodPerToken"])

    def perplexity(self, X):
        """exp(-score(X))."""
        return float(np.exp(-self.score(X)))

    # ---- latentd's files ----

    def _write_ldac(self, X, directory):
        """X as DIR/corpus.ldac and DIR/vocab.txt (one word per column)."""
        os.makedirs(directory, exist_ok=True)
        corpus = os.path.join(directory, "corpus.ldac")
        vocab = os.path.join(directory, "vocab.txt")
        with open(corpus, "w") as f:
            for i in range(X.shape[0]):
                row = X.getrow(i)
                pairs = " ".join(f"{j}:{c}"
                                 for j, c in zip(row.indices, row.data))
                f.write(f"{row.nnz} {pairs}\n" if row.nnz else "\n")
        with open(vocab, "w") as f:
            f.writelines(feature_word(j) + "\n" for j in range(X.shape[1]))
        return corpus, vocab

    def _read_model(self):
        """components_, doc_topic_prior_ and topic_word_prior_ from the
        model directory's text exports."""
        settings = {}
        with open(os.path.join(self.model_dir_, "settings.txt")) as f:
            for line in f:
                if "=" in line and not line.startswith("#"):
                    key, value = line.rstrip("\n").split("=", 1)
                    settings[key] = value
        self.topic_word_prior_ = float(settings["model.beta"])
        alpha = np.zeros(self.n_components)
        with open(os.path.join(self.model_dir_, "alpha.txt")) as f:
            for line in f:
                k, a = line.split()
                alpha[int(k)] = float(a)
        self.doc_topic_prior_ = alpha
        counts = np.zeros((self.n_components, self.n_features_in_))
        path = os.path.join(self.model_dir_, "word_topic_counts.tsv")
        with open(path) as f:
            for line in f:
                fields = line.rstrip("\n").split("\t")
                j = _feature_index(fields[0])
                if j is None or j >= self.n_features_in_:
                    raise ValueError(f"{path}: unexpected word {fields[0]!r}")
                for pair in fields[1:]:
                    k, c = pair.split(":")
                    counts[int(k), j] = float(c)
        self.components_ = counts + self.topic_word_prior_

    def _check_features(self, X):
        X = _counts(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features; LatentdLDA was "
                             f"fitted with {self.n_features_in_}")
        return X

    def _seed(self):
        """The seed fit() drew (an int random_state as it is)."""
        return self.seed_ if hasattr(self, "seed_") else self._draw_seed()

    def _draw_seed(self):
        if self.random_state is None:
            return 1
        if isinstance(self.random_state, (int, np.integer)):
            return int(self.random_state)
        return int(check_random_state(self.random_state).randint(1, 2**31 - 1))

    def _program(self):
        program = (self.latentctl or os.environ.get("LATENTCTL")
                   or shutil.which("latentctl"))
        if not program:
            raise FileNotFoundError(
                "latentctl not found: give LatentdLDA(latentctl=PATH), set "
                "$LATENTCTL, or put latentctl on PATH (build/cli/latentctl)")
        return program

    def _run(self, args, stdin=None):
        """Runs latentctl ARGS; its stdout, or RuntimeError with its stderr."""
        proc = subprocess.run([self._program()] + args, input=stdin,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"latentctl {args[0]} failed (exit "
                               f"{proc.returncode}): {proc.stderr.strip()}")
        return proc.stdout
