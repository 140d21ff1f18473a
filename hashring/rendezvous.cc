#include "hashring/rendezvous.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hashring/internal/point_hash.h"

namespace latentd::hashring {
namespace {

// Orders candidates by score, then by member id.
struct Candidate {
  uint64_t score;
  uint32_t id_rank;
  MemberIndex member;

  bool operator<(const Candidate& other) const {
    return score != other.score ? score < other.score : id_rank < other.id_rank;
  }
};

}  // namespace

absl::StatusOr<std::shared_ptr<const Rendezvous>> Rendezvous::Build(
    const RingConfig& config) {
  if (absl::Status s = ValidateRingConfig(config); !s.ok()) return s;
  return std::shared_ptr<const Rendezvous>(new Rendezvous(config));
}

Rendezvous::Rendezvous(RingConfig config) : Placement(std::move(config)) {
  std::string scratch;
  seed_begin_.reserve(members().size() + 1);
  for (const Member& m : members()) {
    seed_begin_.push_back(static_cast<uint32_t>(seeds_.size()));
    for (uint32_t i = 0; i < m.weight; ++i) {
      seeds_.push_back(internal::PointHash(m.id, i, scratch));
    }
  }
  seed_begin_.push_back(static_cast<uint32_t>(seeds_.size()));
}

uint64_t Rendezvous::Score(uint64_t position, MemberIndex j) const {
  uint64_t score = std::numeric_limits<uint64_t>::max();
  for (uint32_t s = seed_begin_[j]; s < seed_begin_[j + 1]; ++s) {
    score = std::min(score, internal::RendezvousScore(position, seeds_[s]));
  }
  return score;
}

MemberIndex Rendezvous::Owner(Key key) const {
  const uint64_t position = RingPosition(key);
  Candidate best{std::numeric_limits<uint64_t>::max(),
                 std::numeric_limits<uint32_t>::max(), 0};
  const MemberIndex m = static_cast<MemberIndex>(members().size());
  for (MemberIndex j = 0; j < m; ++j) {
    const Candidate c{Score(position, j), IdRank(j), j};
    if (c < best) best = c;
  }
  return best.member;
}

ReplicaList Rendezvous::Replicas(Key key) const {
  const uint64_t position = RingPosition(key);
  const uint32_t k = replication();
  Candidate top[kMaxReplication];  // the best `size` so far, ascending
  uint32_t size = 0;
  const MemberIndex m = static_cast<MemberIndex>(members().size());
  for (MemberIndex j = 0; j < m; ++j) {
    const Candidate c{Score(position, j), IdRank(j), j};
    if (size == k && !(c < top[k - 1])) continue;
    uint32_t slot = size < k ? size++ : k - 1;
    for (; slot > 0 && c < top[slot - 1]; --slot) top[slot] = top[slot - 1];
    top[slot] = c;
  }
  ReplicaList replicas;
  for (uint32_t i = 0; i < size; ++i) replicas.push_back(top[i].member);
  return replicas;
}

}  // namespace latentd::hashring
