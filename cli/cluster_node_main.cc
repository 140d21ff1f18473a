// latentd-cluster-node: one node of a training cluster, for cluster tests
// and benchmarks (the long-running daemon is `latentd`). It joins the
// cluster in Redis, trains --sweeps sweeps on its corpus shard, pushes its
// last deltas, waits for the other nodes to finish, pulls the final
// globals, prints one report line and keeps serving its owner shard until
// every node is done (or --linger-s passes).
//
//   latentd-cluster-node --cluster-redis redis://127.0.0.1:6379
//     --cluster demo --cluster-listen 127.0.0.1:7001 --cluster-size 3
//     --shard 0 --shards 3 --corpus corpus.ldac
//     --format ldac --vocab vocab.txt
//     --consistency ssp:1 --cluster-key /etc/latentd/cluster.key
//
// A setting latentd also has keeps latentd's flag name (--cluster-redis,
// --cluster-size, --cluster-listen, --topics, ...). The names this program
// had before (--redis, --members, --listen, which mean other things to
// latentd) still work, with a warning.
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/fast_mutexes.h"
#include "service/cluster/cluster_node.h"
#include "sync/control/membership.h"
#include "sync/transport/peer_auth.h"

namespace {

absl::StatusOr<latentd::ShardBy> ParseShardBy(const std::string& s) {
  if (s == "index") return latentd::ShardBy::kIndex;
  if (s == "id") return latentd::ShardBy::kId;
  return absl::InvalidArgumentError(
      absl::StrCat("--shard-by: unknown value '", s, "' (index or id)"));
}

// Warns about each deprecated flag name on the command line.
void WarnDeprecatedNames(int argc, char** argv) {
  static constexpr std::pair<std::string_view, std::string_view> kOld[] = {
      {"--redis", "--cluster-redis"},
      {"--members", "--cluster-size"},
      {"--listen", "--cluster-listen"}};
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    for (const auto& [old_name, name] : kOld) {
      if (arg == old_name || (arg.starts_with(old_name) &&
                              arg.substr(old_name.size()).starts_with("="))) {
        std::fprintf(stderr,
                     "latentd-cluster-node: %s is deprecated: use %s (the "
                     "name latentd gives this setting)\n",
                     std::string(old_name).c_str(), std::string(name).c_str());
      }
    }
  }
}

absl::Status Run(const latentd::ClusterNodeOptions& o, int sweeps,
                 int linger_s) {
  auto node = latentd::ClusterNode::Create(o);
  if (!node.ok()) return node.status();
  latentd::ClusterNode& n = **node;
  std::fprintf(stderr, "%s: joined cluster (%zu members), %llu tokens\n",
               n.node_id().c_str(), n.ring_config().members.size(),
               static_cast<unsigned long long>(n.tokens()));
  double sample_s = 0, wait_s = 0, doc_ll = 0;
  uint64_t tokens = 0;
  for (int s = 0; s < sweeps; ++s) {
    auto r = n.Sweep(/*evaluate=*/s + 1 == sweeps);
    if (!r.ok()) return r.status();
    sample_s += r->seconds;
    wait_s += r->wait_seconds;
    tokens += r->tokens;
    doc_ll = r->doc_log_likelihood;
  }
  n.Finish();
  const bool all = n.WaitAllFinished(absl::Seconds(linger_s));
  n.DrainPass();
  const auto pass = n.DrainPass();
  const auto& c = n.counters();
  std::printf(
      "node=%s sweeps=%d tokens_sampled=%llu sample_s=%.3f wait_s=%.3f "
      "bytes_sent=%llu bytes_received=%llu rounds=%llu "
      "mean_round_ms=%.2f staleness_mean=%.2f staleness_max=%llu "
      "owned_word_ll=%.6f doc_ll=%.6f quiet=%d all_finished=%d "
      "unavailable=%zu\n",
      n.node_id().c_str(), sweeps, static_cast<unsigned long long>(tokens),
      sample_s, wait_s, static_cast<unsigned long long>(c.bytes_sent.load()),
      static_cast<unsigned long long>(c.bytes_received.load()),
      static_cast<unsigned long long>(c.rounds.load()),
      c.round_micros_total.load() / 1000.0 /
          std::max<uint64_t>(1, c.rounds.load()),
      static_cast<double>(c.staleness_sum.load()) /
          std::max<uint64_t>(1, c.staleness_samples.load()),
      static_cast<unsigned long long>(c.staleness_max.load()),
      n.OwnedWordLogLikelihood(), doc_ll, pass.quiet ? 1 : 0, all ? 1 : 0,
      n.UnavailablePeers().size());
  std::fflush(stdout);
  // Keep the owner shard up until every node has pulled its globals.
  auto redis = latentd::sync::RedisClient::Connect(o.redis_url);
  if (redis.ok()) {
    const std::string key = absl::StrCat("latentd:", o.cluster, ":done");
    (void)(*redis)->Command({"INCR", key});
    const absl::Time deadline = absl::Now() + absl::Seconds(linger_s);
    while (absl::Now() < deadline) {
      auto v = (*redis)->Command({"GET", key});
      int64_t done = 0;
      if (!v.ok() || !absl::SimpleAtoi(v->str, &done)) break;
      if (done >= static_cast<int64_t>(n.ring_config().members.size() -
                                       n.UnavailablePeers().size())) {
        break;
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
  }
  n.Stop();
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  latentd::DisableMutexDeadlockDetection();
  CLI::App app{"latentd-cluster-node: one node of a latentd training cluster"};
  latentd::ClusterNodeOptions o;
  // --help shows each optional option's default; a required one has none
  // (the struct's value is never used), so it shows none.
  app.option_defaults()->always_capture_default();
  std::string format = "ldac", consistency = "async", shard_by = "index";
  int sweeps = 20, linger_s = 120, budget = 0, slow_ms = 0, round_ms = 10;
  uint32_t topics = 20;
  app.add_option("--cluster-redis,--redis", o.redis_url,
                 "Redis holding the cluster's membership "
                 "(redis://host:port or unix:/path; --redis: old name, "
                 "deprecated)")
      ->required()
      ->default_str("");
  app.add_option("--cluster", o.cluster, "cluster name")
      ->required()
      ->default_str("");
  app.add_option("--cluster-listen,--listen", o.listen,
                 "HOST:PORT of this node's sync server, which peers connect "
                 "to (--listen: old name, deprecated)")
      ->required()
      ->default_str("");
  app.add_option("--node-id", o.node_id, "member id (default: address)");
  std::string key_file;
  app.add_option("--cluster-key", key_file,
                 "the cluster's shared key file (as latentd's --cluster-key; "
                 "the same file on every node): sync connections prove it "
                 "and every frame carries a MAC");
  app.add_option("--cluster-tls-cert", o.tls.cert_file,
                 "mutual TLS on the sync port (as latentd's): this node's "
                 "certificate (PEM) from the cluster CA, naming the host of "
                 "--cluster-listen; with --cluster-tls-key and "
                 "--cluster-tls-ca");
  app.add_option("--cluster-tls-key", o.tls.key_file,
                 "private key (PEM) of --cluster-tls-cert");
  app.add_option("--cluster-tls-ca", o.tls.ca_file,
                 "the cluster CA (PEM) every peer's certificate must chain "
                 "to");
  app.add_option("--cluster-tls-require-node-id", o.tls_require_node_id,
                 "on: refuse a peer whose certificate names no node id "
                 "(as latentd's; ops/issue-node-cert.sh)")
      ->default_str("off");
  app.add_option("--insecure", o.insecure,
                 "on: run without a cluster key; the sync port accepts "
                 "frames from anyone (loopback development only)")
      ->default_str("off");
  app.add_option("--cluster-size,--members", o.expected_members,
                 "nodes the cluster is fixed with (--members: old name, "
                 "deprecated)")
      ->required()
      ->default_str("");
  app.add_option("--corpus", o.corpus.path, "corpus file")
      ->required()
      ->default_str("");
  app.add_option("--format", format, "ldac|uci|lines|yahoo|dir");
  app.add_option("--vocab", o.corpus.vocab_path, "vocabulary (ldac, uci)");
  app.add_option("--shard", o.shard, "this node's shard, < --shards");
  app.add_option("--shards", o.num_shards, "number of shards");
  app.add_option("--shard-by", shard_by,
                 "index: document i goes to shard i % shards; id: to the "
                 "shard its id hashes to (yahoo/UCI doc-id, path under a "
                 "directory, line number of lines and ldac files)");
  app.add_option("--max-docs", o.max_docs, "use the first N documents");
  app.add_option("--topics,--num-topics", topics, "number of topics K");
  app.add_option("--threads", o.threads, "sampler threads");
  app.add_option("--seed", o.seed, "seed");
  app.add_option("--sweeps,--iterations,--num-iterations", sweeps,
                 "Gibbs sweeps to run (as latentctl train --sweeps; not "
                 "latentd's --max-sweeps, a total to stop at)");
  app.add_option("--consistency", consistency, "async | ssp:<s> | bsp");
  app.add_option("--byte-budget", budget,
                 "delta bytes per round per owner (0 = all keys)");
  app.add_option("--round-ms", round_ms, "pause between rounds per owner");
  app.add_option("--slow-ms", slow_ms, "sleep after each sweep (tests)");
  app.add_option("--linger-s", linger_s,
                 "how long to wait for the others at the end");
  CLI11_PARSE(app, argc, argv);
  WarnDeprecatedNames(argc, argv);

  auto f = latentd::ParseCorpusFormat(format);
  auto c = latentd::sync::Consistency::Parse(consistency);
  auto by = ParseShardBy(shard_by);
  for (const absl::Status& s : {f.status(), c.status(), by.status()}) {
    if (!s.ok()) {
      std::fprintf(stderr, "latentd-cluster-node: %s\n",
                   std::string(s.message()).c_str());
      return 2;
    }
  }
  if (!key_file.empty()) {
    absl::StatusOr<std::string> key = latentd::sync::LoadClusterKey(key_file);
    if (!key.ok()) {
      std::fprintf(stderr, "latentd-cluster-node: %s\n",
                   std::string(key.status().message()).c_str());
      return 2;
    }
    o.cluster_key = *std::move(key);
  }
  o.corpus.format = *f;
  o.shard_by = *by;
  o.consistency = *c;
  o.num_topics = topics;
  o.round_byte_budget = static_cast<size_t>(budget);
  o.slow_down = absl::Milliseconds(slow_ms);
  o.round_interval = absl::Milliseconds(round_ms);
  absl::Status s = Run(o, sweeps, linger_s);
  if (!s.ok()) {
    std::fprintf(stderr, "latentd-cluster-node: %s\n", s.ToString().c_str());
    return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}
