#!/usr/bin/env python3
"""Cluster throughput on paper, from cluster_bench's measurements.

Reads the table cluster_bench prints (one row per node count) and fits:

  sampling cost   c_s = 1 / (one node's tokens/s on one thread): the CPU
                  seconds a token's sampling costs (row "1", single_tok/s);
  sync overhead   h(N) = 1/cpu_ratio(N) - 1: the CPU a cluster of N nodes
                  spends per token besides sampling (applying the other
                  nodes' changes, rounds, transport), in units of c_s, fitted
                  as h(N) = a + b (N - 1) by least squares over the --fit
                  rows (every node applies every other node's changes to its
                  whole table, so the work per token grows with N - 1);
  sync bytes      B(N) = g (N - 1) bytes per sampled token (sent + received,
                  all nodes), fitted through the origin over the rows N >= 2.

Rows not fitted are predicted and compared with what was measured: the check
of the model. Then, for each --nodes count on machines of --cores cores and a
--link-gbps full-duplex link, a node samples
    min(cores / (c_s (1 + h(N))),                 CPU
        link bytes per second / (B(N) / 2))       its sent half of B
tokens per second, and the cluster N times that; the smaller term is what
limits it. Assumed: sampling scales linearly with a node's cores (the 2-core
machine measured 1.93x from one thread to two), and so does the sync work
(latentd runs it on the synchronizer's and transport's threads: a node
whose sync work needs more than those threads' cores is limited sooner).
ops/bench/testdata/cluster_bench_news20.txt holds the news20 measurement
(K=100, 30 sweeps, the defaults of rounds_per_sweep = 8 and
min_key_weight = 32, at c34f4e2, the 2-core Intel Xeon machine,
2026-11-30); cluster_bench_news20_6nodes.txt the same at 1, 2, 3, 4 and 6
nodes (at 053f774, the 2-core AMD EPYC, 2026-12-02), the fit on 1 and 2
nodes checked against 3, 4 and 6.

Usage: ops/bench/scale_model.py CLUSTER_BENCH_OUTPUT [--fit 1,2]
           [--cores 16] [--link-gbps 10] [--nodes 10,100,1000]
(CLUSTER_BENCH_OUTPUT: cluster_bench's stdout, e.g. from
 cluster_bench --corpus news20.lines.zst --format lines --topics 100
 --sweeps 30 --repeat 3 > out.txt; it needs the rows 1 and 2 at least.)
"""
import argparse
import sys


def read_rows(path):
    """{nodes: (single_tok_s, cpu_ratio, bytes_per_token)} of the table."""
    rows = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) < 10 or not p[0].isdigit():
                continue
            # nodes single indep cluster ratio ratio_med cpu_ratio smp_ratio
            # vs_indep bytes/tok ...
            rows[int(p[0])] = (float(p[1]), float(p[6]), float(p[9]))
    return rows


def fit_line(points):
    """Least squares y = a + b x over [(x, y)]; one point: b = 0."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    b = 0.0 if sxx == 0 else sum(
        (x - mx) * (y - my) for x, y in points) / sxx
    return my - b * mx, b


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench_output")
    ap.add_argument("--fit", default="1,2",
                    help="node counts whose rows fit h(N) (default 1,2)")
    ap.add_argument("--cores", type=int, default=16)
    ap.add_argument("--link-gbps", type=float, default=10.0)
    ap.add_argument("--nodes", default="10,100,1000")
    args = ap.parse_args()

    rows = read_rows(args.bench_output)
    fit_nodes = [int(n) for n in args.fit.split(",")]
    if 1 not in rows or any(n not in rows for n in fit_nodes):
        sys.exit(f"scale_model: {args.bench_output} needs the rows "
                 f"{sorted(set([1] + fit_nodes))} of cluster_bench's table; "
                 f"it has {sorted(rows)}")
    c_s = 1.0 / rows[1][0]
    a, b = fit_line([(n - 1, 1.0 / rows[n][1] - 1.0) for n in fit_nodes])
    multi = [(n - 1, rows[n][2]) for n in rows if n >= 2]
    if not multi:
        sys.exit("scale_model: no row of 2 nodes or more to fit the bytes")
    g = sum(x * y for x, y in multi) / sum(x * x for x, _ in multi)

    def h(n):
        return a + b * (n - 1)

    print(f"fit: c_s = {c_s * 1e9:.1f} ns per token (one thread); "
          f"h(N) = {a:.3f} + {b:.3f} (N - 1) over rows {args.fit}; "
          f"B(N) = {g:.3f} (N - 1) bytes per token")
    print("check (rows not fitted): nodes  cpu_ratio measured  predicted  "
          "error")
    for n in sorted(rows):
        if n in fit_nodes:
            continue
        predicted = 1.0 / (1.0 + h(n))
        measured = rows[n][1]
        print(f"  {n:5d}  {measured:9.3f}  {predicted:9.3f}  "
              f"{100 * (predicted - measured) / measured:+6.1f}%")

    link = args.link_gbps * 1e9 / 8
    print(f"prediction: {args.cores}-core nodes, {args.link_gbps:g} Gb/s "
          "links")
    print("  nodes  cpu_eff  bytes/tok  node tok/s (cpu)  node tok/s (link)"
          "  cluster tok/s  link use  limit")
    for n in [int(x) for x in args.nodes.split(",")]:
        eff = 1.0 / (1.0 + h(n))
        cpu = args.cores * eff / c_s
        per_token = g * (n - 1)
        by_link = float("inf") if per_token == 0 else link / (per_token / 2)
        node = min(cpu, by_link)
        use = node * per_token / 2 / link
        limit = "CPU: applying the other nodes' changes" if cpu <= by_link \
            else "link"
        print(f"  {n:5d}  {eff:7.4f}  {per_token:9.2f}  {cpu / 1e6:14.2f} M"
              f"  {by_link / 1e6:15.1f} M  {n * node / 1e6:11.1f} M  "
              f"{100 * use:6.1f}%  {limit}")


if __name__ == "__main__":
    main()
