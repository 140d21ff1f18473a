#!/usr/bin/env python3
"""Topic coherence in a running latentd (127.0.0.1, ports the daemon picks,
read back from DATA_DIR/ports): with --coherence-seconds 3600 it is
computed at the first sweep and once more when sampling stops
(--max-sweeps), not in between; ListTopics carries each topic's
coherence_umass / coherence_npmi, Status the means (mean_coherence_umass,
mean_coherence_npmi) and the sweep they are for, /metrics the same values
as latentd_topic_coherence{measure,topic} and latentd_topic_coherence_mean;
all equal UMass and NPMI computed here from the corpus text for the top
words ListTopics reports. With --coherence-seconds 0 nothing is computed:
the fields are absent and the metrics NaN.

Usage: latentd_coherence_test.py LATENTD LATENTCTL
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from coherence_ref import Reference, close  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python"))
from latentd_process import LatentdProcess  # noqa: E402

LATENTD, CTL = sys.argv[1], sys.argv[2]
SWEEPS = 15
for name in ("http_proxy", "HTTP_PROXY"):
    os.environ.pop(name, None)


def fail(msg, log=None):
    print("FAIL:", msg)
    if log:
        print(open(log).read()[-3000:])
    sys.exit(1)


class Daemon(LatentdProcess):
    def __init__(self, name, corpus, *flags):
        super().__init__(
            LATENTD, "latentd_coherence_test_" + name,
            lambda d: ["--corpus", corpus, "--topics", "3", "--max-sweeps",
                       str(SWEEPS), *flags])
        self.log = self.log_path

    def ctl(self, *args):
        p = subprocess.run([CTL, *args, "--addr", self.http, "--protocol", "json",
                            "--json"], capture_output=True, text=True)
        if p.returncode != 0:
            fail(f"latentctl {' '.join(args)}: {p.stderr}", self.log)
        return json.loads(p.stdout)

    def metrics(self):
        with urllib.request.urlopen(f"http://{self.http}/metrics", timeout=10) as r:
            return r.read().decode()


def metric(text, name, labels):
    m = re.search(r"^" + re.escape(name + "{" + labels + "}") + r" (\S+)$", text, re.M)
    if m is None:
        fail(f"/metrics has no {name}{{{labels}}}")
    return float(m.group(1))


def same(metric_value, api_value):
    return (api_value is None and math.isnan(metric_value)) or close(metric_value, api_value)


with tempfile.TemporaryDirectory() as tmp:
    themes = ["oil prices opec crude barrel energy market",
              "football match goal team player season",
              "court judge trial jury lawyer verdict appeal"]
    lines = []
    for d in range(90):
        words = themes[d % 3].split()[: 3 + d % 5]
        if d % 4 == 0:
            words += themes[(d + 1) % 3].split()[:2]
        lines.append(" ".join(words))
    corpus = os.path.join(tmp, "corpus.txt")
    with open(corpus, "w") as f:
        f.write("\n".join(lines) + "\n")
    ref = Reference(l.split() for l in lines)

    daemon = Daemon("node", corpus, "--coherence-seconds", "3600")
    try:
        deadline = time.monotonic() + 60
        while True:
            status = daemon.ctl("status")
            if not status.get("training") and int(status.get("coherenceSweep", 0)) == SWEEPS:
                break
            if time.monotonic() > deadline:
                fail(f"no coherence for the final sweep: {status}", daemon.log)
            time.sleep(0.1)
        if status.get("coherenceTopWords") != 10 or int(status["coherenceDocuments"]) != 90:
            fail(f"status: {status}")
        topics = daemon.ctl("topics", "--top", "10")
        if int(topics["version"]["sweep"]) != SWEEPS:
            fail(f"topics of sweep {topics['version']}")
        umass, npmi = [], []
        for t in topics["topics"]:
            words = [w["word"] for w in t["topWords"]]
            want_u, want_n = ref.umass(words), ref.npmi(words)
            if not close(t.get("coherenceUmass"), want_u) or not close(t.get("coherenceNpmi"), want_n):
                fail(f"topic {t.get('id', 0)} {words}: umass {t.get('coherenceUmass')} npmi "
                     f"{t.get('coherenceNpmi')}, from the corpus {want_u} {want_n}")
            umass.append(want_u)
            npmi.append(want_n)
        if not close(status.get("meanCoherenceUmass"), sum(umass) / len(umass)) or \
                not close(status.get("meanCoherenceNpmi"), sum(npmi) / len(npmi)):
            fail(f"status means {status.get('meanCoherenceUmass')} "
                 f"{status.get('meanCoherenceNpmi')}, topics {umass} {npmi}")
        text = daemon.metrics()
        for k, t in enumerate(topics["topics"]):
            for measure, field in (("umass", "coherenceUmass"), ("npmi", "coherenceNpmi")):
                got = metric(text, "latentd_topic_coherence", f'measure="{measure}",topic="{k}"')
                if not same(got, t.get(field)):
                    fail(f"/metrics {measure} topic {k}: {got}, API {t.get(field)}")
        for measure, field in (("umass", "meanCoherenceUmass"), ("npmi", "meanCoherenceNpmi")):
            if not same(metric(text, "latentd_topic_coherence_mean", f'measure="{measure}"'),
                        status.get(field)):
                fail(f"/metrics mean {measure}")
        # Computed at the first sweep and at the last, not in between.
        log = open(daemon.log).read()
        sweeps = re.findall(r"coherence at sweep (\d+) \(top 10 words, 90 documents", log)
        if sweeps[-1] != str(SWEEPS) or len(sweeps) > 3:
            fail(f"coherence computed at sweeps {sweeps}", daemon.log)
        # GetTopic carries it too.
        one = daemon.ctl("topics", "--top", "10", "--topic", "1")
        if not close(one["topics"][0].get("coherenceNpmi") if "topics" in one else
                     one["topic"].get("coherenceNpmi"), topics["topics"][1].get("coherenceNpmi")):
            fail(f"GetTopic: {one}")
    finally:
        daemon.stop()

    off = Daemon("off", corpus, "--coherence-seconds", "0")
    try:
        deadline = time.monotonic() + 60
        while off.ctl("status").get("training"):
            if time.monotonic() > deadline:
                fail("still training", off.log)
            time.sleep(0.1)
        status = off.ctl("status")
        if "meanCoherenceUmass" in status or int(status.get("coherenceSweep", 0)) != 0:
            fail(f"coherence computed with --coherence-seconds 0: {status}")
        if any("coherenceUmass" in t for t in off.ctl("topics")["topics"]):
            fail("topics carry coherence with --coherence-seconds 0")
        if not math.isnan(metric(off.metrics(), "latentd_topic_coherence_mean", 'measure="npmi"')):
            fail("mean metric is not NaN before any computation")
    finally:
        off.stop()

print("PASS")
