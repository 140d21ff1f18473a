#include "service/redis_ingest.h"

#include <hiredis/hiredis.h>

#include <cstdio>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/log.h"
#include "service/internal/redis_stream.h"
#include "sync/redis_reply_bound.h"
#include "sync/redis_url.h"

namespace latentd::service {
namespace {

struct ReplyDeleter {
  void operator()(redisReply* r) const {
    if (r != nullptr) freeReplyObject(r);
  }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;
struct ContextDeleter {
  void operator()(redisContext* c) const {
    if (c != nullptr) redisFree(c);
  }
};
using Context = std::unique_ptr<redisContext, ContextDeleter>;

void Log(const std::string& line) { log::Warning("latentd redis", line); }

Context Connect(const std::string& address, std::string* error) {
  absl::StatusOr<redisContext*> c = sync::OpenRedis(address, absl::Seconds(2));
  if (!c.ok()) {
    *error = std::string(c.status().message());
    return nullptr;
  }
  return Context(*c);
}

}  // namespace

RedisIngester::RedisIngester(const RedisIngestOptions& options,
                             LatentdService* service, MetricsRegistry* metrics)
    : options_(options),
      service_(service),
      acked_(metrics->AddCounter("latentd_redis_acked_total",
                                 "Redis stream entries acknowledged")),
      rejected_(metrics->AddCounter("latentd_redis_rejected_total",
                                    "Redis entries without usable text")),
      errors_(metrics->AddCounter("latentd_redis_errors_total",
                                  "Redis connection or command failures")),
      refused_(metrics->AddCounter(
          "latentd_redis_refused_replies_total",
          "Redis replies refused for declaring more array elements or "
          "longer strings than the bound (the connection is reopened)")) {}

RedisIngester::~RedisIngester() { Stop(); }

void RedisIngester::Start() {
  thread_ = std::thread([this] { Run(); });
}

void RedisIngester::Stop() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

void RedisIngester::Run() {
  const std::string source_prefix =
      absl::StrCat("redis:", options_.stream, "/");
  while (!stop_.load(std::memory_order_relaxed)) {
    std::string error;
    // Declared before the context, which it must outlive.
    sync::RedisReplyBound bound(options_.reply_limits);
    Context c = Connect(options_.address, &error);
    if (c == nullptr) {
      errors_->Add();
      Log(absl::StrCat("cannot connect: ", error));
      absl::SleepFor(absl::Seconds(1));
      continue;
    }
    bound.Install(c->reader);
    struct timeval tv = {5, 0};
    redisSetTimeout(c.get(), tv);
    Reply created(static_cast<redisReply*>(
        redisCommand(c.get(), "XGROUP CREATE %s %s 0 MKSTREAM",
                     options_.stream.c_str(), options_.group.c_str())));
    if (created == nullptr) {
      errors_->Add();
      Log(absl::StrCat("XGROUP CREATE failed: ",
                       bound.refusal().empty() ? c->errstr : bound.refusal()));
      absl::SleepFor(absl::Seconds(1));
      continue;
    }
    bool backlog = true;  // first our own pending entries, then new ones
    while (!stop_.load(std::memory_order_relaxed)) {
      Reply r(static_cast<redisReply*>(redisCommand(
          c.get(), "XREADGROUP GROUP %s %s COUNT %d BLOCK %d STREAMS %s %s",
          options_.group.c_str(), options_.consumer.c_str(), options_.batch,
          options_.block_ms, options_.stream.c_str(), backlog ? "0" : ">")));
      if (r == nullptr && !bound.refusal().empty()) {
        errors_->Add();
        refused_->Add();
        Log(absl::StrCat("XREADGROUP reply from ",
                         sync::RedactRedisUrl(options_.address),
                         " refused: ", bound.refusal(), " (reconnecting)"));
        break;  // the connection is dead: reconnect
      }
      if (r == nullptr || r->type == REDIS_REPLY_ERROR) {
        errors_->Add();
        Log(absl::StrCat("XREADGROUP failed: ",
                         r == nullptr ? c->errstr : r->str));
        break;  // reconnect
      }
      std::vector<internal::RedisStreamEntry> entries =
          internal::ParseStreamEntries(r.get());
      if (entries.empty()) {
        backlog = false;
        continue;
      }
      std::vector<IngestRecord> records;
      std::vector<std::string> ids;
      for (internal::RedisStreamEntry& e : entries) {
        ids.push_back(e.id);
        absl::StatusOr<std::vector<std::string>> words =
            service_->TokenizeDocument(e.text);
        if (!words.ok()) {
          rejected_->Add();
          Log(absl::StrCat("entry ", e.id,
                           " rejected: ", words.status().message()));
          continue;
        }
        IngestRecord rec;
        rec.source = source_prefix + e.id;
        rec.doc_id = e.doc_id.empty() ? e.id : e.doc_id;
        rec.user = e.user;
        rec.words = std::move(*words);
        if (absl::Status limits = service_->CheckDocumentLimits(rec);
            !limits.ok()) {
          rejected_->Add();
          Log(absl::StrCat("entry ", e.id, " rejected: ", limits.message()));
          continue;
        }
        records.push_back(std::move(rec));
      }
      absl::StatusOr<uint64_t> n = service_->IngestRecords(std::move(records));
      if (!n.ok()) {
        errors_->Add();
        Log(absl::StrCat("ingest failed, entries stay pending: ",
                         n.status().message()));
        absl::SleepFor(absl::Seconds(1));
        backlog = true;
        continue;
      }
      // Durable: acknowledge.
      bool ack_ok = true;
      for (const std::string& id : ids) {
        Reply ack(static_cast<redisReply*>(
            redisCommand(c.get(), "XACK %s %s %s", options_.stream.c_str(),
                         options_.group.c_str(), id.c_str())));
        if (ack == nullptr || ack->type == REDIS_REPLY_ERROR) {
          ack_ok = false;
          break;
        }
        acked_->Add();
      }
      if (!ack_ok) {
        errors_->Add();
        break;  // reconnect; the log deduplicates the redelivery
      }
    }
    if (!stop_.load(std::memory_order_relaxed))
      absl::SleepFor(absl::Seconds(1));
  }
}

}  // namespace latentd::service
