#include "hashring/ring_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "hashring/rendezvous.h"
#include "hashring/ring.h"
#include "hashring/ring_config.pb.h"

namespace latentd::hashring {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

RingConfig ThreeMembers() {
  RingConfig config;
  config.members = {{.id = "alpha", .address = "10.0.0.1:7000", .weight = 1},
                    {.id = "beta", .address = "10.0.0.2:7000", .weight = 2},
                    {.id = "gamma", .address = "10.0.0.3:7000", .weight = 1}};
  config.virtual_points_per_weight = 64;
  config.replication = 2;
  config.version = 17;
  return config;
}

// The error ValidateRingConfig gives for `config`; fails the test if none.
std::string ErrorFor(const RingConfig& config) {
  absl::Status status = ValidateRingConfig(config);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  return std::string(status.message());
}

TEST(RingConfig, ValidConfigPasses) {
  EXPECT_TRUE(ValidateRingConfig(ThreeMembers()).ok());
}

TEST(RingConfig, SerializeThenParseGivesTheSameConfig) {
  const RingConfig config = ThreeMembers();
  absl::StatusOr<RingConfig> parsed =
      ParseRingConfig(SerializeRingConfig(config));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, config);
}

TEST(RingConfig, ParseRejectsBytesThatAreNotAProto) {
  absl::StatusOr<RingConfig> parsed = ParseRingConfig("\xff\xff\xff\xff");
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parsed.status().message(), HasSubstr("do not parse"));
}

TEST(RingConfig, ParseRejectsAnInconsistentConfig) {
  RingConfig config = ThreeMembers();
  config.members[2].id = "alpha";
  absl::StatusOr<RingConfig> parsed =
      ParseRingConfig(SerializeRingConfig(config));
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parsed.status().message(), HasSubstr("\"alpha\""));
}

// proto3 cannot tell an unset weight or V from 0: both are rejected.
TEST(RingConfig, ParseRejectsUnsetWeightAndUnsetVirtualPoints) {
  RingConfigProto proto;
  MemberProto* member = proto.add_members();
  member->set_id("only");
  proto.set_replication(1);
  proto.set_virtual_points_per_weight(16);
  EXPECT_THAT(ParseRingConfig(proto.SerializeAsString()).status().message(),
              HasSubstr("weight is 0"));

  member->set_weight(1);
  proto.clear_virtual_points_per_weight();
  EXPECT_THAT(ParseRingConfig(proto.SerializeAsString()).status().message(),
              HasSubstr("virtual_points_per_weight is 0"));
}

TEST(RingConfig, RejectsNoMembers) {
  RingConfig config = ThreeMembers();
  config.members.clear();
  EXPECT_THAT(ErrorFor(config), HasSubstr("no members"));
}

TEST(RingConfig, RejectsEmptyIdNamingItsIndex) {
  RingConfig config = ThreeMembers();
  config.members[1].id.clear();
  EXPECT_THAT(ErrorFor(config), HasSubstr("member 1 has an empty id"));
}

TEST(RingConfig, RejectsDuplicateIdsNamingBothMembers) {
  RingConfig config = ThreeMembers();
  config.members[2].id = "beta";
  EXPECT_THAT(ErrorFor(config), AllOf(HasSubstr("member 2 (id \"beta\")"),
                                      HasSubstr("repeats member 1")));
}

TEST(RingConfig, RejectsZeroWeightNamingTheMember) {
  RingConfig config = ThreeMembers();
  config.members[2].weight = 0;
  EXPECT_THAT(ErrorFor(config), AllOf(HasSubstr("member 2 (id \"gamma\")"),
                                      HasSubstr("weight is 0")));
}

TEST(RingConfig, RejectsZeroVirtualPoints) {
  RingConfig config = ThreeMembers();
  config.virtual_points_per_weight = 0;
  EXPECT_THAT(ErrorFor(config), HasSubstr("virtual_points_per_weight is 0"));
}

TEST(RingConfig, RejectsZeroReplication) {
  RingConfig config = ThreeMembers();
  config.replication = 0;
  EXPECT_THAT(ErrorFor(config), HasSubstr("replication is 0"));
}

TEST(RingConfig, RejectsReplicationAboveMemberCount) {
  RingConfig config = ThreeMembers();
  config.replication = 4;
  EXPECT_THAT(ErrorFor(config),
              HasSubstr("replication 4 exceeds the number of members (3)"));
  config.replication = 3;
  EXPECT_TRUE(ValidateRingConfig(config).ok());
}

TEST(RingConfig, RejectsReplicationAboveTheMaximum) {
  RingConfig config;
  for (int i = 0; i < 10; ++i) {
    config.members.push_back(
        {.id = absl::StrCat("n", i), .address = "", .weight = 1});
  }
  config.replication = kMaxReplication + 1;
  EXPECT_THAT(ErrorFor(config), HasSubstr("exceeds the maximum"));
}

TEST(RingConfig, RejectsAbsurdTotalPoints) {
  RingConfig config = ThreeMembers();
  config.virtual_points_per_weight = 1u << 21;  // beta alone: 2^22 points
  EXPECT_THAT(ErrorFor(config),
              AllOf(HasSubstr("more than 4194304 ring points"),
                    HasSubstr("member 1 (id \"beta\")")));
  // Weights near 2^32 must not overflow the running total into a pass.
  config.virtual_points_per_weight = 0xFFFFFFFFu;
  config.members[0].weight = 0xFFFFFFFFu;
  EXPECT_THAT(ErrorFor(config), HasSubstr("member 0 (id \"alpha\")"));
}

TEST(RingConfig, RejectsIdsThatAreTooLongOrNotUtf8) {
  RingConfig config = ThreeMembers();
  config.members[0].id = std::string(kMaxMemberIdBytes + 1, 'x');
  EXPECT_THAT(ErrorFor(config), HasSubstr("256 bytes"));

  config.members[0].id = "caf\xc3";  // truncated two-byte sequence
  EXPECT_THAT(ErrorFor(config),
              AllOf(HasSubstr("caf\\xc3"), HasSubstr("not valid UTF-8")));
  config.members[0].id = "\xed\xa0\x80";  // a surrogate, U+D800
  EXPECT_THAT(ErrorFor(config), HasSubstr("not valid UTF-8"));
  config.members[0].id = "\xc0\xaf";  // overlong '/'
  EXPECT_THAT(ErrorFor(config), HasSubstr("not valid UTF-8"));

  config.members[0].id = "café-\xf0\x9f\x9a\x80";  // é and U+1F680
  EXPECT_TRUE(ValidateRingConfig(config).ok());
  config.members[0].address = "\xff";
  EXPECT_THAT(ErrorFor(config), HasSubstr("address is not valid UTF-8"));
}

TEST(RingConfig, BuildersRejectInvalidConfigs) {
  RingConfig config = ThreeMembers();
  config.members[0].weight = 0;
  EXPECT_EQ(Ring::Build(config).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Rendezvous::Build(config).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace latentd::hashring
