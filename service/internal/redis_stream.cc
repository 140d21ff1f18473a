#include "service/internal/redis_stream.h"

#include <hiredis/hiredis.h>

#include <string_view>

namespace latentd::service::internal {
namespace {

bool IsString(const redisReply* r) {
  return r != nullptr && r->type == REDIS_REPLY_STRING && r->str != nullptr;
}

bool IsArray(const redisReply* r, size_t min_elements) {
  return r != nullptr && r->type == REDIS_REPLY_ARRAY &&
         r->elements >= min_elements && r->element != nullptr;
}

}  // namespace

std::vector<RedisStreamEntry> ParseStreamEntries(const redisReply* reply) {
  std::vector<RedisStreamEntry> out;
  if (!IsArray(reply, 1)) return out;
  const redisReply* stream = reply->element[0];
  if (!IsArray(stream, 2)) return out;
  const redisReply* list = stream->element[1];
  if (!IsArray(list, 0)) return out;
  for (size_t i = 0; i < list->elements; ++i) {
    const redisReply* e = list->element[i];
    // A pending entry deleted from the stream comes back as [id, nil].
    if (!IsArray(e, 2) || !IsString(e->element[0])) continue;
    RedisStreamEntry entry;
    entry.id.assign(e->element[0]->str, e->element[0]->len);
    const redisReply* fields = e->element[1];
    if (IsArray(fields, 0)) {
      for (size_t f = 0; f + 1 < fields->elements; f += 2) {
        const redisReply* key = fields->element[f];
        const redisReply* val = fields->element[f + 1];
        if (!IsString(key) || !IsString(val)) continue;
        const std::string_view k(key->str, key->len);
        std::string* to = k == "text"   ? &entry.text
                          : k == "user" ? &entry.user
                          : k == "id"   ? &entry.doc_id
                                        : nullptr;
        if (to != nullptr) to->assign(val->str, val->len);
      }
    }
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace latentd::service::internal
