#include "sync/control/membership.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <algorithm>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sync/control/redis_url.h"

namespace latentd::sync {
namespace {

redisContext* Ctx(void* p) { return static_cast<redisContext*>(p); }

}  // namespace

RedisReply FlattenRedisReply(const redisReply& r) {
  RedisReply out;
  switch (r.type) {
    case REDIS_REPLY_STRING:
      out.type = RedisReply::Type::kString;
      out.str.assign(r.str, r.len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = RedisReply::Type::kStatus;
      out.str.assign(r.str, r.len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::kInteger;
      out.integer = r.integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::kArray;
      for (size_t i = 0; i < r.elements; ++i) {
        out.elements.push_back(FlattenRedisReply(*r.element[i]));
      }
      break;
    default:
      break;
  }
  return out;
}

std::string MembersKey(std::string_view cluster) {
  return absl::StrCat(
      "latentd:", absl::string_view(cluster.data(), cluster.size()),
      ":members");
}
std::string RingKey(std::string_view cluster) {
  return absl::StrCat(
      "latentd:", absl::string_view(cluster.data(), cluster.size()), ":ring");
}

absl::StatusOr<std::unique_ptr<RedisClient>> RedisClient::Connect(
    std::string_view url, absl::Duration timeout,
    const RedisReplyLimits& limits) {
  absl::StatusOr<redisContext*> c = OpenRedis(url, timeout);
  if (!c.ok()) return c.status();
  return std::unique_ptr<RedisClient>(new RedisClient(*c, limits));
}

RedisClient::RedisClient(void* context, const RedisReplyLimits& limits)
    : context_(context), bound_(limits) {
  bound_.Install(Ctx(context_)->reader);
}

RedisClient::~RedisClient() { redisFree(Ctx(context_)); }

absl::StatusOr<RedisReply> RedisClient::Command(
    const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  redisContext* c = Ctx(context_);
  if (c->err) {
    return absl::UnavailableError(absl::StrCat("redis: ", c->errstr));
  }
  auto* r = static_cast<redisReply*>(redisCommandArgv(
      c, static_cast<int>(argv.size()), argv.data(), lens.data()));
  if (r == nullptr) {
    return absl::UnavailableError(absl::StrCat(
        "redis: ", bound_.refusal().empty() ? c->errstr : bound_.refusal()));
  }
  if (r->type == REDIS_REPLY_ERROR) {
    std::string msg(r->str, r->len);
    freeReplyObject(r);
    return absl::FailedPreconditionError(absl::StrCat("redis: ", msg));
  }
  RedisReply out = FlattenRedisReply(*r);
  freeReplyObject(r);
  return out;
}

absl::Status RedisClient::SetCommandTimeout(absl::Duration timeout) {
  if (timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("redis: the timeout must be positive");
  }
  redisContext* c = Ctx(context_);
  if (redisSetTimeout(c, absl::ToTimeval(timeout)) != REDIS_OK) {
    return absl::UnavailableError(
        absl::StrCat("redis: cannot set the timeout: ", c->errstr));
  }
  return absl::OkStatus();
}

absl::StatusOr<hashring::RingConfig> JoinCluster(RedisClient* redis,
                                                 const MembershipOptions& o) {
  const std::string members_key = MembersKey(o.cluster);
  const std::string ring_key = RingKey(o.cluster);
  auto reg = redis->Command({"HSET", members_key, o.node_id, o.address});
  if (!reg.ok()) return reg.status();
  const absl::Time deadline = absl::Now() + o.wait_timeout;
  while (true) {
    auto ring = redis->Command({"GET", ring_key});
    if (!ring.ok()) return ring.status();
    if (ring->type == RedisReply::Type::kString) {
      absl::StatusOr<hashring::RingConfig> config =
          hashring::ParseRingConfig(ring->str);
      if (!config.ok()) return config.status();
      for (const auto& m : config->members) {
        if (m.id == o.node_id) return config;
      }
      return absl::FailedPreconditionError(absl::StrCat(
          "cluster ", o.cluster, " was fixed without member ", o.node_id));
    }
    auto all = redis->Command({"HGETALL", members_key});
    if (!all.ok()) return all.status();
    if (all->elements.size() / 2 >= o.expected_members) {
      hashring::RingConfig config;
      for (size_t i = 0; i + 1 < all->elements.size(); i += 2) {
        config.members.push_back(
            {all->elements[i].str, all->elements[i + 1].str, 1});
      }
      std::sort(config.members.begin(), config.members.end(),
                [](const auto& a, const auto& b) { return a.id < b.id; });
      config.virtual_points_per_weight = o.virtual_points;
      config.replication = std::min<uint32_t>(
          o.replication, static_cast<uint32_t>(config.members.size()));
      config.version = 1;
      auto set = redis->Command(
          {"SET", ring_key, hashring::SerializeRingConfig(config), "NX"});
      if (!set.ok()) return set.status();
      continue;  // read back whichever ring won
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "cluster ", o.cluster, ": ", all->elements.size() / 2, " of ",
          o.expected_members, " members registered in time"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace latentd::sync
