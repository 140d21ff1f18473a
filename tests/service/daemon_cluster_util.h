// Shared by the multi-daemon cluster tests (daemon_cluster_test,
// daemon_failover_test): latentctl runs, /metrics samples, exports.
#ifndef LATENTD_TESTS_SERVICE_DAEMON_CLUSTER_UTIL_H_
#define LATENTD_TESTS_SERVICE_DAEMON_CLUSTER_UTIL_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/service/daemon_harness.h"

namespace latentd::testing {

// Runs latentctl (beside $LATENTD_BIN) with `args`; its exit status and
// output (stdout and stderr).
std::pair<int, std::string> Latentctl(const std::vector<std::string>& args);

// The value of the unlabelled sample `name` in `daemon`'s /metrics; -1 if
// it is missing or the scrape failed (a test failure then).
double Metric(Daemon* daemon, const std::string& name);

// `latentctl export --addr daemon --out out_dir`; the text of its
// word_topic_counts.tsv ("" and a test failure if the export failed).
std::string ExportCounts(Daemon* daemon, const std::string& out_dir);

// Word -> the sum of its row in a word_topic_counts.tsv text ("word\t
// topic:count\t...").
std::map<std::string, long long> RowSums(const std::string& counts);

}  // namespace latentd::testing

#endif  // LATENTD_TESTS_SERVICE_DAEMON_CLUSTER_UTIL_H_
