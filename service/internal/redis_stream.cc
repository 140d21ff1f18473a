#include "service/internal/redis_stream.h"

#include <string_view>

namespace latentd::service::internal {
namespace {

using Type = sync::RedisReply::Type;

bool IsString(const sync::RedisReply& r) { return r.type == Type::kString; }

bool IsArray(const sync::RedisReply& r, size_t min_elements) {
  return r.type == Type::kArray && r.elements.size() >= min_elements;
}

}  // namespace

std::vector<RedisStreamEntry> ParseStreamEntries(
    const sync::RedisReply& reply) {
  std::vector<RedisStreamEntry> out;
  if (!IsArray(reply, 1)) return out;
  const sync::RedisReply& stream = reply.elements[0];
  if (!IsArray(stream, 2)) return out;
  const sync::RedisReply& list = stream.elements[1];
  if (!IsArray(list, 0)) return out;
  for (const sync::RedisReply& e : list.elements) {
    // A pending entry deleted from the stream comes back as [id, nil].
    if (!IsArray(e, 2) || !IsString(e.elements[0])) continue;
    RedisStreamEntry entry;
    entry.id = e.elements[0].str;
    const sync::RedisReply& fields = e.elements[1];
    if (IsArray(fields, 0)) {
      for (size_t f = 0; f + 1 < fields.elements.size(); f += 2) {
        const sync::RedisReply& key = fields.elements[f];
        const sync::RedisReply& val = fields.elements[f + 1];
        if (!IsString(key) || !IsString(val)) continue;
        const std::string_view k = key.str;
        std::string* to = k == "text"   ? &entry.text
                          : k == "user" ? &entry.user
                          : k == "id"   ? &entry.doc_id
                                        : nullptr;
        if (to != nullptr) *to = val.str;
      }
    }
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace latentd::service::internal
