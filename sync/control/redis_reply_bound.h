// RedisReplyBound: a limit on what one Redis reply may make hiredis
// allocate, put in front of a hiredis reader (a connection's, or one of
// redisReaderCreate).
//
// Why: hiredis 0.14.1 (Debian 12's) callocs 8·N bytes for an array header
// `*N` as soon as it has read the header, before any element arrives, with
// N up to 2^31 - 1: 13 bytes from a hostile or broken Redis cost 16 GiB,
// and nested headers multiply that. 0.14.1 has no setting for it (1.0
// added reader->maxelements). The bound replaces the reader's reply-object
// functions with ones that count the elements every array of one reply
// declares and refuse the reply, before the allocation, once the count
// passes max_elements; a bulk string, status or error line longer than
// max_string_bytes is refused too (the reader holds its bytes already: the
// bound keeps them from being copied into a reply). A refusal fails the
// reader: hiredis returns no reply and the connection is dead (redisCommand
// returns null with context->err set); the caller drops it and reconnects.
// refusal() says why, e.g. "Redis reply declares 2147483647 array elements
// in all, over the bound of 1048576".
//
// Thread-safety: none of its own; it is used by the one thread that reads
// from the reader it is installed on.
#ifndef LATENTD_SYNC_CONTROL_REDIS_REPLY_BOUND_H_
#define LATENTD_SYNC_CONTROL_REDIS_REPLY_BOUND_H_

#include <hiredis/read.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace latentd::sync {

struct RedisReplyLimits {
  // Elements declared by all the arrays of one reply together (each costs
  // a pointer, 8 bytes, from its header on). An XREADGROUP of 100 entries
  // of 3 fields declares about 1,000; HGETALL of a 1,000-member cluster
  // 2,000.
  int64_t max_elements = int64_t{1} << 20;
  // Bytes of one bulk string, status or error line (Redis's own
  // proto-max-bulk-len is 512 MiB; latentd's documents and ring configs
  // are far smaller).
  size_t max_string_bytes = size_t{64} << 20;
};

class RedisReplyBound {
 public:
  explicit RedisReplyBound(RedisReplyLimits limits = {});
  RedisReplyBound(const RedisReplyBound&) = delete;
  RedisReplyBound& operator=(const RedisReplyBound&) = delete;

  // Installs the bound on `reader` (its reply functions and privdata).
  // REQUIRES: `reader` still has hiredis's default reply functions (the
  // bound wraps them, so replies stay plain redisReply objects that
  // freeReplyObject frees) and one bound per reader; this object outlives
  // the reader (redisFree/redisReaderFree call its freeObject).
  void Install(redisReader* reader);

  // Why the reply being read, or the last one, was refused; empty if it
  // was not.
  const std::string& refusal() const { return refusal_; }

  const RedisReplyLimits& limits() const { return limits_; }

 private:
  static void* CreateString(const redisReadTask* task, char* str, size_t len);
  static void* CreateArray(const redisReadTask* task, int elements);
  static void* CreateInteger(const redisReadTask* task, long long value);
  static void* CreateNil(const redisReadTask* task);
  static void FreeObject(void* reply);
  // A new reply starts at its root (a task without a parent).
  void StartIfRoot(const redisReadTask* task);

  RedisReplyLimits limits_;
  redisReplyObjectFunctions functions_{};
  // hiredis's own functions (static in libhiredis, the same for every
  // reader), taken from the reader at Install.
  const redisReplyObjectFunctions* defaults_ = nullptr;
  int64_t elements_ = 0;  // declared so far by the reply being read
  std::string refusal_;
};

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_CONTROL_REDIS_REPLY_BOUND_H_
