#!/usr/bin/env python3
"""latentctl coherence and the coherence train prints, end to end: the
values latentctl reports for each topic's top words equal the UMass and
NPMI definitions of sampler/coherence.h computed here, independently, from
the corpus text; the training store and the same corpus given as --corpus
give the same numbers; train prints the means and puts them in --json.

Usage: coherence_test.py LATENTCTL
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from coherence_ref import Reference, close  # noqa: E402

CTL = sys.argv[1]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(*args, ok=True):
    p = subprocess.run([CTL, *args], capture_output=True, text=True)
    if ok and p.returncode != 0:
        fail(f"{' '.join(args)}: {p.returncode}: {p.stderr}")
    return p


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

    ref = Reference(l.split() for l in lines)
    n = ref.n

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
                want_u, want_n = ref.umass(words), ref.npmi(words)
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
