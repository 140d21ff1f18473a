#include "hashring/placement.h"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

#include "base/check.h"
#include "hashring/ring_config.h"

namespace latentd::hashring {

Placement::Placement(RingConfig config) : config_(std::move(config)) {
  LATENTD_CHECK(ValidateRingConfig(config_).ok());
  const size_t m = config_.members.size();
  by_id_.resize(m);
  for (size_t i = 0; i < m; ++i) by_id_[i] = static_cast<MemberIndex>(i);
  std::sort(by_id_.begin(), by_id_.end(), [this](MemberIndex a, MemberIndex b) {
    return config_.members[a].id < config_.members[b].id;
  });
  id_rank_.resize(m);
  for (size_t rank = 0; rank < m; ++rank) {
    id_rank_[by_id_[rank]] = static_cast<uint32_t>(rank);
  }
}

Placement::~Placement() = default;

std::optional<MemberIndex> Placement::FindMember(std::string_view id) const {
  auto it =
      std::lower_bound(by_id_.begin(), by_id_.end(), id,
                       [this](MemberIndex a, std::string_view v) {
                         return std::string_view(config_.members[a].id) < v;
                       });
  if (it == by_id_.end() || config_.members[*it].id != id) return std::nullopt;
  return *it;
}

}  // namespace latentd::hashring
