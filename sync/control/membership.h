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
// RedisClient is latentd's one Redis client: the cluster control plane
// and the Redis stream ingester (service/redis_ingest.h) both use it.
//
// Thread-safety: RedisClient is not thread-safe (one connection); use one
// per thread. JoinCluster and FlattenRedisReply are reentrant.
#ifndef LATENTD_SYNC_CONTROL_MEMBERSHIP_H_
#define LATENTD_SYNC_CONTROL_MEMBERSHIP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hashring/ring_config.h"
#include "sync/control/redis_reply_bound.h"

struct redisReply;  // hiredis

namespace latentd::sync {

// One Redis reply, flattened.
struct RedisReply {
  enum class Type { kNil, kString, kInteger, kArray, kStatus };
  Type type = Type::kNil;
  std::string str;                   // kString, kStatus
  int64_t integer = 0;               // kInteger
  std::vector<RedisReply> elements;  // kArray
};

// `reply` as hiredis parsed it, flattened; a type RedisReply does not name
// (an error reply inside an array, say) becomes kNil.
RedisReply FlattenRedisReply(const redisReply& reply);

class RedisClient {
 public:
  // `url`: any form of sync/control/redis_url.h
  // ("redis://[:PASSWORD@]host:port", "host:port", "unix:/path", ...); AUTH is
  // sent when it names a password. Every reply is read through a
  // RedisReplyBound with `limits`. kInvalidArgument for a malformed url,
  // kUnavailable if unreachable within `timeout` (also the per-command
  // timeout), kPermissionDenied if Redis refuses the credentials.
  static absl::StatusOr<std::unique_ptr<RedisClient>> Connect(
      std::string_view url, absl::Duration timeout = absl::Seconds(2),
      const RedisReplyLimits& limits = {});
  ~RedisClient();

  // Runs one command (binary-safe arguments). A Redis error reply becomes
  // kFailedPrecondition, a connection problem, a timeout or a reply over
  // the RedisReplyBound's limits (the connection is then dead)
  // kUnavailable.
  absl::StatusOr<RedisReply> Command(const std::vector<std::string>& args);

  // Sets the per-command timeout from now on: a blocking command (XREADGROUP
  // ... BLOCK ms) needs one above its block. kInvalidArgument unless
  // positive, kUnavailable if hiredis cannot set it.
  absl::Status SetCommandTimeout(absl::Duration timeout);

  // Why the bound refused the last reply (the connection is then dead);
  // empty if it did not.
  const std::string& refusal() const { return bound_.refusal(); }

 private:
  // Installs bound_ on the context's reader.
  RedisClient(void* context, const RedisReplyLimits& limits);
  void* context_;  // redisContext
  // Every reply is read through it; it outlives the context (the
  // destructor frees the context first).
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

#endif  // LATENTD_SYNC_CONTROL_MEMBERSHIP_H_
