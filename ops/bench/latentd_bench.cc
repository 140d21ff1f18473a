// latentd_bench: InferDocument latency and throughput against a running
// latentd, over HTTP/JSON, protobuf over HTTP and framed protobuf/TCP.
//
// Workload: documents of --tokens words drawn (seeded) from the daemon's
// topics' top words, so every word is known; for each protocol and each
// concurrency level (--concurrency, comma separated), that many client
// threads, each with its own connection, send InferDocument back to back
// for --seconds ("tcp-async": one client thread keeps that many requests in
// flight on one pipelined connection instead, see MeasureAsync). Prints per
// run: requests/s, p50, p90, p99 and max latency, and the ratio of each run's
// requests/s to concurrency 1 of the same protocol (the baseline measured in
// the same run). The daemon keeps training meanwhile (start it without
// --max-sweeps).
//
// Usage: latentd_bench --http HOST:PORT --tcp HOST:PORT [--seconds 5]
//        [--concurrency 1,8,32] [--tokens 200]
//        [--protocols tcp,tcp-async,http,json]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "base/fast_mutexes.h"
#include "base/random.h"
#include "service/api_client.h"
#include "sync/transport/transport.h"

namespace {

using latentd::service::ApiClient;
using latentd::service::Method;
using latentd::service::Protocol;

struct Run {
  double rps = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
  uint64_t errors = 0;
};

std::vector<std::string> Documents(const std::vector<std::string>& words,
                                   int tokens, int n) {
  std::vector<std::string> docs;
  latentd::Rng rng(42);
  for (int d = 0; d < n; ++d) {
    std::string text;
    for (int t = 0; t < tokens; ++t) {
      text += words[rng.UniformInt(words.size())];
      text += ' ';
    }
    docs.push_back(text);
  }
  return docs;
}

Run Summarize(std::vector<double> latencies, uint64_t errors, double elapsed);

Run Measure(const std::string& addr, Protocol p, int threads, double seconds,
            const std::vector<std::string>& docs) {
  std::vector<std::vector<double>> lat(threads);
  std::atomic<uint64_t> errors{0};
  std::atomic<bool> go{false}, stop{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      auto c = ApiClient::Create(addr, p);
      if (!c.ok()) {
        ++errors;
        return;
      }
      // One warm-up call opens the connection.
      latentd::api::InferDocumentRequest q;
      latentd::api::InferDocumentResponse r;
      q.set_text(docs[t % docs.size()]);
      (void)(*c)->Call(Method::kInferDocument, q, &r);
      while (!go.load()) std::this_thread::yield();
      for (size_t i = t; !stop.load(); i += threads) {
        q.set_text(docs[i % docs.size()]);
        q.set_seed(i + 1);
        const auto a = std::chrono::steady_clock::now();
        absl::Status s = (*c)->Call(Method::kInferDocument, q, &r);
        const auto b = std::chrono::steady_clock::now();
        if (!s.ok()) {
          ++errors;
          continue;
        }
        lat[t].push_back(std::chrono::duration<double>(b - a).count());
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto start = std::chrono::steady_clock::now();
  go = true;
  std::this_thread::sleep_for(
      std::chrono::milliseconds(static_cast<int>(seconds * 1000)));
  stop = true;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  for (auto& t : pool) t.join();
  std::vector<double> all;
  for (auto& l : lat) all.insert(all.end(), l.begin(), l.end());
  return Summarize(std::move(all), errors, elapsed);
}

Run Summarize(std::vector<double> all, uint64_t errors, double elapsed) {
  std::sort(all.begin(), all.end());
  Run run;
  run.errors = errors;
  if (all.empty()) return run;
  auto q = [&](double f) {
    return all[std::min(all.size() - 1, static_cast<size_t>(f * all.size()))];
  };
  run.rps = all.size() / elapsed;
  run.p50 = q(0.5);
  run.p90 = q(0.9);
  run.p99 = q(0.99);
  run.max = all.back();
  return run;
}

// tcp-async: one event-loop thread and one connection keep `in_flight`
// pipelined requests outstanding (each reply sends the next), as wrk-style
// load generators do, so that the client's own threads do not compete
// with the daemon for the cores of a small machine.
Run MeasureAsync(const std::string& addr, int in_flight, double seconds,
                 const std::vector<std::string>& docs) {
  latentd::sync::ClientOptions co;
  if (!latentd::service::SplitHostPort(addr, &co.host, &co.port).ok())
    return {};
  std::vector<std::string> payloads;
  for (size_t i = 0; i < docs.size(); ++i) {
    latentd::api::InferDocumentRequest q;
    q.set_text(docs[i]);
    q.set_seed(i + 1);
    payloads.push_back(q.SerializeAsString());
  }
  latentd::sync::EventLoop loop(1);
  latentd::sync::Client client(&loop, co);
  // Touched by the loop thread only, read once `outstanding` is 0.
  std::vector<double> lat;
  uint64_t errors = 0;
  std::atomic<bool> recording{false}, stop{false};
  std::atomic<int> outstanding{in_flight};
  std::function<void(size_t)> send = [&](size_t i) {
    const auto a = std::chrono::steady_clock::now();
    client.Call(
        static_cast<uint32_t>(Method::kInferDocument),
        payloads[i % payloads.size()], absl::Seconds(30),
        [&, a, i](absl::StatusOr<latentd::sync::Frame> reply) {
          const auto b = std::chrono::steady_clock::now();
          if (recording.load()) {
            if (reply.ok()) {
              lat.push_back(std::chrono::duration<double>(b - a).count());
            } else {
              ++errors;
            }
          }
          if (stop.load()) {
            outstanding.fetch_sub(1, std::memory_order_release);
          } else {
            send(i + static_cast<size_t>(in_flight));
          }
        });
  };
  for (int t = 0; t < in_flight; ++t) send(static_cast<size_t>(t));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto start = std::chrono::steady_clock::now();
  recording = true;
  std::this_thread::sleep_for(
      std::chrono::milliseconds(static_cast<int>(seconds * 1000)));
  recording = false;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  stop = true;
  while (outstanding.load(std::memory_order_acquire) > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  client.Close();
  return Summarize(std::move(lat), errors, elapsed);
}

}  // namespace

int main(int argc, char** argv) {
  latentd::DisableMutexDeadlockDetection();
  std::string http, tcp, levels = "1,8,32", protocols = "tcp,http,json";
  double seconds = 5;
  int tokens = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--http")
      http = v;
    else if (k == "--tcp")
      tcp = v;
    else if (k == "--seconds")
      seconds = std::atof(v.c_str());
    else if (k == "--concurrency")
      levels = v;
    else if (k == "--tokens")
      tokens = std::atoi(v.c_str());
    else if (k == "--protocols")
      protocols = v;
    else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  if (http.empty() || tcp.empty()) {
    std::fprintf(stderr, "usage: latentd_bench --http H:P --tcp H:P\n");
    return 2;
  }
  auto c = ApiClient::Create(tcp, Protocol::kTcp);
  latentd::api::ListTopicsRequest lq;
  lq.set_top_words(50);
  latentd::api::ListTopicsResponse lr;
  absl::Status s =
      c.ok() ? (*c)->Call(Method::kListTopics, lq, &lr) : c.status();
  if (!s.ok()) {
    std::fprintf(stderr, "ListTopics: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::vector<std::string> words;
  for (const auto& t : lr.topics()) {
    for (const auto& w : t.top_words()) words.push_back(w.word());
  }
  const std::vector<std::string> docs = Documents(words, tokens, 512);
  std::printf("InferDocument, %d-token documents, K=%d, %.0f s per run\n",
              tokens, lr.topics_size(), seconds);
  std::printf("%-6s %5s %10s %9s %9s %9s %9s %7s %6s\n", "proto", "conc",
              "req/s", "p50 ms", "p90 ms", "p99 ms", "max ms", "x c=1",
              "errors");
  for (absl::string_view name : absl::StrSplit(protocols, ',')) {
    const bool async = name == "tcp-async";
    const Protocol p = name == "tcp" || async ? Protocol::kTcp
                       : name == "http"       ? Protocol::kHttpProto
                                              : Protocol::kHttpJson;
    const std::string& addr = p == Protocol::kTcp ? tcp : http;
    double base = 0;
    for (absl::string_view lv : absl::StrSplit(levels, ',')) {
      int n = 1;
      if (!absl::SimpleAtoi(lv, &n) || n < 1) continue;
      Run r = async ? MeasureAsync(addr, n, seconds, docs)
                    : Measure(addr, p, n, seconds, docs);
      if (base == 0) base = r.rps;
      std::printf("%-6s %5d %10.0f %9.2f %9.2f %9.2f %9.2f %7.2f %6llu\n",
                  std::string(name).c_str(), n, r.rps, r.p50 * 1e3, r.p90 * 1e3,
                  r.p99 * 1e3, r.max * 1e3, base > 0 ? r.rps / base : 0,
                  static_cast<unsigned long long>(r.errors));
      std::fflush(stdout);
    }
  }
  return 0;
}
