#!/usr/bin/env python3
"""User-profile scatter benchmark (issue 30): what GetUserProfile costs in a
cluster, where the user's owner asks every other member for its part of
the user (design.md, "Replicated ingestion") and adds them up, against
one daemon that holds every event itself.

Two configurations in one run, each on blei-ap at K=TOPICS, trained for
SWEEPS sweeps and then idle (so the figures are the queries' alone):
  single   one latentd on all of blei-ap;
  cluster  three latentd on its thirds (async, --replicas 2).
Each gets USERS users with EVENTS events of 20 AP words, ingested over
HTTP/JSON (in the cluster, each to a node drawn at random, which forwards
it to the user's owner), and waits until every profile answers. Then one
client asks for QUERIES profiles of random users, each from a random node
(the cluster's owner is then remote two times in three), over HTTP/JSON
with one connection per node, and prints latency percentiles and the
cluster's p50 and mean over the single node's.

Usage: ops/bench/profile_bench.py [--build build] [--users 200]
       [--events 5] [--queries 2000] [--topics 50] [--sweeps 20]
"""
import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from bench_cluster import (Node, metric, start_redis,  # noqa: E402
                           wait_until, write_ap_thirds, write_cluster_key)
import latentd  # noqa: E402


def ap_words(ap):
    """The vocabulary of blei-ap, one word per line."""
    out = subprocess.run(["zstdcat", os.path.join(ap, "vocab.txt.zst")],
                         check=True, capture_output=True, text=True)
    return [w for w in out.stdout.split() if w.isalpha()]


def run(o, name, nodes, words, rng):
    for n in nodes:
        n.start()
    for n in nodes:
        n.wait_up()
    wait_until(lambda: all((metric(n.http, "latentd_sweeps_total") or 0)
                           >= o.sweeps for n in nodes),
               300, f"{name}: {o.sweeps} sweeps")
    clients = [latentd.Client(n.http, timeout=30) for n in nodes]
    users = [f"u{i}" for i in range(o.users)]
    for u in users:
        for e in range(o.events):
            text = " ".join(rng.choice(words) for _ in range(20))
            rng.choice(clients).ingest(
                [latentd.Document(text=text, user=u, source=f"{u}/{e}")])
    # Events join the model at the owner's next sweep boundary.
    end = time.time() + 120
    waiting = list(users)
    while waiting and time.time() < end:
        left = []
        for u in waiting:
            try:
                p = clients[0].user_profile(u)
                if p.events < o.events:
                    left.append(u)
            except latentd.NotFoundError:
                left.append(u)
        waiting = left
        if waiting:
            time.sleep(0.2)
    if waiting:
        sys.exit(f"{name}: {len(waiting)} profiles incomplete after 120 s")
    lat = []
    began = time.perf_counter()
    for _ in range(o.queries):
        u = rng.choice(users)
        c = rng.choice(clients)
        t = time.perf_counter()
        p = c.user_profile(u)
        lat.append(time.perf_counter() - t)
        if p.missing_members:
            sys.exit(f"{name}: members missing from {u}'s profile: "
                     f"{p.missing_members}")
    wall = time.perf_counter() - began
    lat.sort()
    q = lambda f: lat[min(len(lat) - 1, int(f * len(lat)))] * 1e3  # noqa
    return {"p50": q(0.50), "p90": q(0.90), "p99": q(0.99),
            "mean": statistics.mean(lat) * 1e3, "rate": len(lat) / wall}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default="build")
    p.add_argument("--users", type=int, default=200)
    p.add_argument("--events", type=int, default=5)
    p.add_argument("--queries", type=int, default=2000)
    p.add_argument("--topics", type=int, default=50)
    p.add_argument("--sweeps", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data", default=os.environ.get("LATENTD_DATA_DIR",
                                                    "../shared/data"))
    o = p.parse_args()
    latentd_bin = os.path.join(o.build, "cli", "latentd")
    ap = os.path.join(o.data, "blei-ap")
    words = ap_words(ap)
    tmp = tempfile.mkdtemp(prefix="profile-bench-")
    redis = None
    nodes = []
    try:
        write_ap_thirds(ap, tmp)
        base = [latentd_bin, "--format", "ldac",
                "--vocab", os.path.join(ap, "vocab.txt.zst"),
                "--topics", str(o.topics), "--max-sweeps", str(o.sweeps)]
        print(f"# cores: {os.cpu_count()}; blei-ap, K={o.topics}, "
              f"{o.sweeps} sweeps then idle; {o.users} users x {o.events} "
              f"events; {o.queries} GetUserProfile over HTTP/JSON, one "
              "client, a random user from a random node")
        print(f"{'config':>8} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} "
              f"{'mean ms':>8} {'req/s':>8}")
        results = {}
        # single: all of AP in one store (the thirds, concatenated).
        single_dir = os.path.join(tmp, "single")
        os.mkdir(single_dir)
        with open(os.path.join(single_dir, "part0"), "w") as whole:
            for i in range(3):
                with open(os.path.join(tmp, f"part{i}")) as f:
                    whole.write(f.read())
        single = Node(0, single_dir, base)
        at = single.args.index("--cluster-listen")
        del single.args[at:at + 2]
        nodes = [single]
        results["single"] = run(o, "single", nodes, words,
                                random.Random(o.seed))
        single.stop()
        redis, url = start_redis(tmp)
        common = base + ["--cluster-size", "3", "--cluster", "bench",
                         "--cluster-redis", url,
                         "--cluster-key", write_cluster_key(tmp),
                         "--consistency", "async", "--replicas", "2"]
        nodes = [Node(i, tmp, common) for i in range(3)]
        results["cluster"] = run(o, "cluster", nodes, words,
                                 random.Random(o.seed))
        for name, r in results.items():
            print(f"{name:>8} {r['p50']:>8.2f} {r['p90']:>8.2f} "
                  f"{r['p99']:>8.2f} {r['mean']:>8.2f} {r['rate']:>8.0f}")
        s, c = results["single"], results["cluster"]
        print(f"cluster / single: p50 {c['p50'] / s['p50']:.2f}x, mean "
              f"{c['mean'] / s['mean']:.2f}x, p99 {c['p99'] / s['p99']:.2f}x")
    finally:
        for n in nodes:
            n.stop()
        if redis is not None:
            redis.terminate()
            redis.wait()
        if os.environ.get("LATENTD_KEEP_TEST_DIRS") is None:
            subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
