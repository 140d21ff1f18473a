// RedisIngester: consumes a Redis stream in a consumer group (XREADGROUP)
// and feeds its entries to the service; an entry is XACKed only after its
// document is durable in the ingest log. Entry fields: "text" (required),
// "user" and "id" (optional).
//
// Exactly once: each record carries the source "redis:<stream>/<entry id>";
// an entry redelivered after a crash between the fsync and the XACK is found
// in the log and only acknowledged (never counted twice). On (re)connect the
// consumer first re-reads its own pending entries (ID 0), then new ones (>).
// An entry that can never be ingested (no text, no words) is acknowledged
// and counted as rejected, so it does not block the stream.
//
// Redis is reached through sync::RedisClient (sync/control/membership.h), the
// cluster's client: the same URL forms and AUTH. Redis failures are
// retried with backoff (1 s); they never stop the daemon. A reply that
// declares more array elements or longer strings than reply_limits allow
// (sync/control/redis_reply_bound.h) is refused before hiredis allocates for
// it, logged, counted (latentd_redis_refused_replies_total) and the connection
// is reopened. Thread-safety: Start/Stop from one thread; the consumer runs
// on its own thread.
#ifndef LATENTD_SERVICE_REDIS_INGEST_H_
#define LATENTD_SERVICE_REDIS_INGEST_H_

#include <atomic>
#include <string>
#include <thread>

#include "service/latentd_service.h"
#include "service/metrics.h"
#include "sync/control/redis_reply_bound.h"

namespace latentd::service {

struct RedisIngestOptions {
  // Any form of sync/control/redis_url.h: "host:port", "unix:/path/to/socket",
  // "redis://:PASSWORD@host:port", ...
  std::string address;
  std::string stream = "latentd:ingest";
  std::string group = "latentd";
  std::string consumer = "node-1";
  int batch = 100;     // entries per XREADGROUP
  int block_ms = 200;  // XREADGROUP BLOCK
  // The bound on one reply (defaults: 2^20 elements, 64 MiB strings).
  sync::RedisReplyLimits reply_limits;
};

class RedisIngester {
 public:
  // `service` and `metrics` must outlive this object.
  RedisIngester(const RedisIngestOptions& options, LatentdService* service,
                MetricsRegistry* metrics);
  ~RedisIngester();  // Stop()
  void Start();
  void Stop();

 private:
  void Run();
  RedisIngestOptions options_;
  LatentdService* service_;
  Counter* acked_;
  Counter* rejected_;
  Counter* errors_;
  Counter* refused_;
  std::atomic<bool> stop_{false};  // relaxed: a polled flag
  std::thread thread_;
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_REDIS_INGEST_H_
