"""Checks the status page's topic map (its DOM, dumped by Chromium)
against the model the daemon serves: one circle per topic, and the
circles' coordinates (data-x, data-y) are the classical MDS of the topics'
Jensen-Shannon divergences computed here independently from ExportModel:
each axis an eigenvector of B = -1/2 J D^2 J with eigenvalue its squared
length, the first the largest eigenvalue (power iteration), the second not
larger. Standard library only.

Usage: topic_map_check.py HTTP_ADDRESS DOM_FILE (exit 1 with the reason).
"""

import json
import math
import random
import re
import sys
import urllib.request


def call(address, method, request):
    req = urllib.request.Request(
        f"http://{address}/v1/{method}", data=json.dumps(request).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as res:
        return json.load(res)


def model(address):
    first, vocabulary, pages = 0, 1, []
    while first < vocabulary:
        page = call(address, "ExportModel", {"firstWord": first})
        vocabulary = int(page["vocabulary"])
        pages.append(page)
        first += len(page.get("words", []))
        if not page.get("words"):
            break
    if len({p["version"]["view"] for p in pages}) != 1:
        sys.exit("the model moved while exported: run again")
    k = int(pages[0]["topics"])
    counts = [[0] * vocabulary for _ in range(k)]
    i = 0
    for p in pages:
        for w in p.get("words", []):
            for t, c in zip(w.get("topics", []), w.get("counts", [])):
                counts[t][i] = int(c)
            i += 1
    tokens = [int(x) for x in pages[0]["topicTokens"]]
    return float(pages[0]["beta"]), tokens, counts


def main():
    address, dom = sys.argv[1], open(sys.argv[2], encoding="utf-8").read()
    beta, tokens, counts = model(address)
    k, v = len(tokens), len(counts[0])
    circles = re.findall(r'<circle class="topic-circle" data-topic="(\d+)" '
                         r'data-x="([^"]+)" data-y="([^"]+)"[^>]* r="([^"]+)"',
                         dom)
    if sorted(int(c[0]) for c in circles) != list(range(k)):
        sys.exit(f"not one circle per topic 0..{k - 1}: {circles}")
    xy = {int(t): (float(x), float(y)) for t, x, y, _ in circles}
    radius = {int(t): float(r) for t, _, _, r in circles}
    by_tokens = sorted(range(k), key=lambda t: -tokens[t])
    if any(radius[a] < radius[b] for a, b in zip(by_tokens, by_tokens[1:])):
        sys.exit(f"radii {radius} not ordered as the topics' tokens {tokens}")
    phi = [[(c + beta) / (tokens[t] + v * beta) for c in counts[t]]
           for t in range(k)]

    def jsd(p, q):
        s = 0.0
        for a, b in zip(p, q):
            m = (a + b) / 2
            s += a * math.log(a / m) + b * math.log(b / m)
        return s / 2

    d2 = [[0.0] * k for _ in range(k)]
    for i in range(k):
        for j in range(i + 1, k):
            d2[i][j] = d2[j][i] = jsd(phi[i], phi[j]) ** 2
    rm = [sum(r) / k for r in d2]
    mm = sum(rm) / k
    b = [[-0.5 * (d2[i][j] - rm[i] - rm[j] + mm) for j in range(k)]
         for i in range(k)]
    lams = []
    for axis in range(2):
        vec = [xy[t][axis] for t in range(k)]
        lam = sum(x * x for x in vec)
        bv = [sum(b[i][j] * vec[j] for j in range(k)) for i in range(k)]
        err = max(abs(bv[i] - lam * vec[i]) for i in range(k))
        if err > 1e-6 * max(lam, 1e-12) + 1e-12:
            sys.exit(f"axis {axis + 1} is not an eigenvector of B: {err}")
        lams.append(lam)
    x = [random.Random(1).random() for _ in range(k)]
    for _ in range(5000):
        y = [sum(b[i][j] * x[j] for j in range(k)) for i in range(k)]
        n = math.sqrt(sum(t * t for t in y)) or 1
        x = [t / n for t in y]
    top = sum(x[i] * sum(b[i][j] * x[j] for j in range(k)) for i in range(k))
    if abs(lams[0] - top) > 1e-6 * top or lams[1] > lams[0] + 1e-12:
        sys.exit(f"eigenvalues {lams}, the largest is {top}")
    print(f"topic map: {k} circles, eigenvalues {lams[0]:.4g} {lams[1]:.4g} "
          "as computed here")


if __name__ == "__main__":
    main()
