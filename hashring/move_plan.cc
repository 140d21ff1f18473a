#include "hashring/move_plan.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "hashring/placement.h"
#include "hashring/ring.h"

namespace latentd::hashring {
namespace {

constexpr MemberIndex kNoMember = std::numeric_limits<MemberIndex>::max();

// Ids in `a` that are not in `b` (lists are at most kMaxReplication long).
std::vector<std::string> Difference(const std::vector<std::string>& a,
                                    const std::vector<std::string>& b) {
  std::vector<std::string> out;
  for (const std::string& id : a) {
    if (std::find(b.begin(), b.end(), id) == b.end()) out.push_back(id);
  }
  return out;
}

std::vector<std::string> Ids(const Ring& ring, const ReplicaList& replicas) {
  std::vector<std::string> ids;
  ids.reserve(replicas.size());
  for (MemberIndex m : replicas) ids.push_back(ring.member(m).id);
  return ids;
}

// Every position where either ring's replica lists may change, plus 0,
// ascending and unique. Between two neighbours both rings are constant.
std::vector<uint64_t> Boundaries(const Ring& before, const Ring& after) {
  const auto a = before.point_positions();
  const auto b = after.point_positions();
  std::vector<uint64_t> bounds;
  bounds.reserve(a.size() + b.size() + 1);
  bounds.push_back(0);
  std::merge(a.begin(), a.end(), b.begin(), b.end(),
             std::back_inserter(bounds));
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  return bounds;
}

}  // namespace

std::vector<std::string> MoveRange::Gained() const {
  return Difference(after, before);
}

std::vector<std::string> MoveRange::Lost() const {
  return Difference(before, after);
}

const MoveRange* MovePlan::Find(uint64_t position) const {
  if (ranges.empty()) return nullptr;
  // The candidate is the last range starting at or before `position`; if
  // there is none, only a range wrapping past 0 (the last one) can hold it.
  auto it = std::upper_bound(
      ranges.begin(), ranges.end(), position,
      [](uint64_t p, const MoveRange& r) { return p < r.range.begin; });
  const MoveRange& candidate = it == ranges.begin() ? ranges.back() : *(it - 1);
  return candidate.range.Contains(position) ? &candidate : nullptr;
}

double MovePlan::Fraction() const {
  double total = 0;
  for (const MoveRange& r : ranges) total += r.range.Fraction();
  return total;
}

MovePlan ComputeMovePlan(const Ring& before, const Ring& after) {
  MovePlan plan;
  plan.before_version = before.version();
  plan.after_version = after.version();

  // after's member index -> before's index of the same id, or kNoMember.
  std::vector<MemberIndex> to_before(after.members().size(), kNoMember);
  for (MemberIndex i = 0; i < after.members().size(); ++i) {
    to_before[i] = before.FindMember(after.member(i).id).value_or(kNoMember);
  }
  auto same_ids = [&](const ReplicaList& b, const ReplicaList& a) {
    if (a.size() != b.size()) return false;
    for (size_t j = 0; j < a.size(); ++j) {
      if (to_before[a[j]] != b[j]) return false;
    }
    return true;
  };

  const std::vector<uint64_t> bounds = Boundaries(before, after);
  // Lists of the last range emitted, to extend it while they stay the same.
  ReplicaList last_before, last_after;
  for (size_t i = 0; i < bounds.size(); ++i) {
    const uint64_t begin = bounds[i];
    const uint64_t end = i + 1 < bounds.size() ? bounds[i + 1] : 0;  // 0: 2^64
    const ReplicaList b = before.ReplicasAt(begin);
    const ReplicaList a = after.ReplicasAt(begin);
    if (same_ids(b, a)) continue;
    if (!plan.ranges.empty() && plan.ranges.back().range.end == begin &&
        b == last_before && a == last_after) {
      plan.ranges.back().range.end = end;
      continue;
    }
    plan.ranges.push_back(MoveRange{.range = {.begin = begin, .end = end},
                                    .before = Ids(before, b),
                                    .after = Ids(after, a)});
    last_before = b;
    last_after = a;
  }

  // Join the range ending at 2^64 with the one starting at 0 when they carry
  // the same lists: one arc across the wrap, kept last.
  if (plan.ranges.size() > 1) {
    MoveRange& first = plan.ranges.front();
    MoveRange& last = plan.ranges.back();
    if (first.range.begin == 0 && last.range.end == 0 &&
        first.before == last.before && first.after == last.after) {
      last.range.end = first.range.end;
      plan.ranges.erase(plan.ranges.begin());
    }
  }
  return plan;
}

}  // namespace latentd::hashring
