#include "tests/service/netfault_workload.h"

#include <chrono>
#include <random>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "service/api.pb.h"
#include "tests/service/daemon_cluster_util.h"

namespace latentd::testing {
namespace {

using service::Method;

constexpr const char* kCommonWord = "market";

}  // namespace

Workload::Workload(const std::vector<std::string>& addresses, uint32_t seed,
                   int users, int call_timeout_ms, int pause_ms)
    : seed_(seed), users_(users), pause_ms_(pause_ms) {
  for (const std::string& a : addresses) {
    auto c = service::ApiClient::Create(a, service::Protocol::kTcp,
                                        absl::Milliseconds(call_timeout_ms));
    EXPECT_TRUE(c.ok()) << a << ": " << c.status();
    clients_.push_back(c.ok() ? std::move(*c) : nullptr);
  }
  thread_ = std::thread([this] { Loop(); });
}

Workload::~Workload() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Workload::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_ = true;
  }
  cv_.notify_all();
}

void Workload::Pause() {
  std::unique_lock<std::mutex> lock(mu_);
  running_ = false;
  cv_.wait(lock, [this] { return !in_flight_; });
}

bool Workload::Send(size_t d, size_t node) {
  api::IngestRequest req;
  api::Document* doc = req.add_documents();
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Doc& x = docs_[d];
    doc->set_text(x.word + " " + kCommonWord);
    if (!x.user.empty()) doc->set_user(x.user);
    doc->set_source(x.source);
  }
  api::IngestResponse resp;
  service::ApiClient* c = clients_[node].get();
  const absl::Status s = c == nullptr ? absl::UnavailableError("no client")
                                      : c->Call(Method::kIngest, req, &resp);
  std::lock_guard<std::mutex> lock(mu_);
  // (accepted 0 with OK: a retry of a document already taken.)
  if (s.ok()) {
    docs_[d].acked = true;
  } else {
    ++failed_calls_;
    last_error_ = absl::StrCat("node ", node, ": ", s.ToString());
  }
  return s.ok();
}

void Workload::Loop() {
  std::mt19937 rng(seed_);
  for (;;) {
    size_t d;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return quit_ || running_; });
      if (quit_) return;
      d = docs_.size();
      Doc doc;
      doc.word = UniqueWord(static_cast<int>(d));
      if (d % 2 == 1) doc.user = absl::StrCat("user", (d / 2) % users_);
      doc.source = absl::StrCat("netfault-", d);
      docs_.push_back(std::move(doc));
      in_flight_ = true;
    }
    const size_t node =
        std::uniform_int_distribution<size_t>(0, clients_.size() - 1)(rng);
    {
      std::lock_guard<std::mutex> lock(mu_);
      docs_[d].node = node;
    }
    Send(d, node);
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight_ = false;
    }
    cv_.notify_all();
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms_));
  }
}

int Workload::Settle(double timeout_s) {
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(static_cast<int>(timeout_s * 1e3));
  size_t node = 0;
  for (;;) {
    std::vector<std::pair<size_t, size_t>> left;  // doc, node
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t d = 0; d < docs_.size(); ++d) {
        if (docs_[d].acked) continue;
        left.emplace_back(d, docs_[d].user.empty() ? docs_[d].node
                                                   : node++ % clients_.size());
      }
    }
    if (left.empty() || std::chrono::steady_clock::now() > end) {
      return static_cast<int>(left.size());
    }
    for (const auto& [d, n] : left) Send(d, n);
    // (A node that refused at once is not asked again at once.)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Workload::Counts Workload::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  Counts c;
  c.sent = static_cast<int>(docs_.size());
  for (const Doc& d : docs_) c.acked += d.acked ? 1 : 0;
  c.failed_calls = failed_calls_;
  c.last_error = last_error_;
  return c;
}

std::map<std::string, long long> Workload::Freq() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, long long> f;
  for (const Doc& d : docs_) {
    ++f[d.word];
    ++f[kCommonWord];
  }
  return f;
}

std::map<std::string, int> Workload::UserEvents() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, int> u;
  for (const Doc& d : docs_) {
    if (!d.user.empty()) ++u[d.user];
  }
  return u;
}

}  // namespace latentd::testing
