"""A latentd model directory as a gensim LdaModel.

write_gensim(model_dir, out_dir) reads the text files `latentctl train`
writes into a model directory (vocab.txt, word_topic_counts.tsv, alpha.txt,
settings.txt) and saves a gensim.models.LdaModel as OUT_DIR/lda.gensim
(with gensim's companions lda.gensim.state, lda.gensim.id2word, ...), so
that gensim's tools (show_topics, get_document_topics, CoherenceModel,
pyLDAvis' gensim adapter) work on a latentd model:

    from gensim.models import LdaModel
    lda = LdaModel.load("OUT_DIR/lda.gensim")

The model's topic-word state (gensim's sstats) is latentd's counts n_kw and
eta its beta, so get_topics() is latentd's phi_kw = (n_kw + beta) /
(n_k + V beta); alpha is latentd's alpha per topic. id2word is a gensim
Dictionary of the model's vocabulary in its order (word i = vocab.txt line
i), with collection frequencies n_w. Nothing else of gensim's training
state is meaningful: train further with gensim at your own risk.

`latentctl export DIR --format gensim` runs this file (embedded in
latentctl at build time) with python3; `python3 -m latentd.gensim_export
MODEL_DIR OUT_DIR` does the same. Needs numpy and gensim (Debian:
python3-gensim).
"""

import os
import sys

GENSIM_FILE = "lda.gensim"


def read_model_dir(model_dir):
    """(words, counts K x V, alpha, beta) from a latentd model directory."""
    import numpy as np

    def lines(name):
        path = os.path.join(model_dir, name)
        try:
            with open(path, encoding="utf-8") as f:
                return f.read().splitlines()
        except OSError as e:
            raise SystemExit(f"{path}: {e.strerror} (a model directory "
                             "`latentctl train` wrote has it)")

    words = lines("vocab.txt")
    index = {w: i for i, w in enumerate(words)}
    alpha = {}
    for line in lines("alpha.txt"):
        k, a = line.split("\t")
        alpha[int(k)] = float(a)
    num_topics = len(alpha)
    beta = None
    for line in lines("settings.txt"):
        if line.startswith("model.beta="):
            beta = float(line.split("=", 1)[1])
    if beta is None:
        raise SystemExit(f"{model_dir}/settings.txt: no model.beta")
    counts = np.zeros((num_topics, len(words)), dtype=np.float64)
    for line in lines("word_topic_counts.tsv"):
        fields = line.split("\t")
        w = index[fields[0]]
        for pair in fields[1:]:
            k, c = pair.split(":")
            counts[int(k), w] = float(c)
    return words, counts, np.array([alpha[k] for k in range(num_topics)]), beta


def write_gensim(model_dir, out_dir):
    """Saves the model of `model_dir` as OUT_DIR/lda.gensim; returns the
    path."""
    import numpy as np
    from gensim.corpora import Dictionary
    from gensim.models import LdaModel

    words, counts, alpha, beta = read_model_dir(model_dir)
    dictionary = Dictionary()
    dictionary.token2id = {w: i for i, w in enumerate(words)}
    dictionary.id2token = dict(enumerate(words))
    dictionary.cfs = {i: int(c) for i, c in enumerate(counts.sum(axis=0))}
    dictionary.num_pos = int(counts.sum())
    lda = LdaModel(num_topics=len(alpha), id2word=dictionary, alpha=alpha,
                   eta=beta, dtype=np.float64, random_state=1)
    lda.state.sstats[...] = counts
    lda.sync_state()
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, GENSIM_FILE)
    lda.save(path)
    return path


def main(argv):
    if len(argv) != 3:
        raise SystemExit(f"usage: {argv[0]} MODEL_DIR OUT_DIR")
    print(write_gensim(argv[1], argv[2]))


if __name__ == "__main__":
    main(sys.argv)
