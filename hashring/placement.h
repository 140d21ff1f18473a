// Placement: which member owns a key, and which members hold its replicas.
//
// Two implementations share this interface: Ring (consistent hashing with
// virtual points; hashring/ring.h), the one latentd uses, and Rendezvous
// (argmin hashing; hashring/rendezvous.h), the reference tests compare
// against and an option for small clusters. Both are built from a RingConfig,
// immutable once built, and shared between threads as
// std::shared_ptr<const ...>; a new config builds a new object.
//
//   std::shared_ptr<const Placement> placement = ...;
//   MemberIndex owner = placement->Owner(key);
//   const Member& node = placement->member(owner);
//   for (MemberIndex r : placement->Replicas(key)) Send(placement->member(r));
#ifndef LATENTD_HASHRING_PLACEMENT_H_
#define LATENTD_HASHRING_PLACEMENT_H_

#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "hashring/ring_config.h"
#include "hashring/ring_position.h"

namespace latentd::hashring {

// A member's index in RingConfig::members of the config a placement was built
// from. Indices are not comparable across configs; ids are.
using MemberIndex = uint32_t;

// The k members that hold a key, owner first, all distinct. A small value
// type (no allocation); copy it freely.
class ReplicaList {
 public:
  ReplicaList() = default;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // REQUIRES: i < size().
  MemberIndex operator[](size_t i) const {
    assert(i < size_);
    return members_[i];
  }
  // The owner. REQUIRES: !empty().
  MemberIndex owner() const { return (*this)[0]; }
  const MemberIndex* begin() const { return members_.data(); }
  const MemberIndex* end() const { return members_.data() + size_; }
  std::span<const MemberIndex> span() const { return {begin(), size_}; }

  // Appends `member`. REQUIRES: size() < kMaxReplication.
  void push_back(MemberIndex member) {
    assert(size_ < kMaxReplication);
    members_[size_++] = member;
  }

  friend bool operator==(const ReplicaList& a, const ReplicaList& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  std::array<MemberIndex, kMaxReplication> members_{};
  uint32_t size_ = 0;
};

// The placement interface. Implementations are immutable after construction:
// every method is const and safe to call from any number of threads at once.
class Placement {
 public:
  virtual ~Placement();
  Placement(const Placement&) = delete;
  Placement& operator=(const Placement&) = delete;

  // The member that owns `key`. Never fails: a built placement has at least
  // one member.
  virtual MemberIndex Owner(Key key) const = 0;

  // The config().replication members that hold `key`: Owner(key) first, then
  // the replicas in failover order. All distinct.
  virtual ReplicaList Replicas(Key key) const = 0;

  // The validated config this placement was built from.
  const RingConfig& config() const { return config_; }
  const std::vector<Member>& members() const { return config_.members; }
  // REQUIRES: index < members().size().
  const Member& member(MemberIndex index) const {
    assert(index < config_.members.size());
    return config_.members[index];
  }
  uint32_t replication() const { return config_.replication; }
  uint64_t version() const { return config_.version; }

  // The index of the member with this id, or nullopt if there is none.
  // O(log members).
  std::optional<MemberIndex> FindMember(std::string_view id) const;

  // The member's rank when all ids are sorted bytewise; breaks ties between
  // equal hashes the same way in every process, whatever the config's member
  // order. REQUIRES: index < members().size().
  uint32_t IdRank(MemberIndex index) const { return id_rank_[index]; }

 protected:
  // REQUIRES: ValidateRingConfig(config).ok().
  explicit Placement(RingConfig config);

 private:
  RingConfig config_;
  std::vector<MemberIndex> by_id_;  // member indices sorted by id
  std::vector<uint32_t> id_rank_;   // inverse of by_id_
};

}  // namespace latentd::hashring

#endif  // LATENTD_HASHRING_PLACEMENT_H_
