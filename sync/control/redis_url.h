// Redis addresses as latentd takes them (--cluster-redis, --redis, the
// cluster commands of latentctl), and the one place that opens and
// authenticates a hiredis connection to one.
//
// Accepted forms (the credentials are optional; a user needs Redis 6 ACLs,
// a password alone is `requirepass`):
//
//   redis://[[USER]:PASSWORD@]HOST[:PORT][/]   PORT defaults to 6379
//   HOST[:PORT]                                 as redis:// without secrets
//   unix:/PATH                                  a Unix socket
//   unix://[[USER]:PASSWORD@]/PATH              a Unix socket, with AUTH
//                                               (redis-py's form)
//
// A password on a command line is visible to every local user (ps): put
// the URL in the configuration file (mode 0600) instead. Every message and
// log line names a Redis by Where() or RedactRedisUrl, never with its
// password. hiredis 0.14 (Debian 12) has no TLS: reach a remote Redis over
// a tunnel or keep it on loopback (docs/operations.md, "Security").
//
// Thread-safety: the functions are reentrant; a returned connection is
// the caller's alone.
#ifndef LATENTD_SYNC_CONTROL_REDIS_URL_H_
#define LATENTD_SYNC_CONTROL_REDIS_URL_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

struct redisContext;  // hiredis

namespace latentd::sync {

struct RedisUrl {
  std::string host;  // empty for a Unix socket
  int port = 6379;
  std::string unix_path;  // empty for TCP
  std::string user;       // empty: the default user
  std::string password;   // empty: no AUTH

  // "HOST:PORT" or the socket's path: what messages name.
  std::string Where() const;
};

// kInvalidArgument naming the (redacted) url for a malformed one: a bad or
// missing port, no host, no socket path, a user without a password.
absl::StatusOr<RedisUrl> ParseRedisUrl(std::string_view url);

// `url` with its password replaced by "***" (credentials without a colon,
// which ParseRedisUrl refuses, are hidden whole); unchanged if it has none.
std::string RedactRedisUrl(std::string_view url);

// Connects to `url` within `timeout` (also each command's timeout from
// then on) and, if it names a password, sends AUTH. The caller owns the
// context (redisFree). kInvalidArgument for a malformed url, kUnavailable
// if Redis cannot be reached, kPermissionDenied if it refuses the
// credentials; each names the Redis, never the password.
absl::StatusOr<redisContext*> OpenRedis(std::string_view url,
                                        absl::Duration timeout);

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_CONTROL_REDIS_URL_H_
