#include "tests/service/daemon_cluster_util.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/service/gateway_test_util.h"

namespace latentd::testing {

std::pair<int, std::string> Latentctl(const std::vector<std::string>& args) {
  const char* env = std::getenv("LATENTD_BIN");
  if (env == nullptr) return {-1, "LATENTD_BIN is not set"};
  std::string bin = env;
  bin = bin.substr(0, bin.rfind('/') + 1) + "latentctl";
  std::string cmd = bin;
  for (const std::string& a : args) absl::StrAppend(&cmd, " '", a, "'");
  absl::StrAppend(&cmd, " 2>&1");
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (p != nullptr && std::fgets(buf, sizeof(buf), p) != nullptr) out += buf;
  const int status = p != nullptr ? ::pclose(p) : -1;
  return {status, out};
}

double Metric(Daemon* daemon, const std::string& name) {
  const std::string& http = daemon->http();
  const HttpReply r =
      HttpGet(std::stoi(http.substr(http.rfind(':') + 1)), "/metrics");
  EXPECT_EQ(r.status, 200) << r.body;
  for (absl::string_view line : absl::StrSplit(r.body, '\n')) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits(' ', 1));
    double v;
    if (kv.first == name && absl::SimpleAtod(kv.second, &v)) return v;
  }
  ADD_FAILURE() << "no " << name << " in: " << r.body;
  return -1;
}

std::string ExportCounts(Daemon* daemon, const std::string& out_dir) {
  auto [rc, text] = Latentctl(
      {"export", "--addr", daemon->tcp(), "--out", out_dir, "--overwrite"});
  EXPECT_EQ(rc, 0) << text;
  if (rc != 0) return "";
  std::ifstream in(out_dir + "/word_topic_counts.tsv");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::map<std::string, long long> RowSums(const std::string& counts) {
  std::map<std::string, long long> sums;
  for (absl::string_view line : absl::StrSplit(counts, '\n')) {
    if (line.empty()) continue;
    std::vector<absl::string_view> cells = absl::StrSplit(line, '\t');
    long long& sum = sums[std::string(cells[0])];
    for (size_t i = 1; i < cells.size(); ++i) {
      std::pair<absl::string_view, absl::string_view> kc =
          absl::StrSplit(cells[i], ':');
      long long c = 0;
      EXPECT_TRUE(absl::SimpleAtoi(kc.second, &c)) << line;
      sum += c;
    }
  }
  return sums;
}

}  // namespace latentd::testing
