// Shared by the multi-daemon cluster tests (daemon_cluster_test,
// daemon_failover_test, cluster_vocab_test): latentctl runs, /metrics
// samples, what a node reports, the arguments of a cluster daemon,
// exports, the word counts of a node's token store, and blei-ap split into
// parts.
#ifndef LATENTD_TESTS_SERVICE_DAEMON_CLUSTER_UTIL_H_
#define LATENTD_TESTS_SERVICE_DAEMON_CLUSTER_UTIL_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "service/api_client.h"
#include "sync/cluster_admin.h"
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
// The sum of `word`'s row in such a text; -1 if it has none.
long long RowSum(const std::string& counts, const std::string& word);

// Σ_k n_k and the n_k as `client`'s node sees them.
std::vector<int64_t> TopicTotals(service::ApiClient* client);
int64_t Sum(const std::vector<int64_t>& v);

// The arguments of a daemon of cluster `name` of `size` nodes training
// blei-ap for 30 sweeps, with Redis at `redis` and the cluster key written
// into `key_dir` (the same directory for every node; "": --insecure on).
std::vector<std::string> ClusterArgs(const std::string& redis, const char* name,
                                     const char* size,
                                     const std::string& key_dir);

// The id of a pending member of `cluster` (Redis at `redis`), as the
// operator finds it in `latentctl cluster status --json`; waits up to 60 s
// for one, "" if none came.
std::string PendingNode(const std::string& redis, const std::string& cluster);

// The files `latentctl export --addr ADDR --out DIR` writes, by name
// (vocab.txt, word_topic_counts.tsv, alpha.txt, topics.txt); {"error":
// its output} if the export failed.
std::map<std::string, std::string> ExportFiles(const std::string& addr,
                                               const std::string& dir);

// Fails the test unless both exports (ExportFiles) succeeded and every
// file of `a` is non-empty and the same in `b`, naming each that is not.
void ExpectIdenticalExports(const std::map<std::string, std::string>& a,
                            const std::map<std::string, std::string>& b);

// The tokens of each word in the token store of the daemon data directory
// `dir` (its vocab.txt and tokens.lts; the daemon stopped), by word; fails
// the test if they cannot be read.
std::map<std::string, long long> StoreWordCounts(const std::string& dir);

// The path of blei-ap's file `name` under $LATENTD_DATA_DIR.
std::string ApFile(const char* name);

// Writes the documents of blei-ap (LDA-C) into `parts` files dir/part<i>
// (document d into part d % parts) and returns each word's frequency in
// them all, and in each part in *per_part (if given); fails the test (and
// returns what it has) if blei-ap cannot be read.
std::map<std::string, long long> WriteApParts(
    const std::string& dir, int parts,
    std::vector<std::map<std::string, long long>>* per_part = nullptr);

// Cluster `cluster` as the Redis server `redis` holds it; a test failure
// and an empty status if it cannot be read.
sync::ClusterStatus ReadStatus(const RedisServer& redis,
                               const std::string& cluster);

}  // namespace latentd::testing

#endif  // LATENTD_TESTS_SERVICE_DAEMON_CLUSTER_UTIL_H_
