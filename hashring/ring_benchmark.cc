// Lookup speed of Ring against Rendezvous, its baseline.
//
// Workloads (V = 256, k = 3, all weights 1, 2^16 random keys cycled):
//   BM_RingOwner/M, BM_RendezvousOwner/M        Owner(key)
//   BM_RingReplicas/M, BM_RendezvousReplicas/M  Replicas(key), k = 3
// for M = 16, 256 and 1024 members. After the usual table the program prints
// both side by side with the ring/rendezvous ratio of lookups per second.
//
//   hashring_ring_benchmark --benchmark_min_time=0.05
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/bench/collecting_reporter.h"
#include "hashring/placement.h"
#include "hashring/rendezvous.h"
#include "hashring/ring.h"
#include "hashring/ring_config.h"

namespace latentd::hashring {
namespace {

constexpr int kMemberCounts[] = {16, 256, 1024};
constexpr uint32_t kReplication = 3;
constexpr size_t kKeyCount = size_t{1} << 16;

RingConfig MakeConfig(int members) {
  RingConfig config;
  for (int i = 0; i < members; ++i) {
    config.members.push_back(Member{.id = absl::StrCat("node-", i),
                                    .address = absl::StrCat("10.0.0.1:", i),
                                    .weight = 1});
  }
  config.virtual_points_per_weight = kDefaultVirtualPointsPerWeight;
  config.replication = kReplication;
  return config;
}

const std::vector<uint64_t>& Keys() {
  static const std::vector<uint64_t>* const keys = [] {
    auto* k = new std::vector<uint64_t>(kKeyCount);
    std::mt19937_64 rng(42);
    for (uint64_t& key : *k) key = rng();
    return k;
  }();
  return *keys;
}

// One placement of each kind per member count, built on first use.
template <typename P>
const P& Get(int members) {
  static auto* const cache = new std::map<int, std::shared_ptr<const P>>;
  std::shared_ptr<const P>& p = (*cache)[members];
  if (p == nullptr) {
    absl::StatusOr<std::shared_ptr<const P>> built =
        P::Build(MakeConfig(members));
    if (!built.ok()) {
      std::fprintf(stderr, "%s\n", built.status().ToString().c_str());
      std::abort();
    }
    p = *std::move(built);
  }
  return *p;
}

template <typename P>
void BM_Owner(benchmark::State& state) {
  const P& placement = Get<P>(static_cast<int>(state.range(0)));
  const std::vector<uint64_t>& keys = Keys();
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(placement.Owner(keys[i++ & (kKeyCount - 1)]));
  }
  state.SetItemsProcessed(state.iterations());
}

template <typename P>
void BM_Replicas(benchmark::State& state) {
  const P& placement = Get<P>(static_cast<int>(state.range(0)));
  const std::vector<uint64_t>& keys = Keys();
  size_t i = 0;
  for (auto _ : state) {
    ReplicaList replicas = placement.Replicas(keys[i++ & (kKeyCount - 1)]);
    benchmark::DoNotOptimize(replicas);
  }
  state.SetItemsProcessed(state.iterations());
}

void RegisterAll() {
  for (int m : kMemberCounts) {
    for (auto* b :
         {benchmark::RegisterBenchmark("BM_RingOwner", BM_Owner<Ring>),
          benchmark::RegisterBenchmark("BM_RendezvousOwner",
                                       BM_Owner<Rendezvous>),
          benchmark::RegisterBenchmark("BM_RingReplicas", BM_Replicas<Ring>),
          benchmark::RegisterBenchmark("BM_RendezvousReplicas",
                                       BM_Replicas<Rendezvous>)}) {
      b->Arg(m)->Unit(benchmark::kNanosecond);
    }
  }
}

void PrintComparison(const std::map<std::string, double>& ns) {
  std::printf("\n%-8s %-9s %14s %14s %13s %13s %9s\n", "members", "lookup",
              "ring ns", "rendezvous ns", "ring /s", "rendezvous /s",
              "ring/rdv");
  for (int m : kMemberCounts) {
    for (const char* op : {"Owner", "Replicas"}) {
      auto ring = ns.find(absl::StrCat("BM_Ring", op, "/", m));
      auto rdv = ns.find(absl::StrCat("BM_Rendezvous", op, "/", m));
      if (ring == ns.end() || rdv == ns.end()) continue;  // filtered out
      std::printf("%-8d %-9s %14.1f %14.1f %13.3g %13.3g %8.1fx\n", m, op,
                  ring->second, rdv->second, 1e9 / ring->second,
                  1e9 / rdv->second, rdv->second / ring->second);
    }
  }
}

}  // namespace
}  // namespace latentd::hashring

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  latentd::hashring::RegisterAll();
  latentd::bench::CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  latentd::hashring::PrintComparison(reporter.times());
  benchmark::Shutdown();
  return 0;
}
