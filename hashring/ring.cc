#include "hashring/ring.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hashring/internal/point_hash.h"

namespace latentd::hashring {
namespace {

struct Point {
  uint64_t position;
  uint32_t id_rank;  // tie-break: member id order
  uint32_t index;    // then the point's index within its member
  MemberIndex member;
};

// All points of all members, sorted by (position, member id, index).
std::vector<Point> SortedPoints(const Placement& placement) {
  const RingConfig& config = placement.config();
  std::vector<Point> points;
  size_t total = 0;
  for (const Member& m : config.members) {
    total += size_t{m.weight} * config.virtual_points_per_weight;
  }
  points.reserve(total);
  std::string scratch;
  for (MemberIndex i = 0; i < config.members.size(); ++i) {
    const Member& m = config.members[i];
    const uint32_t count = m.weight * config.virtual_points_per_weight;
    for (uint32_t p = 0; p < count; ++p) {
      points.push_back(Point{.position = internal::PointHash(m.id, p, scratch),
                             .id_rank = placement.IdRank(i),
                             .index = p,
                             .member = i});
    }
  }
  std::sort(points.begin(), points.end(), [](const Point& a, const Point& b) {
    if (a.position != b.position) return a.position < b.position;
    if (a.id_rank != b.id_rank) return a.id_rank < b.id_rank;
    return a.index < b.index;
  });
  return points;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const Ring>> Ring::Build(
    const RingConfig& config) {
  if (absl::Status s = ValidateRingConfig(config); !s.ok()) return s;
  return std::shared_ptr<const Ring>(new Ring(config));
}

// The replica row of point p is its member followed by the row of point p+1
// with that member removed, cut to k: a walk backwards over the points fills
// every row in O(P·k). The walk goes round twice because the rows near the
// end wrap to the start: the first lap ends with a correct row 0 (every
// member appears in one lap and k <= members), the second lap builds every
// row from it.
Ring::Ring(RingConfig config)
    : Placement(std::move(config)), k_(replication()) {
  const std::vector<Point> points = SortedPoints(*this);
  const size_t n = points.size();
  positions_.resize(n);
  for (size_t p = 0; p < n; ++p) positions_[p] = points[p].position;

  table_.assign(n * k_, 0);
  std::array<MemberIndex, kMaxReplication> next{};  // row of point p+1
  uint32_t next_size = 0;
  for (size_t step = 0; step < 2 * n; ++step) {
    const size_t p = n - 1 - step % n;
    MemberIndex* row = &table_[p * k_];
    row[0] = points[p].member;
    uint32_t size = 1;
    for (uint32_t j = 0; j < next_size && size < k_; ++j) {
      if (next[j] != row[0]) row[size++] = next[j];
    }
    std::copy(row, row + size, next.begin());
    next_size = size;
  }
}

ReplicaList Ring::ReplicasAt(uint64_t position) const {
  const MemberIndex* row = &table_[PointAfter(position) * k_];
  ReplicaList replicas;
  for (uint32_t j = 0; j < k_; ++j) replicas.push_back(row[j]);
  return replicas;
}

}  // namespace latentd::hashring
