// cluster_bench: what cluster synchronization costs, measured in one run.
//
// Workload: blei-ap (or --corpus/--format), K topics, --sweeps sweeps, α = 50/K
// and β = 0.01 fixed. For each m in --nodes (default 1,2,3):
//   single   one Trainer over the whole corpus with m sampler threads
//   indep    m Trainers on the same shards as the cluster, one sampler
//            thread each, sweeping side by side and never synchronizing
//   cluster  m in-process ClusterNodes on 127.0.0.1 (loopback TCP, a
//            private redis-server), one sampler thread each, each on 1/m
//            of the documents, under --consistency
// and prints, per m: aggregate tokens/s of the three (cluster: tokens
// sampled / wall seconds of the sweeps, waits and sync included), the
// cluster's ratio to the single node (goal >= 0.9) and to indep
// (vs_indep: what synchronizing costs against not synchronizing at all;
// indep's tables hold only their shard's counts, so its rows are sparser
// than a cluster node's, and it is an upper bound), sync bytes (sent +
// received, all nodes) per sampled token, round and staleness figures, and the
// log-likelihood per token of both after the last sweep with its relative
// difference (goal <= 2%). With --repeat N the three run back to back N
// times; each one's fastest run is reported (single-node runs on the 2-core
// dev machine vary by up to a quarter from run to run, and the host's speed
// drifts), and ratio_med is the median over the N repetitions of the
// cluster's ratio to the single-node run of the same repetition. On stderr, per
// run: the sampler threads' wall and on-CPU seconds, the waits, rounds and keys
// sent per round. With as many nodes as cores or more, the sync threads
// compete with the samplers for the same cores, so the ratio there
// measures sync CPU against sampling CPU. cpu_ratio compares process CPU
// seconds per token (all threads: samplers, sync, transport) of both;
// where it tracks the ratio, the gap is CPU, not waiting. smp_ratio
// compares the single node's process CPU per token with the cluster's
// sampling threads' alone: the ratio the cluster would reach if each
// node's sync work had a core of its own (an estimate: on one machine the
// samplers still share caches with the sync threads and each other).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "base/fast_mutexes.h"
#include "base/status_macros.h"
#include "corpora/corpus_builder.h"
#include "ops/bench/elastic_timeline.h"
#include "ops/bench/single_node.h"
#include "sampler/trainer.h"
#include "service/cluster/local_cluster.h"

namespace latentd {
namespace {

using bench::ProcessCpuSeconds;

// m Trainers that never synchronize, one per shard (the cluster's shards:
// DocumentShard with the nodes' ShardBy), one sampler thread each, sweeping at
// the same time: an upper bound for the cluster on this machine, had
// synchronization cost nothing. (Not a tight one: each table holds only its
// shard's counts, so its rows are sparser and cheaper to sample from than
// a cluster node's global rows.)
absl::StatusOr<double> RunIndependent(const ReaderOptions& corpus,
                                      ShardBy shard_by, TopicId k, int m,
                                      int sweeps) {
  LATENTD_ASSIGN_OR_RETURN(auto reader, OpenDocumentReader(corpus));
  std::vector<std::vector<std::vector<std::string>>> shards(m);
  RawDocument doc;
  for (uint64_t i = 0;; ++i) {
    LATENTD_ASSIGN_OR_RETURN(bool more, reader->Next(&doc));
    if (!more) break;
    shards[DocumentShard(shard_by, i, doc.id, static_cast<uint32_t>(m))]
        .push_back(std::move(doc.words));
  }
  std::vector<std::unique_ptr<Trainer>> trainers;
  for (int i = 0; i < m; ++i) {
    auto shard_reader = NewInMemoryDocumentReader(std::move(shards[i]));
    LATENTD_ASSIGN_OR_RETURN(
        auto trainer,
        bench::MakeBenchTrainer(*shard_reader, k, 7 + i, 1, sweeps));
    trainers.push_back(std::move(trainer));
  }
  std::vector<double> tokens(m, 0);
  std::vector<absl::Status> status(m);
  const auto start = std::chrono::steady_clock::now();
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < m; ++i) {
      threads.emplace_back([&, i] {
        for (int s = 0; s < sweeps && status[i].ok(); ++s) {
          absl::StatusOr<SweepReport> r = trainers[i]->Sweep();
          if (!r.ok()) {
            status[i] = r.status();
          } else {
            tokens[i] += r->result.tokens;
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  for (const absl::Status& s : status) LATENTD_RETURN_IF_ERROR(s);
  double total = 0;
  for (double t : tokens) total += t;
  return total / seconds;
}

struct ClusterFigures {
  double tokens_per_s = 0;
  double cpu_seconds_per_token = 0;
  // CPU of the sampling threads alone (each runs its node's whole
  // pipeline: sampling, combining, applying its own and the others'
  // changes).
  double sampler_cpu_seconds_per_token = 0;
  double bytes_per_token = 0;
  double round_ms = 0;
  double staleness = 0;
  double ll_per_token = 0;
};

// One cluster of m nodes for `sweeps` sweeps (then drained); its details
// on stderr.
absl::StatusOr<ClusterFigures> RunCluster(const ClusterNodeOptions& o, int m,
                                          int sweeps) {
  LATENTD_ASSIGN_OR_RETURN(auto cluster, LocalCluster::Start(o, m));
  const double cpu_start = ProcessCpuSeconds();
  LATENTD_ASSIGN_OR_RETURN(LocalClusterRun run, cluster->RunSweeps(sweeps));
  const double cpu_s_all = ProcessCpuSeconds() - cpu_start;
  LATENTD_RETURN_IF_ERROR(cluster->Drain().status());
  uint64_t bytes = 0, rounds = 0, micros = 0, st_sum = 0, st_n = 0;
  uint64_t keys = 0, nonzero_keys = 0;
  for (auto& n : cluster->nodes()) {
    const auto& c = n->counters();
    bytes += c.bytes_sent.load() + c.bytes_received.load();
    rounds += c.rounds.load();
    micros += c.round_micros_total.load();
    st_sum += c.staleness_sum.load();
    st_n += c.staleness_samples.load();
    keys += c.keys_sent.load();
    nonzero_keys += c.nonzero_keys_sent.load();
  }
  double pipe_s = 0, wait_s = 0, cpu_s = 0;
  for (const auto& node : run.reports) {
    for (const auto& r : node) {
      pipe_s += r.seconds;
      cpu_s += r.cpu_seconds;
      wait_s += r.wait_seconds;
    }
  }
  std::fprintf(stderr,
               "  m=%d: wall %.2f s; node-seconds sampling %.2f (on CPU %.2f), "
               "waiting %.2f; process CPU %.2f s; "
               "%llu rounds, %.0f keys/round (%.0f with δ ≠ 0)\n",
               m, run.seconds, pipe_s, cpu_s, wait_s, cpu_s_all,
               static_cast<unsigned long long>(rounds),
               rounds ? static_cast<double>(keys) / rounds : 0.0,
               rounds ? static_cast<double>(nonzero_keys) / rounds : 0.0);
  ClusterFigures f;
  const double tokens = static_cast<double>(run.tokens_sampled);
  f.tokens_per_s = tokens / run.seconds;
  f.cpu_seconds_per_token = cpu_s_all / tokens;
  f.sampler_cpu_seconds_per_token = cpu_s / tokens;
  f.bytes_per_token = static_cast<double>(bytes) / tokens;
  f.round_ms = rounds ? micros / 1000.0 / rounds : 0.0;
  f.staleness = st_n ? static_cast<double>(st_sum) / st_n : 0.0;
  f.ll_per_token = cluster->LogLikelihoodPerToken(run);
  return f;
}

int Main(int argc, char** argv) {
  DisableMutexDeadlockDetection();
  CLI::App app{"cluster_bench: cluster tokens/s and sync bytes vs one node"};
  std::string data = "../shared/data";
  if (const char* d = std::getenv("LATENTD_DATA_DIR")) data = d;
  ReaderOptions corpus;
  corpus.format = CorpusFormat::kLdaC;
  corpus.path = data + "/blei-ap/ap.dat.zst";
  corpus.vocab_path = data + "/blei-ap/vocab.txt.zst";
  std::vector<int> nodes = {1, 2, 3};
  std::string consistency = "async";
  int sweeps = 20;
  uint32_t topics = 50;
  size_t budget = 0;
  ClusterNodeOptions defaults;
  int round_ms =
      static_cast<int>(absl::ToInt64Milliseconds(defaults.round_interval));
  int rounds_per_sweep = defaults.rounds_per_sweep;
  bool flush = defaults.flush_each_sweep;
  uint32_t min_key_weight = defaults.min_key_weight;
  std::string format = "ldac";
  int repeat = 1;
  app.add_option("--corpus", corpus.path, "Corpus file (default blei-ap)");
  app.add_option("--vocab", corpus.vocab_path, "Its vocabulary (ldac/uci)");
  app.add_option("--format", format, "Corpus format (lines, ldac, ...)")
      ->capture_default_str();
  app.add_option("--nodes", nodes, "cluster sizes")->delimiter(',');
  app.add_option("--consistency", consistency, "async | ssp:<s> | bsp");
  app.add_option("--sweeps", sweeps, "sweeps per run");
  app.add_option("--topics", topics, "K");
  app.add_option("--byte-budget", budget, "sync bytes per round per owner");
  app.add_option("--round-ms", round_ms,
                 "longest pause between rounds per owner")
      ->capture_default_str();
  app.add_option("--rounds-per-sweep", rounds_per_sweep,
                 "rounds started by the count updater per sweep (0 = timer)")
      ->capture_default_str();
  app.add_option("--min-key-weight", min_key_weight,
                 "rounds within a sweep skip keys changed less than this")
      ->capture_default_str();
  app.add_flag("--flush,!--no-flush", flush,
               "async: wait for a round to every owner at the end of each "
               "sweep");
  app.add_option("--repeat", repeat,
                 "runs of each configuration; the fastest is reported")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (repeat < 1) {
    std::fprintf(stderr, "--repeat must be >= 1\n");
    return 2;
  }
  auto parsed_format = ParseCorpusFormat(format);
  if (!parsed_format.ok()) {
    std::fprintf(stderr, "%s\n", parsed_format.status().ToString().c_str());
    return 2;
  }
  corpus.format = *parsed_format;
  if (corpus.format != CorpusFormat::kLdaC &&
      corpus.format != CorpusFormat::kUci) {
    corpus.vocab_path.clear();
    // Preprocessed text such as news20.lines: keep every word as it is.
    corpus.tokenizer.remove_stopwords = false;
    corpus.tokenizer.min_length = 1;
  }
  auto cons = sync::Consistency::Parse(consistency);
  if (!cons.ok()) {
    std::fprintf(stderr, "%s\n", cons.status().ToString().c_str());
    return 2;
  }
  auto redis = RedisProcess::Start();
  if (!redis.ok()) {
    std::fprintf(stderr, "%s\n", redis.status().ToString().c_str());
    return 1;
  }
  std::printf(
      "# %s K=%u sweeps=%d consistency=%s budget=%zu round_ms=%d "
      "rounds_per_sweep=%d flush=%d min_key_weight=%u repeat=%d\n",
      corpus.path.c_str(), topics, sweeps, consistency.c_str(), budget,
      round_ms, rounds_per_sweep, flush ? 1 : 0, min_key_weight, repeat);
  std::printf(
      "%5s %12s %12s %12s %6s %9s %9s %9s %9s %10s %9s %9s %8s %8s %7s\n",
      "nodes", "single_tok/s", "indep_tok/s", "cluster_tok/s", "ratio",
      "ratio_med", "cpu_ratio", "smp_ratio", "vs_indep", "bytes/tok",
      "round_ms", "stale", "ll_1", "ll_m", "ll_diff");
  ClusterNodeOptions base;
  base.redis_url = (*redis)->url();
  base.corpus = corpus;
  base.num_topics = topics;
  base.seed = 7;
  base.consistency = *cons;
  base.round_byte_budget = budget;
  base.round_interval = absl::Milliseconds(round_ms);
  base.rounds_per_sweep = rounds_per_sweep;
  base.flush_each_sweep = flush;
  base.min_key_weight = min_key_weight;
  base.log = [](std::string_view) {};
  // The sync path as deployed: authenticated, every frame MACed.
  base.cluster_key = "cluster-bench-cluster-key-0001";
  int run_index = 0;  // a cluster name is never reused (rejoin guard)
  for (int m : nodes) {
    // Each repetition runs the three back to back. Reported: each one's
    // fastest run (the one least disturbed by the rest of the machine),
    // and the median over repetitions of the cluster's ratio to the single
    // node run just before it (ratio_med), which a host whose speed drifts
    // between repetitions disturbs less.
    bench::SingleNodeFigures single;
    double independent = 0;
    absl::StatusOr<ClusterFigures> cluster;
    std::vector<double> paired;
    for (int r = 0; r < repeat; ++r) {
      auto s = bench::RunSingleNode(
          corpus,
          {.topics = topics, .threads = m, .sweeps = sweeps, .evaluate = true});
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", s.status().ToString().c_str());
        return 1;
      }
      if (s->tokens_per_s > single.tokens_per_s) single = *s;
      auto i = RunIndependent(corpus, base.shard_by, topics, m, sweeps);
      if (!i.ok()) {
        std::fprintf(stderr, "%s\n", i.status().ToString().c_str());
        return 1;
      }
      independent = std::max(independent, *i);
      ClusterNodeOptions o = base;
      o.cluster = absl::StrCat("bench-", m, "-", run_index++);
      auto c = RunCluster(o, m, sweeps);
      if (!c.ok()) {
        std::fprintf(stderr, "%s\n", c.status().ToString().c_str());
        return 1;
      }
      paired.push_back(c->tokens_per_s / s->tokens_per_s);
      if (!cluster.ok() || c->tokens_per_s > cluster->tokens_per_s) {
        cluster = std::move(c);
      }
    }
    std::sort(paired.begin(), paired.end());
    const size_t mid = paired.size() / 2;
    const double ratio_med = paired.size() % 2 == 1
                                 ? paired[mid]
                                 : (paired[mid - 1] + paired[mid]) / 2;
    const ClusterFigures& c = *cluster;
    std::printf(
        "%5d %12.0f %12.0f %12.0f %6.3f %9.3f %9.3f %9.3f %9.3f %10.3f %9.2f "
        "%9.2f %8.4f %8.4f %6.2f%%\n",
        m, single.tokens_per_s, independent, c.tokens_per_s,
        c.tokens_per_s / single.tokens_per_s, ratio_med,
        single.cpu_seconds_per_token / c.cpu_seconds_per_token,
        single.cpu_seconds_per_token / c.sampler_cpu_seconds_per_token,
        c.tokens_per_s / independent, c.bytes_per_token, c.round_ms,
        c.staleness, single.ll_per_token, c.ll_per_token,
        100.0 * std::abs(c.ll_per_token - single.ll_per_token) /
            std::abs(single.ll_per_token));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace latentd

int main(int argc, char** argv) { return latentd::Main(argc, argv); }
