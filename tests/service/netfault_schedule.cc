#include "tests/service/netfault_schedule.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tests/service/netns_topology.h"

namespace latentd::testing {
namespace {

constexpr int kRedis = NetTopology::kRedis;

std::string Names(const std::vector<int>& endpoints) {
  std::vector<std::string> names;
  for (int e : endpoints) names.push_back(EndpointName(e));
  return absl::StrCat("{", absl::StrJoin(names, ","), "}");
}

}  // namespace

const char* FaultKindName(FaultKind kind) {
  switch (kind) {
    case FaultKind::kIsolate:
      return "isolate";
    case FaultKind::kRedisCut:
      return "redis-cut";
    case FaultKind::kHalves:
      return "halves";
    case FaultKind::kFlap:
      return "flap";
  }
  return "?";
}

FaultSchedule MakeSchedule(uint32_t seed, int nodes, const FaultDurations& d) {
  std::mt19937 rng(seed);
  auto pick = [&rng](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, std::max(lo, hi))(rng);
  };
  FaultSchedule s;
  s.seed = seed;
  s.kind = static_cast<FaultKind>(seed % 4);
  s.nodes = nodes;
  s.lead_ms = pick(200, d.lead_max_ms);
  s.cut_ms = pick(d.cut_min_ms, d.cut_max_ms);
  const int victim = pick(0, nodes - 1);
  switch (s.kind) {
    case FaultKind::kIsolate:
      s.links.push_back({victim, kRedis});
      for (int i = 0; i < nodes; ++i) {
        if (i != victim) s.links.push_back({victim, i});
      }
      s.cut_from_redis = {victim};
      break;
    case FaultKind::kRedisCut:
      s.links.push_back({victim, kRedis});
      s.cut_from_redis = {victim};
      break;
    case FaultKind::kHalves: {
      std::vector<int> order(nodes);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      const std::vector<int> a(order.begin(), order.begin() + nodes / 2);
      const std::vector<int> b(order.begin() + nodes / 2, order.end());
      for (int x : a) {
        for (int y : b) s.links.push_back({x, y});
      }
      // Redis stays with both halves, or with half a only.
      if (pick(0, 1) == 1) {
        for (int y : b) s.links.push_back({y, kRedis});
        s.cut_from_redis = b;
      }
      break;
    }
    case FaultKind::kFlap: {
      // A node's link to Redis or to another node.
      int other = pick(-1, nodes - 2);
      if (other >= victim) ++other;
      s.links.push_back({victim, other});
      if (other == kRedis) s.cut_from_redis = {victim};
      s.cut_ms = d.flap_ms;
      s.cycles = d.flap_cycles;
      break;
    }
  }
  return s;
}

std::string Describe(const FaultSchedule& s) {
  const double secs = s.cut_ms / 1000.0;
  const int victim = s.links.empty() ? 0 : s.links[0].first;
  switch (s.kind) {
    case FaultKind::kIsolate:
      return absl::StrFormat("isolate n%d from all, %.1f s", victim, secs);
    case FaultKind::kRedisCut:
      return absl::StrFormat("cut n%d from redis, %.1f s", victim, secs);
    case FaultKind::kHalves: {
      std::vector<int> a, b;
      for (const auto& [x, y] : s.links) {
        if (y == kRedis) continue;
        if (std::find(a.begin(), a.end(), x) == a.end()) a.push_back(x);
        if (std::find(b.begin(), b.end(), y) == b.end()) b.push_back(y);
      }
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      return absl::StrFormat(
          "halves %s|%s, redis with %s, %.1f s", Names(a), Names(b),
          s.cut_from_redis.empty() ? std::string("both") : Names(a), secs);
    }
    case FaultKind::kFlap:
      return absl::StrFormat("flap n%d-%s, %d x (%.1f s down, %.1f s up)",
                             victim, EndpointName(s.links[0].second), s.cycles,
                             secs, secs);
  }
  return "?";
}

}  // namespace latentd::testing
