#!/usr/bin/env python3
"""latentctl coherence and the coherence train prints, end to end: the
values latentctl reports for each topic's top words equal the UMass and
NPMI definitions of sampler/coherence.h computed here, independently, from
the corpus text; the training store and the same corpus given as --corpus
give the same numbers; train prints the means and puts them in --json.

Usage: coherence_test.py LATENTCTL
"""
import json
import math
import os
import subprocess
import sys
import tempfile

CTL = sys.argv[1]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(*args, ok=True):
    p = subprocess.run([CTL, *args], capture_output=True, text=True)
    if ok and p.returncode != 0:
        fail(f"{' '.join(args)}: {p.returncode}: {p.stderr}")
    return p


def umass(words, D, D2):
    terms = [math.log((D2(words[m], words[l]) + 1) / D(words[l]))
             for m in range(1, len(words)) for l in range(m) if D(words[l]) > 0]
    return sum(terms) / len(terms) if terms else None


def npmi(words, D, D2, n):
    vals = []
    for i in range(len(words)):
        for j in range(i + 1, len(words)):
            joint = D2(words[i], words[j])
            if joint == 0:
                vals.append(-1.0)
            elif joint == n:
                vals.append(1.0)
            else:
                p = joint / n
                vals.append(math.log(p / (D(words[i]) / n * D(words[j]) / n)) / -math.log(p))
    return sum(vals) / len(vals) if vals else None


def close(a, b):
    return (a is None and b is None) or (a is not None and b is not None and abs(a - b) < 1e-9)


with tempfile.TemporaryDirectory() as tmp:
    corpus = os.path.join(tmp, "corpus.txt")
    themes = ["oil prices opec crude barrel energy market",
              "football match goal team player season",
              "court judge trial jury lawyer verdict appeal"]
    lines = []
    for d in range(60):
        words = themes[d % 3].split()
        # Documents of different lengths, some mixing two themes.
        words = words[: 3 + d % 5] + (themes[(d + 1) % 3].split()[:2] if d % 4 == 0 else [])
        lines.append(" ".join(words))
    with open(corpus, "w") as f:
        f.write("\n".join(lines) + "\n")
    model = os.path.join(tmp, "model")
    p = run("train", "--corpus", corpus, "--topics", "3", "--sweeps", "20",
            "--out", model, "--json")
    summary = json.loads(p.stdout)
    if "coherence (top 10 words, 60 documents): UMass " not in p.stderr:
        fail(f"train did not print the coherence line: {p.stderr}")

    docs = [set(l.split()) for l in lines]
    n = len(docs)
    D = lambda w: sum(w in d for d in docs)
    D2 = lambda u, v: sum(u in d and v in d for d in docs)

    for args in ([], ["--corpus", corpus, "--format", "lines"]):
        for top in ("5", "10"):
            out = json.loads(run("coherence", model, "--top", top, "--json", *args).stdout)
            if out["documents"] != n or out["topWords"] != int(top):
                fail(f"{args}: {out['documents']} documents, top {out['topWords']}")
            got_u, got_n = [], []
            for t in out["topics"]:
                words = t["words"]
                if not 2 <= len(words) <= int(top):
                    fail(f"topic {t['topic']} has {len(words)} words")
                want_u, want_n = umass(words, D, D2), npmi(words, D, D2, n)
                if not close(t.get("umass"), want_u) or not close(t.get("npmi"), want_n):
                    fail(f"{args} topic {t['topic']} {words}: umass {t.get('umass')} "
                         f"npmi {t.get('npmi')}, by hand {want_u} {want_n}")
                got_u.append(want_u)
                got_n.append(want_n)
            if not close(out["meanUmass"], sum(got_u) / len(got_u)) or \
                    not close(out["meanNpmi"], sum(got_n) / len(got_n)):
                fail(f"means {out['meanUmass']} {out['meanNpmi']}")
            if top == "10" and not args and (
                    not close(summary["coherenceUmass"], out["meanUmass"]) or
                    not close(summary["coherenceNpmi"], out["meanNpmi"])):
                fail(f"train --json {summary} disagrees with coherence {out}")

    # Text form: a line per topic and the means.
    text = run("coherence", model).stdout.splitlines()
    if text[1] != "topic\tumass\tnpmi\twords" or len(text) != 2 + 3 + 1 or \
            not text[-1].startswith("mean\t"):
        fail(f"text output: {text}")
    # Bad input: clear errors, no crash.
    p = run("coherence", model, "--top", "1", ok=False)
    if p.returncode == 0:
        fail("--top 1 accepted")
    p = run("coherence", model, "--corpus", os.path.join(tmp, "nope"), ok=False)
    if p.returncode != 1 or "nope" not in p.stderr:
        fail(f"missing corpus: {p.returncode} {p.stderr}")
    p = run("coherence", os.path.join(tmp, "nomodel"), ok=False)
    if p.returncode == 0 or "nomodel" not in p.stderr:
        fail(f"missing model: {p.returncode} {p.stderr}")

print("PASS")
