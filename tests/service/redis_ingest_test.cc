// RedisIngester (service/redis_ingest.h) against a scripted Redis on
// 127.0.0.1 (a thread speaking RESP): a reply with an absurd array header
// is refused before hiredis allocates for it, counted, and the ingester
// reconnects and ingests and acknowledges the entry on the next
// connection.
#include "service/redis_ingest.h"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "base/testing/scratch_dir.h"
#include "gtest/gtest.h"
#include "tests/service/gateway_test_util.h"

namespace latentd::service {
namespace {

// A Redis that answers XGROUP with +OK, XACK with :1 (and records the id)
// and XREADGROUP: on its first connection with `hostile` (then reads
// on, as a broken server would), on later ones first with one entry
// "1-0", then with nil after 50 ms (a BLOCK that timed out).
class ScriptedRedis {
 public:
  explicit ScriptedRedis(std::string hostile) : hostile_(std::move(hostile)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)),
              0);
    EXPECT_EQ(::listen(listen_fd_, 8), 0);
    socklen_t len = sizeof(a);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedRedis() {
    stop_.store(true);
    thread_.join();
    ::close(listen_fd_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_.load(); }
  std::vector<std::string> acked() {
    absl::MutexLock l(&mu_);
    return acked_;
  }

 private:
  // Waits up to 50 ms for `fd` to be readable.
  static bool Readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 50) > 0;
  }
  void Serve() {
    while (!stop_.load()) {
      if (!Readable(listen_fd_)) continue;
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      ServeConnection(fd, connections_.fetch_add(1));
      ::close(fd);
    }
  }
  void ServeConnection(int fd, int index) {
    std::unique_ptr<redisReader, decltype(&redisReaderFree)> reader(
        redisReaderCreate(), &redisReaderFree);
    bool served_entry = false;
    char buf[4096];
    while (!stop_.load()) {
      if (!Readable(fd)) continue;
      const ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n <= 0) return;  // the client hung up
      redisReaderFeed(reader.get(), buf, static_cast<size_t>(n));
      void* command = nullptr;
      while (redisReaderGetReply(reader.get(), &command) == REDIS_OK &&
             command != nullptr) {
        const auto* c = static_cast<redisReply*>(command);
        std::vector<std::string> args;
        for (size_t i = 0; i < c->elements; ++i) {
          args.emplace_back(c->element[i]->str, c->element[i]->len);
        }
        freeReplyObject(command);
        std::string out;
        if (args[0] == "XGROUP") {
          out = "+OK\r\n";
        } else if (args[0] == "XACK") {
          absl::MutexLock l(&mu_);
          acked_.push_back(args.back());
          out = ":1\r\n";
        } else if (index == 0) {
          out = hostile_;
        } else if (!served_entry) {
          served_entry = true;
          out =
              "*1\r\n*2\r\n$14\r\nlatentd:ingest\r\n*1\r\n*2\r\n$3\r\n1-0\r\n"
              "*2\r\n$4\r\ntext\r\n$21\r\ncrude oil opec barrel\r\n";
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          out = "*-1\r\n";
        }
        if (::write(fd, out.data(), out.size()) < 0) return;
      }
    }
  }

  const std::string hostile_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  absl::Mutex mu_;
  std::vector<std::string> acked_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

// Runs an ingester with `o` against `redis` (o.address set here) over a
// small service in a scratch directory `name`, until the entry is
// acknowledged or 15 s pass.
void IngestUntilAcked(ScriptedRedis* redis, RedisIngestOptions o,
                      const std::string& name, MetricsRegistry* metrics) {
  const std::string dir = testing::ScratchDir("redis_ingest", name);
  auto service =
      LatentdService::Open(testing::SmallServiceOptions(dir), metrics);
  ASSERT_TRUE(service.ok()) << service.status();
  o.address = redis->address();
  {
    RedisIngester ingester(o, service->get(), metrics);
    ingester.Start();
    const auto start = std::chrono::steady_clock::now();
    while (redis->acked().empty() && testing::SecondsSince(start) < 15) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }  // stopped
  EXPECT_TRUE((*service)->SourceIngested("redis:latentd:ingest/1-0"));
}

uint64_t CounterValue(MetricsRegistry* metrics, const std::string& name) {
  return metrics->AddCounter(name, "")->value();
}

TEST(RedisIngester, RefusesAnAbsurdReplyHeaderAndReconnectsRegression) {
  // 13 bytes for which hiredis 0.14.1 alone would calloc 16 GiB.
  ScriptedRedis redis("*2147483647\r\n");
  MetricsRegistry metrics;
  IngestUntilAcked(&redis, RedisIngestOptions{}, "absurd", &metrics);
  EXPECT_EQ(redis.acked(), std::vector<std::string>{"1-0"});
  EXPECT_GE(redis.connections(), 2);
  EXPECT_EQ(CounterValue(&metrics, "latentd_redis_refused_replies_total"), 1u);
  EXPECT_GE(CounterValue(&metrics, "latentd_redis_errors_total"), 1u);
  EXPECT_EQ(CounterValue(&metrics, "latentd_redis_acked_total"), 1u);
}

TEST(RedisIngester, RefusesNestedHeadersOverTheBound) {
  // Each header within the bound, together over it (a bound of 1,000).
  ScriptedRedis redis("*2\r\n*1\r\n:1\r\n*999\r\n");
  RedisIngestOptions o;
  o.reply_limits.max_elements = 1000;
  MetricsRegistry metrics;
  IngestUntilAcked(&redis, o, "nested", &metrics);
  EXPECT_EQ(redis.acked(), std::vector<std::string>{"1-0"});
  EXPECT_EQ(CounterValue(&metrics, "latentd_redis_refused_replies_total"), 1u);
}

}  // namespace
}  // namespace latentd::service
