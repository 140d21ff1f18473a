// elastic_bench: what growing and shrinking a running training cluster
// costs, measured in one run (issue 12).
//
// Corpus news20 (or --corpus/--format; --max-docs for a quick run), K
// topics, --sweeps sweeps, α = 50/K and β = 0.01 fixed, in-process
// ClusterNodes on 127.0.0.1 (loopback TCP, a private redis-server), one
// sampler thread each. Workloads (--workloads, each --repeat times):
//   single  the baseline: one Trainer, one sampler thread, over the whole
//           corpus for --sweeps sweeps
//   grow    3 -> 4: nodes 0..2 train shards 0..2 of 4; node3 (shard 3)
//           starts with `join`, registers as pending, and is admitted
//           (AdmitNode, what `latentctl cluster add-node` runs) once
//           node0 has done --move-at sweeps; it takes its keys, pushes its
//           counts and samples up to the others' last sweep
//   shrink  4 -> 3 with drop: nodes 0..3 train the four shards; node3 is
//           removed (RemoveNode kDrop, `latentctl cluster remove-node
//           --drop`) once node0 has done --move-at sweeps; it stops
//           sampling, takes its counts out of the model, hands its keys
//           to the three left and leaves (ClusterNode::Leave)
// For each move, one row (workload, nodes):
//   keys       keys the owners held just before the move (Σ over owners)
//   moved      what the move record counts (WaitForMove; grow: keys the
//              new node imported, shrink: keys the leaving node handed off)
//   ideal      the ring's ideal share: 1/4 of `keys` (the new node's share
//              of 4; the leaving node's share of 4)
//   mv/idl     moved / ideal
//   pln/idl    what the placement asks to move (keys whose owner differs
//              between the ring before and after) / ideal
//   extra      keys the plan moves between members that neither join nor
//              leave (0 for consistent hashing)
//   rec_bytes  hand-off bytes in the move record (grow: the KeyHandoff
//              frames the new node imported; shrink: 0, not counted)
//   est_bytes  wire size of the planned keys' globals as KeyHandoff
//              fields, without the holders' unseen changes (a lower bound);
//              est/idl against 1/4 of all keys' globals
//   move_ms    the record's started_ms..finished_ms (Redis time: AdmitNode
//              or RemoveNode to the move's end); drain_ms, shrink's drain
//              phase (to the epoch without the node, from the epochs
//              stream); settle_ms, to the last member's "ring epoch N in
//              effect" (or joined / left) log line, which can come after
//              the record's end
//   Mtok_b/d/a the cluster's tokens/s (millions; Σ over nodes of tokens /
//              wall seconds of the node's sweeps, waits included) over each
//              node's last 5 sweeps that end before the move, the sweeps
//              that overlap it, and each node's first 5 sweeps after it
//   dur/bef    Mtok_d / Mtok_b; per_cpu, the same per CPU second of this
//              process (cores_d, cores_b: its CPU seconds per wall second
//              during and before the move, sampled every 50 ms), which
//              takes out the host's other load
//   stall      the longest sweep overlapping the move / the median sweep
//              before it
//   cpu_eff    single-node CPU seconds per token / the cluster's
//              (getrusage(RUSAGE_SELF): every thread of every node, first
//              sweep to last, the move included; redis-server, a separate
//              process, is not counted)
//   exact      after a drain, Σ n_k at the owner of the topic totals equals
//              the tokens of the nodes left
// On stderr, per move: the epochs stream, the nodes' epoch-change log
// lines, the delta batches refused for a stale epoch, and a timeline of
// tokens/s and CPU cores in 250 ms bins around the move.
//
// On a 2-core machine the 3 or 4 nodes share two cores, so a wall-clock
// speed-up of the cluster over one node cannot show: cpu_eff, not tokens/s
// against one node, says what synchronization costs there, and dur/bef
// (per_cpu on a busy host) what the move takes from training.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/fast_mutexes.h"
#include "base/status_macros.h"
#include "corpora/corpus_builder.h"
#include "hashring/ring.h"
#include "ops/bench/elastic_timeline.h"
#include "ops/bench/single_node.h"
#include "sampler/trainer.h"
#include "service/cluster/local_cluster.h"
#include "sync/control/cluster_admin.h"
#include "sync/owner_shard.h"

namespace latentd {
namespace {

using bench::CpuMonitor;
using bench::LogLines;
using bench::NowMs;
using bench::ProcessCpuSeconds;
using bench::Rates;
using bench::SweepSpan;

// The sampling threads of one run: node i sweeps until its clock reaches
// `sweeps`, then Finish(); a leaving node instead sweeps until its removal
// is requested (idle once at `sweeps`), then Leave(). Each sweep is logged.
class Sampling {
 public:
  ~Sampling() { Join().IgnoreError(); }
  void Start(ClusterNode* node, int index, int sweeps, bool leaves) {
    threads_.emplace_back([this, node, index, sweeps, leaves] {
      absl::Status s = Run(node, index, sweeps, leaves);
      if (!s.ok()) {
        failed_.store(true, std::memory_order_relaxed);
        absl::MutexLock l(&mu_);
        if (status_.ok()) status_ = s;
      }
    });
  }
  // Tells a leaving node that its removal will not come.
  void GiveUp() { give_up_.store(true, std::memory_order_relaxed); }
  // Waits until `node` has done `sweeps` sweeps; false if a thread failed.
  bool AwaitSweep(const ClusterNode& node, int sweeps) const {
    while (node.sweep() < static_cast<uint64_t>(sweeps)) {
      if (failed_.load(std::memory_order_relaxed)) return false;
      absl::SleepFor(absl::Milliseconds(5));
    }
    return true;
  }
  // Joins every thread; the first error.
  absl::Status Join() {
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    absl::MutexLock l(&mu_);
    return status_;
  }
  std::vector<SweepSpan> spans() const {
    absl::MutexLock l(&mu_);
    return spans_;
  }

 private:
  absl::Status Run(ClusterNode* node, int index, int sweeps, bool leaves) {
    while (true) {
      if (leaves && node->LeaveRequested().has_value()) return node->Leave();
      if (node->sweep() >= static_cast<uint64_t>(sweeps)) {
        if (!leaves || give_up_.load(std::memory_order_relaxed)) break;
        absl::SleepFor(absl::Milliseconds(10));  // waiting to be removed
        continue;
      }
      SweepSpan s{.node = index, .start_ms = NowMs()};
      LATENTD_ASSIGN_OR_RETURN(NodeSweepReport r,
                               node->Sweep(/*evaluate=*/false));
      s.end_ms = NowMs();
      s.tokens = r.tokens;
      absl::MutexLock l(&mu_);
      spans_.push_back(s);
    }
    node->Finish();
    return absl::OkStatus();
  }

  std::vector<std::thread> threads_;
  // Relaxed: flags that only end waits; the status is under mu_.
  std::atomic<bool> failed_{false};
  std::atomic<bool> give_up_{false};
  mutable absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::vector<SweepSpan> spans_ ABSL_GUARDED_BY(mu_);
};

// The single node: one sampler thread, never evaluated.
using Baseline = bench::SingleNodeFigures;

// Every key each owner holds, with its owner's id and global.
struct Census {
  std::vector<std::string> owner_ids;
  std::vector<std::vector<std::pair<sync::Key, sync::SparseVector>>> keys;
};

Census TakeCensus(std::vector<std::unique_ptr<ClusterNode>>& nodes) {
  Census c;
  for (auto& n : nodes) {
    c.owner_ids.push_back(n->node_id());
    c.keys.push_back(n->owner().Snapshot());
  }
  return c;
}

// What the placement moves between two rings, over the keys of `before`.
struct Plan {
  uint64_t keys = 0;     // held before
  uint64_t planned = 0;  // whose owner differs
  uint64_t extra = 0;    // moved between members other than `node`
  uint64_t all_bytes = 0;
  uint64_t planned_bytes = 0;
};

absl::StatusOr<Plan> PlanMove(const Census& before,
                              const hashring::RingConfig& next,
                              const std::string& node, uint32_t topics) {
  LATENTD_ASSIGN_OR_RETURN(std::shared_ptr<const hashring::Ring> ring,
                           hashring::Ring::Build(next));
  Plan p;
  sync::KeyHandoff all, planned;  // their globals' wire size
  for (size_t o = 0; o < before.keys.size(); ++o) {
    const std::string& from = before.owner_ids[o];
    for (const auto& [key, global] : before.keys[o]) {
      ++p.keys;
      all.add_keys(key);
      sync::AppendToBlock(global, all.mutable_globals());
      const std::string& to = next.members[ring->Owner(key)].id;
      if (to == from) continue;
      ++p.planned;
      p.extra += from != node && to != node;
      planned.add_keys(key);
      sync::AppendToBlock(global, planned.mutable_globals());
    }
  }
  all.set_dimension(topics);
  planned.set_dimension(topics);
  p.all_bytes = all.ByteSizeLong();
  p.planned_bytes = planned.ByteSizeLong();
  return p;
}

// The move's events from the cluster's epochs stream: (change, time_ms).
absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> ReadEpochEvents(
    sync::RedisClient* redis, const std::string& cluster) {
  const sync::ClusterKeys keys(cluster);
  LATENTD_ASSIGN_OR_RETURN(sync::RedisReply r,
                           redis->Command({"XRANGE", keys.epochs, "-", "+"}));
  std::vector<std::pair<std::string, int64_t>> events;
  for (const sync::RedisReply& entry : r.elements) {
    if (entry.elements.size() != 2) continue;
    std::string change;
    int64_t time_ms = 0;
    const auto& f = entry.elements[1].elements;
    for (size_t i = 0; i + 1 < f.size(); i += 2) {
      if (f[i].str == "change") change = f[i + 1].str;
      if (f[i].str == "time_ms" && !absl::SimpleAtoi(f[i + 1].str, &time_ms)) {
        return absl::DataLossError(
            absl::StrCat(keys.epochs, ": time_ms ", f[i + 1].str));
      }
    }
    events.emplace_back(change, time_ms);
  }
  return events;
}

struct MoveFigures {
  Plan plan;
  sync::MoveRecord record;
  double drain_ms = 0;
  // The last member's "ring epoch N in effect" (or the joined / left line)
  // after the move started: the record's end can come before it.
  double settle_ms = 0;
  Rates rates;
  double cores_before = 0, cores_during = 0;
  double cpu_seconds_per_token = 0;
  bool exact = false;
};

// What one move run leaves for Analyze.
struct MoveRun {
  Census census;
  hashring::RingConfig next;  // the ring after the move
  std::string node;           // the node that joins or leaves
  sync::MoveRecord record;
  std::vector<SweepSpan> spans;
  double cpu_seconds = 0;  // process CPU over the sampling phase
  std::vector<std::pair<std::string, int64_t>> events;
  bool exact = false;  // Σ n_k = tokens after the drain
};

// Σ n_k at the topic totals' owner equals the nodes' tokens.
bool TotalsExact(LocalCluster& cluster) {
  int64_t sum = 0;
  for (auto& n : cluster.nodes()) {
    for (const sync::SparseEntry& e :
         n->owner().Global(sync::kTopicTotalsKey)) {
      sum += e.count;
    }
  }
  return sum == static_cast<int64_t>(cluster.total_tokens());
}

absl::StatusOr<MoveFigures> Analyze(const MoveRun& run, const CpuMonitor& cpu,
                                    LogLines* log, uint32_t topics) {
  MoveFigures f;
  LATENTD_ASSIGN_OR_RETURN(f.plan,
                           PlanMove(run.census, run.next, run.node, topics));
  f.record = run.record;
  f.exact = run.exact;
  const double from = static_cast<double>(run.record.started_ms);
  const double to = static_cast<double>(run.record.finished_ms);
  for (const auto& [change, time_ms] : run.events) {
    // "leave" starts the drain phase, "remove" ends it (the ring without
    // the node).
    if (change == "remove") f.drain_ms = static_cast<double>(time_ms) - from;
    std::fprintf(stderr, "    %+7.0f ms  epochs stream: %s\n",
                 static_cast<double>(time_ms) - from, change.c_str());
  }
  f.rates = MeasureRates(run.spans, from, to);
  f.cores_before = cpu.Cores(f.rates.before_from_ms, from);
  f.cores_during = cpu.Cores(from, to);
  uint64_t tokens = 0;
  for (const SweepSpan& s : run.spans) tokens += s.tokens;
  f.cpu_seconds_per_token = run.cpu_seconds / static_cast<double>(tokens);
  std::fprintf(stderr, "  %s\n",
               sync::DescribeMove(run.record, run.record.finished_ms).c_str());
  int stale = 0;  // batches refused for a stale epoch (then resent)
  for (const auto& [ms, line] : log->Take()) {
    if (line.find("rejected delta batch") != std::string::npos &&
        line.find("stale epoch") != std::string::npos) {
      ++stale;
    }
    const bool settles = line.find("in effect") != std::string::npos ||
                         line.starts_with("joined") || line.starts_with("left");
    if (settles && ms >= from) f.settle_ms = std::max(f.settle_ms, ms - from);
    if (line.starts_with("ring epoch") || line.starts_with("joined") ||
        line.starts_with("left") || line.starts_with("this node")) {
      std::fprintf(stderr, "    %+7.0f ms  %s\n", ms - from, line.c_str());
    }
  }
  std::fprintf(stderr, "    %d delta batches refused for a stale epoch\n",
               stale);
  PrintTimeline(run.spans, cpu, from, to);
  return f;
}

struct BenchConfig {
  ClusterNodeOptions base;  // corpus, model, redis, log
  int sweeps = 30;
  int move_at = 10;
};

// Waits until `id` is registered as pending in `cluster`.
absl::Status AwaitPending(sync::RedisClient* redis, const std::string& cluster,
                          const std::string& id) {
  for (int i = 0; i < 6000; ++i) {
    LATENTD_ASSIGN_OR_RETURN(sync::ClusterStatus st,
                             sync::ReadClusterStatus(redis, cluster));
    for (const sync::MemberStatus& m : st.members) {
      if (m.id == id && m.state == sync::MemberState::kPending) {
        return absl::OkStatus();
      }
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  return absl::DeadlineExceededError(id + " never registered as pending");
}

// Once node 0 has done cfg.move_at sweeps: takes the census and admits
// the pending `id`; fills the ring after and the move record.
absl::Status Admit(const BenchConfig& cfg, LocalCluster& cluster,
                   const Sampling& sampling, const std::string& id,
                   MoveRun* run) {
  if (!sampling.AwaitSweep(*cluster.nodes()[0], cfg.move_at)) {
    return absl::AbortedError("a node failed before the move");
  }
  LATENTD_ASSIGN_OR_RETURN(auto redis,
                           sync::RedisClient::Connect(cfg.base.redis_url));
  run->census = TakeCensus(cluster.nodes());
  LATENTD_ASSIGN_OR_RETURN(run->next,
                           sync::AdmitNode(redis.get(), cfg.base.cluster, id));
  LATENTD_ASSIGN_OR_RETURN(
      run->record, sync::WaitForMove(redis.get(), cfg.base.cluster,
                                     run->next.version, absl::Seconds(300)));
  return absl::OkStatus();
}

// Once node 0 has done cfg.move_at sweeps: takes the census and removes
// `id` with drop; fills the move record (the ring after is read later).
absl::Status Remove(const BenchConfig& cfg, LocalCluster& cluster,
                    Sampling& sampling, const std::string& id, MoveRun* run) {
  absl::Status s = [&]() -> absl::Status {
    if (!sampling.AwaitSweep(*cluster.nodes()[0], cfg.move_at)) {
      return absl::AbortedError("a node failed before the move");
    }
    LATENTD_ASSIGN_OR_RETURN(auto redis,
                             sync::RedisClient::Connect(cfg.base.redis_url));
    run->census = TakeCensus(cluster.nodes());
    LATENTD_ASSIGN_OR_RETURN(hashring::RingConfig drain,
                             sync::RemoveNode(redis.get(), cfg.base.cluster, id,
                                              sync::RemoveMode::kDrop));
    LATENTD_ASSIGN_OR_RETURN(
        run->record, sync::WaitForMove(redis.get(), cfg.base.cluster,
                                       drain.version, absl::Seconds(300)));
    return absl::OkStatus();
  }();
  if (!s.ok()) sampling.GiveUp();  // the leaving node stops waiting
  return s;
}

// After the sampling threads: the sweeps and the epochs stream; drains
// and checks the topic totals.
absl::Status Conclude(const BenchConfig& cfg, LocalCluster& cluster,
                      const Sampling& sampling, MoveRun* run) {
  run->spans = sampling.spans();
  LATENTD_ASSIGN_OR_RETURN(auto redis,
                           sync::RedisClient::Connect(cfg.base.redis_url));
  LATENTD_ASSIGN_OR_RETURN(run->events,
                           ReadEpochEvents(redis.get(), cfg.base.cluster));
  LATENTD_RETURN_IF_ERROR(cluster.Drain().status());
  run->exact = TotalsExact(cluster);
  return absl::OkStatus();
}

absl::StatusOr<MoveRun> RunGrow(const BenchConfig& cfg) {
  LATENTD_ASSIGN_OR_RETURN(auto cluster,
                           LocalCluster::Start(cfg.base, 3, {}, /*shards=*/4));
  LATENTD_ASSIGN_OR_RETURN(auto redis,
                           sync::RedisClient::Connect(cfg.base.redis_url));
  MoveRun run;
  run.node = "node3";
  ClusterNodeOptions joiner = cfg.base;
  joiner.join = true;
  joiner.node_id = run.node;
  joiner.shard = 3;
  joiner.num_shards = 4;
  // node3 loads its shard and registers as pending before the others
  // sample, then waits in Create() until it is admitted.
  absl::StatusOr<std::unique_ptr<ClusterNode>> fourth =
      absl::UnknownError("not started");
  std::thread joining([&] { fourth = ClusterNode::Create(joiner); });
  absl::Status moved = AwaitPending(redis.get(), cfg.base.cluster, run.node);
  Sampling sampling;
  const double cpu_start = ProcessCpuSeconds();
  if (moved.ok()) {
    for (int i = 0; i < 3; ++i) {
      sampling.Start(cluster->nodes()[i].get(), i, cfg.sweeps, false);
    }
    moved = Admit(cfg, *cluster, sampling, run.node, &run);
  }
  joining.join();  // Create() returns once node3 has joined (or failed)
  if (fourth.ok()) sampling.Start(fourth->get(), 3, cfg.sweeps, false);
  absl::Status sampled = sampling.Join();
  run.cpu_seconds = ProcessCpuSeconds() - cpu_start;
  LATENTD_RETURN_IF_ERROR(moved);
  LATENTD_RETURN_IF_ERROR(fourth.status());
  LATENTD_RETURN_IF_ERROR(sampled);
  cluster->Add(std::move(*fourth));
  LATENTD_RETURN_IF_ERROR(Conclude(cfg, *cluster, sampling, &run));
  return run;
}

absl::StatusOr<MoveRun> RunShrink(const BenchConfig& cfg) {
  LATENTD_ASSIGN_OR_RETURN(auto cluster, LocalCluster::Start(cfg.base, 4));
  MoveRun run;
  run.node = "node3";
  Sampling sampling;
  const double cpu_start = ProcessCpuSeconds();
  for (int i = 0; i < 4; ++i) {
    sampling.Start(cluster->nodes()[i].get(), i, cfg.sweeps,
                   /*leaves=*/i == 3);
  }
  absl::Status moved = Remove(cfg, *cluster, sampling, run.node, &run);
  absl::Status sampled = sampling.Join();
  run.cpu_seconds = ProcessCpuSeconds() - cpu_start;
  LATENTD_RETURN_IF_ERROR(moved);
  LATENTD_RETURN_IF_ERROR(sampled);
  run.next = cluster->nodes()[0]->ring_config();
  cluster->Remove(3);
  LATENTD_RETURN_IF_ERROR(Conclude(cfg, *cluster, sampling, &run));
  return run;
}

void PrintHeader() {
  std::printf(
      "%-8s %5s %7s %6s %7s %6s %7s %5s %9s %9s %7s %7s %8s %9s %6s %6s %6s "
      "%7s %7s %6s %7s %7s %7s %5s\n",
      "workload", "nodes", "keys", "moved", "ideal", "mv/idl", "pln/idl",
      "extra", "rec_bytes", "est_bytes", "est/idl", "move_ms", "drain_ms",
      "settle_ms", "Mtok_b", "Mtok_d", "Mtok_a", "dur/bef", "per_cpu", "stall",
      "cores_b", "cores_d", "cpu_eff", "exact");
}

void PrintRow(const char* workload, const char* nodes, const MoveFigures& f,
              const Baseline& single) {
  const double ideal = static_cast<double>(f.plan.keys) / 4;
  const double ideal_bytes = static_cast<double>(f.plan.all_bytes) / 4;
  const sync::MoveRecord& r = f.record;
  const Rates& t = f.rates;
  // during/before per CPU second of this process: the host's other load
  // taken out.
  const double per_cpu =
      f.cores_before > 0 && f.cores_during > 0
          ? (t.during / f.cores_during) / (t.before / f.cores_before)
          : 0;
  std::printf(
      "%-8s %5s %7llu %6llu %7.0f %6.3f %7.3f %5llu %9llu %9llu %7.3f "
      "%7lld %8.0f %9.0f %6.2f %6.2f %6.2f %7.3f %7.3f %6.2f %7.2f %7.2f "
      "%7.3f %5s\n",
      workload, nodes, static_cast<unsigned long long>(f.plan.keys),
      static_cast<unsigned long long>(r.counters.keys), ideal,
      static_cast<double>(r.counters.keys) / ideal,
      static_cast<double>(f.plan.planned) / ideal,
      static_cast<unsigned long long>(f.plan.extra),
      static_cast<unsigned long long>(r.counters.bytes),
      static_cast<unsigned long long>(f.plan.planned_bytes),
      static_cast<double>(f.plan.planned_bytes) / ideal_bytes,
      static_cast<long long>(r.finished_ms - r.started_ms), f.drain_ms,
      f.settle_ms, t.before / 1e6, t.during / 1e6, t.after / 1e6,
      t.during / t.before, per_cpu, t.stall, f.cores_before, f.cores_during,
      single.cpu_seconds_per_token / f.cpu_seconds_per_token,
      f.exact ? "yes" : "NO");
  std::fflush(stdout);
}

// Runs `workload` ("grow" or "shrink") once and prints its row.
absl::Status RunWorkload(const std::string& workload, BenchConfig cfg,
                         LogLines* log, const Baseline& single) {
  const bool grow = workload == "grow";
  std::fprintf(stderr, "%s %s:\n", workload.c_str(), cfg.base.cluster.c_str());
  CpuMonitor cpu;
  absl::StatusOr<MoveRun> run = grow ? RunGrow(cfg) : RunShrink(cfg);
  cpu.Stop();
  LATENTD_RETURN_IF_ERROR(run.status());
  LATENTD_ASSIGN_OR_RETURN(MoveFigures f,
                           Analyze(*run, cpu, log, cfg.base.num_topics));
  PrintRow(workload.c_str(), grow ? "3->4" : "4->3", f, single);
  return absl::OkStatus();
}

struct Flags {
  ReaderOptions corpus;  // format set from `format`
  std::string format = "lines";
  std::string consistency = "async";
  std::vector<std::string> workloads = {"grow", "shrink"};
  uint32_t topics = 100;
  uint64_t max_docs = 0;
  int sweeps = 30;
  int move_at = 0;  // 0: a third of sweeps
  int repeat = 3;
};

// The baseline, then each workload `repeat` times; the exit code.
int Run(const Flags& flags, const sync::Consistency& consistency) {
  auto redis = RedisProcess::Start();
  if (!redis.ok()) {
    std::fprintf(stderr, "%s\n", redis.status().ToString().c_str());
    return 1;
  }
  LogLines log;
  BenchConfig cfg;
  cfg.sweeps = flags.sweeps;
  cfg.move_at = flags.move_at;
  cfg.base.redis_url = (*redis)->url();
  cfg.base.corpus = flags.corpus;
  cfg.base.max_docs = flags.max_docs;
  cfg.base.num_topics = flags.topics;
  cfg.base.seed = 7;
  cfg.base.consistency = consistency;
  cfg.base.join_timeout = absl::Seconds(120);
  cfg.base.log = log.fn();
  // The sync path as deployed: authenticated, every frame MACed.
  cfg.base.cluster_key = "elastic-bench-cluster-key-0001";
  const unsigned cores = std::thread::hardware_concurrency();
  std::printf(
      "# %s K=%u sweeps=%d move_at=%d max_docs=%llu consistency=%s; "
      "%u cores%s\n",
      flags.corpus.path.c_str(), flags.topics, cfg.sweeps, cfg.move_at,
      static_cast<unsigned long long>(flags.max_docs),
      flags.consistency.c_str(), cores,
      cores < 4 ? ": the 3 or 4 nodes share them, so no wall-clock "
                  "speed-up over one node can show here (cpu_eff "
                  "is the figure)"
                : "");
  auto single = bench::RunSingleNode(flags.corpus, {.max_docs = flags.max_docs,
                                                    .topics = flags.topics,
                                                    .sweeps = flags.sweeps});
  if (!single.ok()) {
    std::fprintf(stderr, "%s\n", single.status().ToString().c_str());
    return 1;
  }
  std::printf("# single node: %.0f tokens/s, %.4g CPU s/token\n",
              single->tokens_per_s, single->cpu_seconds_per_token);
  PrintHeader();
  for (int r = 0; r < flags.repeat; ++r) {
    for (const std::string& w : flags.workloads) {
      cfg.base.cluster = absl::StrCat("elastic-", w, "-", ::getpid(), "-", r);
      absl::Status s = RunWorkload(w, cfg, &log, *single);
      if (!s.ok()) {
        std::fprintf(stderr, "%s: %s\n", w.c_str(), s.ToString().c_str());
        return 1;
      }
    }
  }
  return 0;
}

int Main(int argc, char** argv) {
  DisableMutexDeadlockDetection();
  CLI::App app{
      "elastic_bench: keys, bytes, time and tokens/s of a 3->4 grow "
      "and a 4->3 shrink of a training cluster"};
  std::string data = "../shared/data";
  if (const char* d = std::getenv("LATENTD_DATA_DIR")) data = d;
  Flags f;
  f.corpus.path = data + "/20newsgroups-bydate/news20.lines.zst";
  app.add_option("--corpus", f.corpus.path, "Corpus file (default news20)");
  app.add_option("--vocab", f.corpus.vocab_path, "Its vocabulary (ldac/uci)");
  app.add_option("--format", f.format, "Corpus format")->capture_default_str();
  app.add_option("--topics", f.topics, "K")->capture_default_str();
  app.add_option("--sweeps", f.sweeps, "sweeps per node")
      ->capture_default_str();
  app.add_option("--move-at", f.move_at,
                 "the move starts once node0 has done this many sweeps "
                 "(default: a third of --sweeps)");
  app.add_option("--max-docs", f.max_docs, "the file's first N documents only")
      ->capture_default_str();
  app.add_option("--consistency", f.consistency, "async | ssp:<s> | bsp")
      ->capture_default_str();
  app.add_option("--workloads", f.workloads, "grow, shrink")->delimiter(',');
  app.add_option("--repeat", f.repeat, "runs of each workload, one row each")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (f.move_at == 0) f.move_at = std::max(1, f.sweeps / 3);
  bool ok = f.move_at >= 1 && f.move_at < f.sweeps && f.repeat >= 1;
  for (const std::string& w : f.workloads) ok &= w == "grow" || w == "shrink";
  auto format = ParseCorpusFormat(f.format);
  auto consistency = sync::Consistency::Parse(f.consistency);
  if (!ok || !format.ok() || !consistency.ok()) {
    std::fprintf(stderr,
                 "need 1 <= --move-at < --sweeps, --repeat >= 1, workloads "
                 "grow or shrink, a known --format and --consistency\n");
    return 2;
  }
  f.corpus.format = *format;
  if (f.corpus.format != CorpusFormat::kLdaC &&
      f.corpus.format != CorpusFormat::kUci) {
    // Preprocessed text such as news20.lines: keep every word as it is.
    f.corpus.tokenizer.remove_stopwords = false;
    f.corpus.tokenizer.min_length = 1;
  }
  return Run(f, *consistency);
}

}  // namespace
}  // namespace latentd

int main(int argc, char** argv) { return latentd::Main(argc, argv); }
