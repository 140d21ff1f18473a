#include "service/redis_ingest.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/log.h"
#include "service/internal/redis_stream.h"
#include "sync/control/membership.h"
#include "sync/control/redis_url.h"

namespace latentd::service {
namespace {

void RedisWarning(const std::string& line) {
  log::Warning("latentd redis", line);
}

// The connection of one round of the consumer, its commands given 5 s
// (above any XREADGROUP BLOCK).
absl::StatusOr<std::unique_ptr<sync::RedisClient>> Connect(
    const RedisIngestOptions& o) {
  absl::StatusOr<std::unique_ptr<sync::RedisClient>> c =
      sync::RedisClient::Connect(o.address, absl::Seconds(2), o.reply_limits);
  if (c.ok()) {
    if (absl::Status s = (*c)->SetCommandTimeout(absl::Seconds(5)); !s.ok()) {
      return s;
    }
  }
  return c;
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
    absl::StatusOr<std::unique_ptr<sync::RedisClient>> connected =
        Connect(options_);
    if (!connected.ok()) {
      errors_->Add();
      RedisWarning(
          absl::StrCat("cannot connect: ", connected.status().message()));
      absl::SleepFor(absl::Seconds(1));
      continue;
    }
    sync::RedisClient& redis = **connected;
    // A Redis error reply (BUSYGROUP: the group exists) is no failure.
    absl::StatusOr<sync::RedisReply> created = redis.Command(
        {"XGROUP", "CREATE", options_.stream, options_.group, "0", "MKSTREAM"});
    if (!created.ok() &&
        created.status().code() != absl::StatusCode::kFailedPrecondition) {
      errors_->Add();
      RedisWarning(
          absl::StrCat("XGROUP CREATE failed: ", created.status().message()));
      absl::SleepFor(absl::Seconds(1));
      continue;
    }
    bool backlog = true;  // first our own pending entries, then new ones
    while (!stop_.load(std::memory_order_relaxed)) {
      absl::StatusOr<sync::RedisReply> r = redis.Command(
          {"XREADGROUP", "GROUP", options_.group, options_.consumer, "COUNT",
           std::to_string(options_.batch), "BLOCK",
           std::to_string(options_.block_ms), "STREAMS", options_.stream,
           backlog ? "0" : ">"});
      if (!r.ok() && !redis.refusal().empty()) {
        errors_->Add();
        refused_->Add();
        RedisWarning(absl::StrCat(
            "XREADGROUP reply from ", sync::RedactRedisUrl(options_.address),
            " refused: ", redis.refusal(), " (reconnecting)"));
        break;  // the connection is dead: reconnect
      }
      if (!r.ok()) {
        errors_->Add();
        RedisWarning(absl::StrCat("XREADGROUP failed: ", r.status().message()));
        break;  // reconnect
      }
      std::vector<internal::RedisStreamEntry> entries =
          internal::ParseStreamEntries(*r);
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
          RedisWarning(absl::StrCat("entry ", e.id,
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
          RedisWarning(
              absl::StrCat("entry ", e.id, " rejected: ", limits.message()));
          continue;
        }
        records.push_back(std::move(rec));
      }
      absl::StatusOr<uint64_t> n = service_->IngestRecords(std::move(records));
      if (!n.ok()) {
        errors_->Add();
        RedisWarning(absl::StrCat("ingest failed, entries stay pending: ",
                                  n.status().message()));
        absl::SleepFor(absl::Seconds(1));
        backlog = true;
        continue;
      }
      // Durable: acknowledge.
      bool ack_ok = true;
      for (const std::string& id : ids) {
        if (!redis.Command({"XACK", options_.stream, options_.group, id})
                 .ok()) {
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
