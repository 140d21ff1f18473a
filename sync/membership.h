// Cluster membership in Redis (hiredis). Layout, for cluster NAME:
//
//   latentd:NAME:members   hash   member id -> "host:port"
//   latentd:NAME:ring      string serialized RingConfigProto (version 1),
//                                 written once (SET NX) by the first node
//                                 that sees `expected_members` registered
//
// Membership is fixed once the ring is written (online add/remove comes
// later): a node joining registers, waits for the ring, and builds its
// placement from it. Redis errors and timeouts map to kUnavailable.
//
// Thread-safety: RedisClient is not thread-safe (one connection); use one
// per thread. JoinCluster is reentrant.
#ifndef LATENTD_SYNC_MEMBERSHIP_H_
#define LATENTD_SYNC_MEMBERSHIP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hashring/ring_config.h"
#include "sync/redis_reply_bound.h"

namespace latentd::sync {

// One Redis reply, flattened.
struct RedisReply {
  enum class Type { kNil, kString, kInteger, kArray, kStatus };
  Type type = Type::kNil;
  std::string str;                   // kString, kStatus
  int64_t integer = 0;               // kInteger
  std::vector<RedisReply> elements;  // kArray
};

class RedisClient {
 public:
  // `url`: any form of sync/redis_url.h ("redis://[:PASSWORD@]host:port",
  // "host:port", "unix:/path", ...); AUTH is sent when it names a password.
  // kInvalidArgument for a malformed url, kUnavailable if unreachable
  // within `timeout` (also the per-command timeout), kPermissionDenied if
  // Redis refuses the credentials.
  static absl::StatusOr<std::unique_ptr<RedisClient>> Connect(
      std::string_view url, absl::Duration timeout = absl::Seconds(2));
  ~RedisClient();

  // Runs one command (binary-safe arguments). A Redis error reply becomes
  // kFailedPrecondition, a connection problem or a reply over the
  // RedisReplyBound's limits (the connection is then dead) kUnavailable.
  absl::StatusOr<RedisReply> Command(const std::vector<std::string>& args);

 private:
  // Installs bound_ on the context's reader.
  explicit RedisClient(void* context);
  void* context_;  // redisContext
  // Every reply is read through it (a reply declaring more than 2^20
  // array elements is kUnavailable, the connection dead); it outlives
  // the context (the destructor frees the context first).
  RedisReplyBound bound_;
};

struct MembershipOptions {
  std::string cluster;            // cluster name
  std::string node_id;            // this node's member id
  std::string address;            // where peers reach it, "host:port"
  uint32_t expected_members = 1;  // the ring is fixed with this many
  absl::Duration wait_timeout = absl::Seconds(60);
  uint32_t virtual_points = 64;  // V of a ring written by this node
  uint32_t replication = 1;      // k of a ring written by this node
};

// Registers this node and returns the cluster's ring config, waiting (up to
// wait_timeout, then kDeadlineExceeded) until it exists. kFailedPrecondition
// if the ring does not list this node (it joined after the ring was fixed).
absl::StatusOr<hashring::RingConfig> JoinCluster(
    RedisClient* redis, const MembershipOptions& options);

std::string MembersKey(std::string_view cluster);
std::string RingKey(std::string_view cluster);

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_MEMBERSHIP_H_
