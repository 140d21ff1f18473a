// Seeded network-fault schedules for daemon_netfault_test.cc: which links of
// a NetTopology are cut, when, and for how long. A schedule is a pure
// function of its seed and the durations, so a seed printed by a failing
// run replays the same faults.
//
// Thread safety: plain values and pure functions.
#ifndef LATENTD_TESTS_SERVICE_NETFAULT_SCHEDULE_H_
#define LATENTD_TESTS_SERVICE_NETFAULT_SCHEDULE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace latentd::testing {

enum class FaultKind {
  kIsolate,   // one node cut from every peer and Redis, then healed
  kRedisCut,  // one node cut from Redis only
  kHalves,    // the nodes cut into two halves; Redis with both or one
  kFlap,      // one link down and up every `flap_ms`
};
const char* FaultKindName(FaultKind kind);

// The bounds a schedule's durations are drawn from.
struct FaultDurations {
  int cut_min_ms = 2000;  // how long a cut lasts (not kFlap)
  int cut_max_ms = 4000;
  int flap_ms = 1000;     // kFlap: each down and each up
  int flap_cycles = 3;    // kFlap: down/up pairs
  int lead_max_ms = 800;  // ingestion before the fault, at most
};

struct FaultSchedule {
  uint32_t seed = 0;
  FaultKind kind = FaultKind::kIsolate;
  int nodes = 0;
  int lead_ms = 0;  // ingestion and training before the first cut
  int cut_ms = 0;   // a cut's length; kFlap: flap_ms
  int cycles = 1;   // cuts (kFlap: flap_cycles, healed flap_ms between)
  // The links cut (endpoints as NetTopology's: -1 is Redis).
  std::vector<std::pair<int, int>> links;
  // The nodes that cannot reach Redis while cut: a failover of another
  // node is a membership change nobody was entitled to.
  std::vector<int> cut_from_redis;
};

// The schedule of `seed` over `nodes` nodes (at least 4 for kHalves): its
// kind is seed % 4 (so consecutive seeds take turns), the rest drawn from
// the seed.
FaultSchedule MakeSchedule(uint32_t seed, int nodes,
                           const FaultDurations& durations);

// One line: "halves {n0,n2}|{n1,n3}, redis with {n0,n2}, 2.6 s".
std::string Describe(const FaultSchedule& s);

}  // namespace latentd::testing

#endif  // LATENTD_TESTS_SERVICE_NETFAULT_SCHEDULE_H_
