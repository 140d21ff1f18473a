#!/usr/bin/env python3
"""Failover benchmark (issue 13): the time from a kill -9 to the first sync
round completed by the new owners, over N kills, and the survivors'
tokens/s before, during and after each failover.

Three latentd daemons (cluster mode, async, --failure-timeout F, default
1 s) train the thirds of blei-ap (document d on node d % 3), K topics, with
a private redis-server on a Unix socket; every port is on 127.0.0.1. Kill i
sends SIGKILL to node i % 3 mid-training, then:

  detect    kill -> a survivor declares it down: the failover move's
            startedMs (Redis's clock, this machine's) minus the kill time
  failover  kill -> the first sync round the new owners complete: detect
            plus the slowest survivor's latentd_cluster_last_failover_seconds
            (detection -> its first round with the new owners, ClusterLink)
  before    the survivors' tokens/s (latentd_tokens_sampled_total) over the
            WINDOW seconds before the kill
  during    over kill -> both survivors report the failover done
  after     over the WINDOW seconds after that
  return    the killed node restarted from its data directory -> back in
            the ring (the add move done); the next kill waits for it

Prints one row per kill and a summary (failover min/median/max; mean
tokens/s before/during/after and their ratio to before). On a shared
2-core machine the three nodes share the cores: tokens/s are the
survivors' on what they get.

Usage: ops/bench/failover_bench.py --build build [--kills 10] [--topics 10]
       [--failure-timeout 1] [--window 1]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cluster import (Node, metric, start_redis,  # noqa: E402
                           wait_until, write_ap_thirds, write_cluster_key)


def tokens(nodes):
    total = 0.0
    for n in nodes:
        v = metric(n.http, "latentd_tokens_sampled_total")
        total += v or 0.0
    return total, time.time()


def rate(a, b):
    return (b[0] - a[0]) / max(1e-9, b[1] - a[1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default="build")
    p.add_argument("--kills", type=int, default=10)
    p.add_argument("--topics", type=int, default=10)
    p.add_argument("--failure-timeout", type=float, default=1.0)
    p.add_argument("--window", type=float, default=1.0)
    p.add_argument("--data", default=os.environ.get("LATENTD_DATA_DIR",
                                                    "../shared/data"))
    o = p.parse_args()
    latentd = os.path.join(o.build, "cli", "latentd")
    latentctl = os.path.join(o.build, "cli", "latentctl")
    ap = os.path.join(o.data, "blei-ap")
    for f in ("ap.dat.zst", "vocab.txt.zst"):
        if not os.path.exists(os.path.join(ap, f)):
            # Exit 77: what ctest's bench_failover_smoke counts as skipped.
            print("SKIP: real data %s is missing (LATENTD_DATA_DIR)"
                  % os.path.join(ap, f))
            sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="failover-bench-")
    redis, url = start_redis(tmp)
    nodes = []
    try:
        write_ap_thirds(ap, tmp)
        key = write_cluster_key(tmp)
        common = [latentd, "--format", "ldac",
                  "--vocab", os.path.join(ap, "vocab.txt.zst"),
                  "--topics", str(o.topics), "--max-sweeps", "1000000",
                  "--cluster-size", "3", "--cluster", "bench",
                  "--cluster-redis", url, "--cluster-key", key,
                  "--failure-timeout", str(o.failure_timeout),
                  "--consistency", "async"]
        nodes = [Node(i, tmp, common) for i in range(3)]
        for n in nodes:
            n.start()
        for n in nodes:
            n.wait_up()

        def status():
            r = subprocess.run([latentctl, "cluster", "status", "--json",
                                "--cluster-redis", url, "--cluster", "bench"],
                               capture_output=True, text=True)
            return json.loads(r.stdout) if r.returncode == 0 else None

        def member(st, node):
            for m in st["members"]:
                if m["id"] == node.tcp:
                    return m
            return {}

        # Training under way everywhere.
        while min(metric(n.http, "latentd_sweeps_total") or 0
                  for n in nodes) < 2:
            time.sleep(0.1)
        print(f"# cores: {os.cpu_count()}; 3 nodes, blei-ap thirds, "
              f"K={o.topics}, async, failure timeout {o.failure_timeout} s")
        print(f"{'kill':>4} {'node':>4} {'detect_s':>8} {'failover_s':>10} "
              f"{'tok/s before':>12} {'during':>10} {'after':>10} "
              f"{'return_s':>8}")
        rows = []
        for k in range(o.kills):
            victim = nodes[k % 3]
            survivors = [n for n in nodes if n is not victim]
            done_before = [metric(n.http, "latentd_cluster_failovers_total")
                           for n in survivors]
            t0 = tokens(survivors)
            time.sleep(o.window)
            t1 = tokens(survivors)
            killed = time.time()
            victim.kill()
            # Both survivors report the failover (their first round with
            # the new owners) done.
            def failed_over():
                now = [metric(n.http, "latentd_cluster_failovers_total")
                       for n in survivors]
                return all(a is not None and b is not None and a > b
                           for a, b in zip(now, done_before))
            wait_until(failed_over, 30, f"kill {k}: the survivors' failover")
            t2 = tokens(survivors)
            took = max(metric(n.http, "latentd_cluster_last_failover_seconds")
                       for n in survivors)
            st = status()
            move = st["move"] if st else None
            if not move or move["kind"] != "failover" or \
                    move["node"] != victim.tcp:
                sys.exit(f"kill {k}: the move is not its failover: {move}")
            detect = move["startedMs"] / 1000.0 - killed
            time.sleep(o.window)
            t3 = tokens(survivors)
            # Back: restarted from its data directory, re-admitted.
            restarted = time.time()
            victim.start()
            def returned():
                st = status()
                m = member(st, victim) if st else {}
                mv = st["move"] if st else None
                return m.get("state") == "active" and m.get("inRing") and \
                    mv and mv["kind"] == "add" and mv["status"] == "done" \
                    and mv["node"] == victim.tcp
            wait_until(returned, 60, f"kill {k}: node{victim.i}'s return")
            back = time.time() - restarted
            victim.wait_up()
            row = (k + 1, victim.i, detect, detect + took, rate(t0, t1),
                   rate(t1, t2), rate(t2, t3), back)
            rows.append(row)
            print(f"{row[0]:>4} {row[1]:>4} {row[2]:>8.2f} {row[3]:>10.2f} "
                  f"{row[4]:>12.0f} {row[5]:>10.0f} {row[6]:>10.0f} "
                  f"{row[7]:>8.2f}", flush=True)
        f = sorted(r[3] for r in rows)
        before = statistics.mean(r[4] for r in rows)
        during = statistics.mean(r[5] for r in rows)
        after = statistics.mean(r[6] for r in rows)
        print(f"failover (kill -> first sync round by the new owners) over "
              f"{len(rows)} kills: min {f[0]:.2f} s, median "
              f"{statistics.median(f):.2f} s, max {f[-1]:.2f} s")
        print(f"survivors' tokens/s: before {before:.0f}, during "
              f"{during:.0f} ({during / before:.2f}x), after {after:.0f} "
              f"({after / before:.2f}x)")
    finally:
        for n in nodes:
            n.stop()
        redis.terminate()
        redis.wait()
        if os.environ.get("LATENTD_KEEP_TEST_DIRS") is None:
            subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
