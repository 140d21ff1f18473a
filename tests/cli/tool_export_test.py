#!/usr/bin/env python3
"""latentctl export DIR --format pyldavis|mallet|csv, read back the way the
target tools read the files (Python standard library only):

- pyldavis.json: json.load, then the checks of pyLDAvis.prepare's
  _input_check (its documented arguments exactly, shapes K x V, D x K, D, V,
  V; every distribution row sums to 1 — pyLDAvis refuses rows under 0.999)
  and what the visualisation relies on (doc lengths add up to the tokens,
  term frequencies too).
- Mallet: the state file through gzip like gensim's LdaMallet and Mallet's
  own --input-state (three '#' lines, '#alpha : ' floats, '#beta : ',
  then six space-separated fields per token); doc-topics line by line
  (doc, name, K proportions); topic keys (topic, alpha, words). The files
  agree with each other: counts from the state reproduce doc-topics and
  the topic keys' word order, and the model's word_topic_counts.tsv.
- csv: the csv module; headers, shape, row sums.

Usage: tool_export_test.py LATENTCTL
"""
import csv
import gzip
import json
import os
import subprocess
import sys
import tempfile

CTL = sys.argv[1]
K = 4


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(*args, ok=True):
    p = subprocess.run([CTL, *args], capture_output=True, text=True)
    if ok and p.returncode != 0:
        fail(f"{' '.join(args)}: {p.returncode}: {p.stderr}")
    return p


def close(a, b, tol=1e-6):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


with tempfile.TemporaryDirectory() as tmp:
    corpus = os.path.join(tmp, "corpus.txt")
    with open(corpus, "w") as f:
        for d in range(90):
            f.write(["oil prices opec crude barrel energy oil market",
                     "football match goal team player season goal",
                     "court judge trial jury lawyer verdict appeal"][d % 3])
            f.write(" weather\n" if d % 4 == 0 else "\n")
    model = os.path.join(tmp, "model")
    run("train", "--corpus", corpus, "--topics", str(K), "--sweeps", "15",
        "--out", model, "--json")
    tokens = 0
    word_topic = {}  # (word, topic) -> count, the model's own text export
    with open(os.path.join(model, "word_topic_counts.tsv")) as f:
        for line in f:
            word, *pairs = line.rstrip("\n").split("\t")
            for p in pairs:
                k, n = p.split(":")
                word_topic[(word, int(k))] = int(n)
                tokens += int(n)
    alpha_file = [float(l.split("\t")[1]) for l in open(os.path.join(model, "alpha.txt"))]

    # ---- pyLDAvis ----
    out = os.path.join(tmp, "vis")
    p = run("export", model, "--format", "pyldavis", "--out", out, "--json")
    summary = json.loads(p.stdout)
    if summary["files"] != ["pyldavis.json"] or summary["topics"] != K:
        fail(f"--json summary: {p.stdout}")
    with open(os.path.join(out, "pyldavis.json")) as f:
        vis = json.load(f)
    prepare_args = {"topic_term_dists", "doc_topic_dists", "doc_lengths",
                    "vocab", "term_frequency"}
    if set(vis) != prepare_args:
        fail(f"pyldavis.json keys {sorted(vis)} are not prepare's {sorted(prepare_args)}")
    ttd, dtd = vis["topic_term_dists"], vis["doc_topic_dists"]
    V, D = len(vis["vocab"]), len(vis["doc_lengths"])
    if len(ttd) != K or any(len(r) != V for r in ttd):
        fail("topic_term_dists is not K x V")
    if len(dtd) != D or any(len(r) != K for r in dtd):
        fail("doc_topic_dists is not D x K")
    if len(vis["term_frequency"]) != V or D != 90:
        fail(f"term_frequency has {len(vis['term_frequency'])} entries for V = {V}; D = {D}")
    for name, rows in (("topic_term_dists", ttd), ("doc_topic_dists", dtd)):
        for i, r in enumerate(rows):
            if not close(sum(r), 1.0) or min(r) <= 0:
                fail(f"{name} row {i} sums to {sum(r)} (min {min(r)})")
    if sum(vis["doc_lengths"]) != tokens or sum(vis["term_frequency"]) != tokens:
        fail(f"doc_lengths sum {sum(vis['doc_lengths'])}, term_frequency sum "
             f"{sum(vis['term_frequency'])}, model tokens {tokens}")
    vocab = vis["vocab"]
    for w, word in enumerate(vocab):
        n = sum(word_topic.get((word, k), 0) for k in range(K))
        if vis["term_frequency"][w] != n:
            fail(f"term_frequency of {word}: {vis['term_frequency'][w]}, model {n}")
    # Smoothed like the model: phi = (n_wk + beta) / (n_k + V beta).
    beta = float([l for l in open(os.path.join(model, "settings.txt"))
                  if l.startswith("model.beta=")][0].split("=")[1])
    n_k = [sum(n for (w, k), n in word_topic.items() if k == t) for t in range(K)]
    for k in range(K):
        for w in (0, V - 1):
            want = (word_topic.get((vocab[w], k), 0) + beta) / (n_k[k] + V * beta)
            if not close(ttd[k][w], want, 1e-7):
                fail(f"phi[{k}][{w}] = {ttd[k][w]}, want {want}")

    # ---- Mallet ----
    out = os.path.join(tmp, "mallet")
    run("export", model, "--format", "mallet", "--out", out, "--top", "5")
    with gzip.open(os.path.join(out, "mallet_state.gz"), "rt") as f:
        header = next(f)
        if header != "#doc source pos typeindex type topic\n":
            fail(f"state header {header!r}")
        line = next(f)
        if not line.startswith("#alpha : "):
            fail(f"alpha line {line!r}")
        alpha = [float(a) for a in line[len("#alpha : "):].split()]
        line = next(f)
        if not line.startswith("#beta : "):
            fail(f"beta line {line!r}")
        state_beta = float(line[len("#beta : "):])
        state = []
        for line in f:
            fields = line.rstrip("\n").split(" ")
            if len(fields) != 6:
                fail(f"state line {line!r} has {len(fields)} fields")
            doc, source, pos, typeindex, word, topic = fields
            state.append((int(doc), source, int(pos), int(typeindex), word, int(topic)))
    if len(alpha) != K or not all(close(a, b) for a, b in zip(alpha, alpha_file)):
        fail(f"state alpha {alpha}, alpha.txt {alpha_file}")
    if not close(state_beta, beta):
        fail(f"state beta {state_beta}, model {beta}")
    if len(state) != tokens:
        fail(f"state has {len(state)} tokens, model {tokens}")
    counts, doc_topic, doc_len = {}, {}, {}
    for doc, source, pos, typeindex, word, topic in state:
        if vocab[typeindex] != word or source != "NA" or not 0 <= topic < K:
            fail(f"state token {doc} {source} {pos} {typeindex} {word} {topic}")
        if pos != doc_len.get(doc, 0):
            fail(f"doc {doc}: position {pos} out of order")
        doc_len[doc] = pos + 1
        counts[(word, topic)] = counts.get((word, topic), 0) + 1
        doc_topic[(doc, topic)] = doc_topic.get((doc, topic), 0) + 1
    if counts != word_topic:
        fail("the state's word-topic counts are not word_topic_counts.tsv's")
    alpha_sum = sum(alpha)
    with open(os.path.join(out, "mallet_doc_topics.txt")) as f:
        rows = [l.rstrip("\n").split("\t") for l in f]
    if len(rows) != D:
        fail(f"doc-topics has {len(rows)} lines for {D} documents")
    for d, r in enumerate(rows):
        if len(r) != 2 + K or int(r[0]) != d or r[1] != str(d + 1):
            fail(f"doc-topics line {d}: {r}")
        for k in range(K):
            want = (doc_topic.get((d, k), 0) + alpha[k]) / (doc_len[d] + alpha_sum)
            if not close(float(r[2 + k]), want, 1e-12):
                fail(f"doc {d} topic {k}: {r[2 + k]}, from the state {want}")
    with open(os.path.join(out, "mallet_topic_keys.txt")) as f:
        keys = [l.rstrip("\n").split("\t") for l in f]
    if len(keys) != K:
        fail(f"{len(keys)} topic keys for {K} topics")
    for k, (topic, a, words) in enumerate(keys):
        if int(topic) != k or not close(float(a), alpha[k], 1e-4) or not words.endswith(" "):
            fail(f"topic key line {k}: {keys[k]}")
        words = words.split()
        by_count = sorted(((n, vocab.index(w)) for (w, t), n in counts.items() if t == k),
                          key=lambda x: (-x[0], x[1]))
        want = [vocab[i] for _, i in by_count[:5]]
        if words != want:
            fail(f"topic {k} keys {words}, by the state's counts {want}")

    # ---- csv ----
    out = os.path.join(tmp, "csv")
    run("export", model, "--format", "csv", "--out", out)
    with open(os.path.join(out, "doc_topic.csv"), newline="") as f:
        rows = list(csv.reader(f))
    if rows[0] != ["doc", "id"] + [f"topic_{k}" for k in range(K)] or len(rows) != D + 1:
        fail(f"doc_topic.csv header {rows[0]}, {len(rows)} rows")
    for r in rows[1:]:
        if not close(sum(map(float, r[2:])), 1.0, 1e-6):
            fail(f"doc_topic.csv row {r}")
        if not close(float(r[2]), dtd[int(r[0])][0], 1e-8):
            fail(f"doc_topic.csv row {r[0]} disagrees with pyldavis.json")
    with open(os.path.join(out, "topic_word.csv"), newline="") as f:
        rows = list(csv.reader(f))
    if rows[0] != ["topic"] + vocab or len(rows) != K + 1:
        fail(f"topic_word.csv header {rows[0][:5]}..., {len(rows)} rows")
    for k, r in enumerate(rows[1:]):
        if int(r[0]) != k or not close(sum(map(float, r[1:])), 1.0, 1e-6):
            fail(f"topic_word.csv row {k}")

    # ---- refusals ----
    p = run("export", model, ok=False)
    if p.returncode != 2 or "--format" not in p.stderr:
        fail(f"no --format: {p.returncode} {p.stderr}")
    p = run("export", model, "--format", "gensim", ok=False)
    if p.returncode == 0:
        fail("--format gensim accepted")
    fetched = os.path.join(tmp, "fetched")
    os.mkdir(fetched)
    for f in ("model.bin", "vocab.txt", "settings.txt"):
        with open(os.path.join(model, f), "rb") as src, open(os.path.join(fetched, f), "wb") as dst:
            dst.write(src.read())
    p = run("export", fetched, "--format", "csv", ok=False)
    if p.returncode != 1 or "tokens.lts" not in p.stderr:
        fail(f"no token store: {p.returncode} {p.stderr}")
    # The exports count as the model's files: train --overwrite removes them.
    run("export", model, "--format", "csv")
    run("train", "--corpus", corpus, "--topics", "2", "--sweeps", "1",
        "--out", model, "--overwrite", "--json")
    if os.path.exists(os.path.join(model, "doc_topic.csv")):
        fail("train --overwrite kept the old model's doc_topic.csv")

print("PASS")
