#include "hashring/ring_config.h"

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/utf8.h"
#include "hashring/ring_config.pb.h"

namespace latentd::hashring {
namespace {

// "member 3 (id "node-3")", with the id escaped so any bytes print safely.
std::string DescribeMember(size_t index, const std::string& id) {
  return absl::StrCat("member ", index, " (id \"", absl::CHexEscape(id), "\")");
}

absl::Status Invalid(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("ring config: ", what));
}

absl::Status ValidateMember(size_t index, const Member& member) {
  if (member.id.empty()) {
    return Invalid(absl::StrCat("member ", index, " has an empty id"));
  }
  if (member.id.size() > kMaxMemberIdBytes) {
    return Invalid(absl::StrCat(DescribeMember(index, member.id), ": id is ",
                                member.id.size(), " bytes, more than ",
                                kMaxMemberIdBytes));
  }
  if (!IsValidUtf8(member.id)) {
    return Invalid(absl::StrCat(DescribeMember(index, member.id),
                                ": id is not valid UTF-8"));
  }
  if (!IsValidUtf8(member.address)) {
    return Invalid(absl::StrCat(DescribeMember(index, member.id),
                                ": address is not valid UTF-8"));
  }
  if (member.weight == 0) {
    return Invalid(absl::StrCat(DescribeMember(index, member.id),
                                ": weight is 0, must be at least 1"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateRingConfig(const RingConfig& config) {
  const size_t m = config.members.size();
  if (m == 0) return Invalid("no members");
  if (config.virtual_points_per_weight == 0) {
    return Invalid("virtual_points_per_weight is 0, must be at least 1");
  }
  if (config.replication == 0) {
    return Invalid("replication is 0, must be at least 1");
  }

  absl::flat_hash_map<std::string_view, size_t> first_index;
  first_index.reserve(m);
  uint64_t total_points = 0;
  for (size_t i = 0; i < m; ++i) {
    const Member& member = config.members[i];
    if (absl::Status s = ValidateMember(i, member); !s.ok()) return s;
    auto [it, inserted] = first_index.emplace(member.id, i);
    if (!inserted) {
      return Invalid(absl::StrCat(DescribeMember(i, member.id),
                                  ": id repeats member ", it->second));
    }
    // Both factors are below 2^32, so the product fits; the running total is
    // checked before it could overflow.
    total_points +=
        uint64_t{member.weight} * uint64_t{config.virtual_points_per_weight};
    if (total_points > kMaxTotalPoints) {
      return Invalid(absl::StrCat(
          "more than ", kMaxTotalPoints, " ring points (reached at ",
          DescribeMember(i, member.id), " with virtual_points_per_weight ",
          config.virtual_points_per_weight, "); lower V or the weights"));
    }
  }

  if (config.replication > m) {
    return Invalid(absl::StrCat("replication ", config.replication,
                                " exceeds the number of members (", m, ")"));
  }
  if (config.replication > kMaxReplication) {
    return Invalid(absl::StrCat("replication ", config.replication,
                                " exceeds the maximum ", kMaxReplication));
  }
  return absl::OkStatus();
}

absl::StatusOr<RingConfig> ParseRingConfig(std::string_view bytes) {
  RingConfigProto proto;
  if (bytes.size() > static_cast<size_t>(INT_MAX) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Invalid(
        absl::StrCat(bytes.size(), " bytes do not parse as a RingConfigProto"));
  }
  RingConfig config;
  config.members.reserve(proto.members_size());
  for (const MemberProto& m : proto.members()) {
    config.members.push_back(
        Member{.id = m.id(), .address = m.address(), .weight = m.weight()});
  }
  config.virtual_points_per_weight = proto.virtual_points_per_weight();
  config.replication = proto.replication();
  config.version = proto.version();
  if (absl::Status s = ValidateRingConfig(config); !s.ok()) return s;
  return config;
}

std::string SerializeRingConfig(const RingConfig& config) {
  RingConfigProto proto;
  for (const Member& m : config.members) {
    MemberProto* out = proto.add_members();
    out->set_id(m.id);
    out->set_address(m.address);
    out->set_weight(m.weight);
  }
  proto.set_virtual_points_per_weight(config.virtual_points_per_weight);
  proto.set_replication(config.replication);
  proto.set_version(config.version);
  return proto.SerializeAsString();
}

}  // namespace latentd::hashring
