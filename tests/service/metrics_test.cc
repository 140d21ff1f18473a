// Issue 17: /metrics is valid Prometheus text — each family's HELP and
// TYPE once, before all of its samples, which follow it contiguously —
// even when a name is registered with several label sets (the HTTP and
// TCP front ends both register latentd_request_seconds and
// latentd_request_errors_total).
#include "service/metrics.h"

#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/service/daemon_harness.h"
#include "tests/service/gateway_test_util.h"

namespace latentd::testing {
namespace {

// What is wrong with `text` as Prometheus text exposition (0.0.4), one line
// per problem: a family with more than one HELP or TYPE, a sample with no
// TYPE before it, samples of a family split by other lines, a malformed
// line. Histogram samples (_bucket, _sum, _count) belong to their
// histogram's family.
std::vector<std::string> ExpositionProblems(const std::string& text) {
  std::vector<std::string> problems;
  std::map<std::string, std::string> type_of;  // family -> TYPE
  std::map<std::string, int> helps;
  std::set<std::string> closed;  // families whose block has ended
  std::string current;           // family of the block being read
  auto enter = [&](const std::string& family, int n) {
    if (family == current) return;
    if (closed.count(family)) {
      problems.push_back(absl::StrCat("line ", n, ": ", family,
                                      " continues after other families"));
    }
    if (!current.empty()) closed.insert(current);
    current = family;
  };
  int n = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++n;
    if (line.empty()) continue;
    if (absl::StartsWith(line, "#")) {
      std::vector<std::string> f =
          absl::StrSplit(line, absl::MaxSplits(' ', 3));
      if (f.size() < 3 || (f[1] != "HELP" && f[1] != "TYPE")) continue;
      enter(f[2], n);
      if (f[1] == "HELP" && ++helps[f[2]] > 1) {
        problems.push_back(absl::StrCat("line ", n, ": second HELP of ", f[2]));
      }
      if (f[1] == "TYPE") {
        if (type_of.count(f[2])) {
          problems.push_back(
              absl::StrCat("line ", n, ": second TYPE of ", f[2]));
        }
        type_of[f[2]] = f.size() > 3 ? f[3] : "";
      }
      continue;
    }
    const size_t end = line.find_first_of("{ ");
    if (end == absl::string_view::npos || end == 0) {
      problems.push_back(absl::StrCat("line ", n, ": malformed: ", line));
      continue;
    }
    std::string family(line.substr(0, end));
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string base =
          absl::EndsWith(family, suffix)
              ? family.substr(0, family.size() - std::strlen(suffix))
              : "";
      if (!base.empty() && type_of.count(base) &&
          (type_of[base] == "histogram" || type_of[base] == "summary")) {
        family = base;
      }
    }
    if (!type_of.count(family)) {
      problems.push_back(
          absl::StrCat("line ", n, ": sample of ", family, " before its TYPE"));
    }
    enter(family, n);
  }
  return problems;
}

std::string Join(const std::vector<std::string>& v) {
  return absl::StrJoin(v, "\n");
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

TEST(ExpositionProblems, CatchesRepeatedHeadersAndSplitFamilies) {
  EXPECT_TRUE(
      ExpositionProblems("# HELP a x\n# TYPE a counter\na 1\n").empty());
  EXPECT_FALSE(
      ExpositionProblems("# TYPE a counter\na 1\n# TYPE a counter\na 2\n")
          .empty());
  EXPECT_FALSE(ExpositionProblems(
                   "# TYPE a counter\na 1\n# TYPE b gauge\nb 1\na{x=\"1\"} 2\n")
                   .empty());
  EXPECT_FALSE(ExpositionProblems("a 1\n# TYPE a counter\n").empty());
  EXPECT_TRUE(ExpositionProblems("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\n"
                                 "h_sum 0.5\nh_count 1\n")
                  .empty());
}

// The regression: the same name with two label sets, another metric
// registered in between.
TEST(Metrics, OneHeaderPerFamilyWithItsSamplesTogether) {
  service::MetricsRegistry m;
  m.AddHistogram("req_seconds", "Latency", "transport=\"http\"")->Observe(0.01);
  m.AddCounter("req_errors_total", "Errors", "transport=\"http\"")->Add(1);
  m.AddGauge("queue_depth", "Queue")->Set(2);
  m.AddHistogram("req_seconds", "Latency", "transport=\"tcp\"")->Observe(0.02);
  m.AddCounter("req_errors_total", "Errors", "transport=\"tcp\"")->Add(3);
  const std::string text = m.RenderText();
  EXPECT_TRUE(ExpositionProblems(text).empty())
      << Join(ExpositionProblems(text)) << "\n"
      << text;
  for (const char* name : {"req_seconds", "req_errors_total", "queue_depth"}) {
    EXPECT_EQ(Count(text, absl::StrCat("# HELP ", name, " ")), 1u) << name;
    EXPECT_EQ(Count(text, absl::StrCat("# TYPE ", name, " ")), 1u) << name;
  }
  // Families in the order of their first registration, each's samples in
  // registration order right after its header.
  const size_t seconds = text.find("# TYPE req_seconds histogram");
  const size_t errors = text.find("# TYPE req_errors_total counter");
  const size_t queue = text.find("# TYPE queue_depth gauge");
  EXPECT_LT(seconds, errors);
  EXPECT_LT(errors, queue);
  const size_t http = text.find("req_seconds_count{transport=\"http\"} 1");
  const size_t tcp = text.find("req_seconds_count{transport=\"tcp\"} 1");
  EXPECT_LT(seconds, http);
  EXPECT_LT(http, tcp);
  EXPECT_LT(tcp, errors);
  EXPECT_NE(text.find("req_errors_total{transport=\"http\"} 1\n"
                      "req_errors_total{transport=\"tcp\"} 3\n"
                      "# HELP queue_depth"),
            std::string::npos)
      << text;
}

// Collectors run before every rendering: a counter mirroring a total kept
// elsewhere shows that total as it is at the scrape.
TEST(Metrics, CollectorsSetMirroredValuesAtEachScrape) {
  service::MetricsRegistry m;
  service::Counter* total = m.AddCounter("mirrored_total", "Mirrored");
  service::Gauge* level = m.AddGauge("level", "Level");
  uint64_t source = 5;
  int runs = 0;
  m.AddCollector([&] {
    ++runs;
    total->SetTotal(source);
    level->Set(static_cast<double>(source) / 2);
  });
  EXPECT_EQ(runs, 0);
  std::string text = m.RenderText();
  EXPECT_NE(text.find("mirrored_total 5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("level 2.5\n"), std::string::npos) << text;
  source = 9;
  text = m.RenderText();
  EXPECT_EQ(runs, 2);
  EXPECT_NE(text.find("mirrored_total 9\n"), std::string::npos) << text;
  EXPECT_TRUE(ExpositionProblems(text).empty())
      << Join(ExpositionProblems(text));
}

// A running latentd's whole /metrics, both front ends serving.
TEST(Metrics, DaemonMetricsAreValidExposition) {
  TempDir tmp;
  Daemon d(tmp.path() + "/node", SmallCorpusArgs(tmp.path()));
  ASSERT_TRUE(d.ok()) << d.Log();
  for (service::Protocol p :
       {service::Protocol::kTcp, service::Protocol::kHttpJson}) {
    auto c = d.Client(p);
    api::StatusResponse r;
    ASSERT_TRUE(
        c->Call(service::Method::kStatus, api::StatusRequest(), &r).ok());
  }
  const int port = std::stoi(d.http().substr(d.http().rfind(':') + 1));
  const HttpReply metrics = HttpGet(port, "/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_TRUE(ExpositionProblems(metrics.body).empty())
      << Join(ExpositionProblems(metrics.body));
  EXPECT_EQ(Count(metrics.body, "# TYPE latentd_request_seconds histogram"),
            1u);
  EXPECT_EQ(Count(metrics.body, "# TYPE latentd_request_errors_total counter"),
            1u);
  EXPECT_NE(metrics.body.find("latentd_request_seconds_count{call=\"Status\","
                              "transport=\"tcp\"} 1"),
            std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("transport=\"http\""), std::string::npos);
  EXPECT_EQ(d.Stop(), 0) << d.Log();
}

}  // namespace
}  // namespace latentd::testing
