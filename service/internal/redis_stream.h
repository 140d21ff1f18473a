// The entries of a Redis stream as XREADGROUP returns them to RedisIngester
// (service/redis_ingest.h). The reply comes off the network, so its shape is
// checked, never assumed: an element that is not an entry, or whose id is
// not a string, is skipped (it could not be acknowledged); a field of
// another type than a string is left empty (the entry is then rejected for
// having no text, and acknowledged).
//
// Thread-safety: a pure function.
#ifndef LATENTD_SERVICE_INTERNAL_REDIS_STREAM_H_
#define LATENTD_SERVICE_INTERNAL_REDIS_STREAM_H_

#include <string>
#include <vector>

#include "sync/control/membership.h"

namespace latentd::service::internal {

struct RedisStreamEntry {
  std::string id;      // the stream entry id, e.g. "1700000000000-0"
  std::string text;    // field "text" (required to ingest)
  std::string user;    // field "user" (optional)
  std::string doc_id;  // field "id" (optional)
};

// Parses an XREADGROUP reply of one stream (as sync::RedisClient returns
// it): [[stream, [[id, [field, value, ...]], ...]]]; a nil reply or any
// other shape gives no entries.
std::vector<RedisStreamEntry> ParseStreamEntries(const sync::RedisReply& reply);

}  // namespace latentd::service::internal

#endif  // LATENTD_SERVICE_INTERNAL_REDIS_STREAM_H_
