#!/usr/bin/env python3
"""Replication cost benchmark (issue 13): three latentd daemons training
blei-ap thirds under async, once with --replicas 1 and once with
--replicas 2, in the same run; for each, over WINDOW seconds of steady
training (after WARMUP sweeps everywhere):

  tokens/s        the cluster's, sum of latentd_tokens_sampled_total
  sync B/token    delta batches to remote owners
                  (latentd_cluster_sync_bytes_sent_total) per token
  copy B/token    key-state copies the backups acknowledged
                  (latentd_cluster_replica_bytes_sent_total) per token

and the ratio of k=2 to k=1. The failover time over 10 kills (with the
default --replicas 2) is ops/bench/failover_bench.sh's. On a 2-core
machine the three nodes share the cores: tokens/s is the cluster's total
on what it gets, and comparable between the two runs only as a ratio.

Usage: ops/bench/replication_bench.py --build build [--topics 10]
       [--window 20] [--warmup 3] [--rounds 2]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cluster import (Node, metric, start_redis,  # noqa: E402
                           write_ap_thirds, write_cluster_key)


def totals(nodes):
    out = [0.0, 0.0, 0.0]
    for n in nodes:
        for j, name in enumerate(["latentd_tokens_sampled_total",
                                  "latentd_cluster_sync_bytes_sent_total",
                                  "latentd_cluster_replica_bytes_sent_total"]):
            out[j] += metric(n.http, name) or 0.0
    return out, time.time()


def run(o, replicas, tmp_root):
    latentd = os.path.join(o.build, "cli", "latentd")
    ap = os.path.join(o.data, "blei-ap")
    tmp = tempfile.mkdtemp(prefix=f"k{replicas}-", dir=tmp_root)
    redis, url = start_redis(tmp)
    nodes = []
    try:
        for i in range(3):
            os.symlink(os.path.join(tmp_root, f"part{i}"),
                       os.path.join(tmp, f"part{i}"))
        key = write_cluster_key(tmp)
        common = [latentd, "--format", "ldac",
                  "--vocab", os.path.join(ap, "vocab.txt.zst"),
                  "--topics", str(o.topics), "--max-sweeps", "1000000",
                  "--cluster-size", "3", "--cluster", "bench",
                  "--cluster-redis", url, "--cluster-key", key,
                  "--consistency", "async", "--replicas", str(replicas)]
        nodes = [Node(i, tmp, common) for i in range(3)]
        for n in nodes:
            n.start()
        for n in nodes:
            n.wait_up()
        while min(metric(n.http, "latentd_sweeps_total") or 0
                  for n in nodes) < o.warmup:
            time.sleep(0.1)
        a = totals(nodes)
        time.sleep(o.window)
        b = totals(nodes)
        tok = b[0][0] - a[0][0]
        return (tok / (b[1] - a[1]), (b[0][1] - a[0][1]) / max(tok, 1),
                (b[0][2] - a[0][2]) / max(tok, 1))
    finally:
        for n in nodes:
            n.stop()
        redis.terminate()
        redis.wait()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default="build")
    p.add_argument("--topics", type=int, default=10)
    p.add_argument("--window", type=float, default=20.0)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--data", default=os.environ.get("LATENTD_DATA_DIR",
                                                    "../shared/data"))
    o = p.parse_args()
    tmp_root = tempfile.mkdtemp(prefix="replication-bench-")
    try:
        write_ap_thirds(os.path.join(o.data, "blei-ap"), tmp_root)
        print(f"# cores: {os.cpu_count()}; 3 nodes, blei-ap thirds, "
              f"K={o.topics}, async, {o.window:.0f} s after {o.warmup} "
              f"sweeps; k=1 and k=2 alternating, {o.rounds} round(s)")
        print(f"{'k':>2} {'tokens/s':>10} {'sync B/token':>12} "
              f"{'copy B/token':>12}")
        res = {1: [], 2: []}
        for _ in range(o.rounds):
            for k in (1, 2):
                r = run(o, k, tmp_root)
                res[k].append(r)
                print(f"{k:>2} {r[0]:>10.0f} {r[1]:>12.3f} {r[2]:>12.3f}",
                      flush=True)
        mean = {k: [sum(x[j] for x in v) / len(v) for j in range(3)]
                for k, v in res.items()}
        one, two = mean[1], mean[2]
        print(f"k=2 / k=1: tokens/s {two[0] / one[0]:.3f}x; bytes/token "
              f"(sync + copies) {(two[1] + two[2]) / max(one[1], 1e-9):.3f}x "
              f"(copies {two[2]:.3f} B/token on top of sync "
              f"{two[1]:.3f})")
    finally:
        if os.environ.get("LATENTD_KEEP_TEST_DIRS") is None:
            subprocess.run(["rm", "-rf", tmp_root])


if __name__ == "__main__":
    main()
