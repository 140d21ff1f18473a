// Shared by the multi-daemon cluster tests (daemon_cluster_test,
// daemon_failover_test, daemon_replication_test, cluster_vocab_test,
// cluster_handoff_test): a cluster of latentd processes with its private
// Redis (TestCluster), latentctl runs, /metrics samples, what a node
// reports, exports, the word counts of a node's token store, and the test
// corpus (tests/testdata/test_corpus.h) split into parts.
#ifndef LATENTD_TESTS_SERVICE_DAEMON_CLUSTER_UTIL_H_
#define LATENTD_TESTS_SERVICE_DAEMON_CLUSTER_UTIL_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "service/api_client.h"
#include "sync/control/cluster_admin.h"
#include "tests/service/daemon_harness.h"

namespace latentd::testing {

// Runs latentctl (beside $LATENTD_BIN) with `args`; its exit status and
// output (stdout and stderr).
std::pair<int, std::string> Latentctl(const std::vector<std::string>& args);

// The value of the unlabelled sample `name` in `daemon`'s /metrics; -1 if
// it is missing or the scrape failed (a test failure then).
double Metric(Daemon* daemon, const std::string& name);
// The sweeps `daemon` has made (latentd_sweeps_total), and the sweeps it
// has once they are at least `n`, waiting up to `seconds` (fewer then).
uint64_t Sweeps(Daemon* daemon);
uint64_t AwaitSweeps(Daemon* daemon, uint64_t n, int seconds = 60);

// A word no corpus of the tests has and no other call's: "zq" and the
// letters of `i` in base 26.
std::string UniqueWord(int i);

// `latentctl export --addr daemon --out out_dir`; the text of its
// word_topic_counts.tsv ("" and a test failure if the export failed).
std::string ExportCounts(Daemon* daemon, const std::string& out_dir);

// Word -> the sum of its row in a word_topic_counts.tsv text ("word\t
// topic:count\t...").
std::map<std::string, long long> RowSums(const std::string& counts);
// The sum of `word`'s row in such a text; -1 if it has none.
long long RowSum(const std::string& counts, const std::string& word);
// Fails the test unless `sums` (RowSums of an export) has exactly the
// words of `want`, each with its count there, naming the first few that
// differ.
void ExpectRowSums(const std::map<std::string, long long>& sums,
                   const std::map<std::string, long long>& want);

// Σ_k n_k and the n_k as `client`'s node sees them.
std::vector<int64_t> TopicTotals(service::ApiClient* client);
int64_t Sum(const std::vector<int64_t>& v);

// What a TestCluster gives each of its nodes, besides the arguments the
// test passes.
struct TestClusterOptions {
  // --cluster: the cluster's name in Redis.
  std::string name = "test";
  // The cluster key (one file in dir(), mode 600, the same for every
  // node); false: --insecure on instead (allowed on loopback, logged
  // loudly).
  bool key = true;
  // --failure-timeout in seconds. "0" here (latentd's default is 1.5):
  // nobody is ever declared down, so a test that does not test failover
  // cannot see a node starved of CPU on a loaded 2-core machine failed
  // over. A failover test gives a short one and waits on deadlines.
  std::string failure_timeout = "0";
  // Redis keeps its data in an append-only file (RedisServer's
  // `persistent`): a Restart() after Kill() finds what was written.
  bool persistent_redis = false;
  // Non-empty: Redis requires this password (AUTH), and the nodes' and
  // latentctl's --cluster-redis url carries it.
  std::string redis_password = "";
  // Network placement (tests/service/netns_topology.h): where Redis runs
  // and listens; with redis.tcp set, the nodes reach it there (the test
  // itself still uses the Unix socket).
  RedisPlacement redis_placement = {};
  // Non-empty: node i runs under node_exec(i) (Daemon's exec_prefix).
  std::function<std::vector<std::string>(int)> node_exec = nullptr;
};

// The set-up of every multi-daemon test: a fresh temporary directory, a
// private redis-server in it (Unix socket only), and latentd nodes of one
// cluster on 127.0.0.1 (ports picked by the daemons unless the test's
// arguments fix them; FixedPortArgs).
//
// The constructor makes the directory and starts Redis; check ok(). Files
// the nodes read (corpus parts, tokens files) go into dir() before Start.
// Node i's data directory is dir()/node<i>, its log dir()/node<i>.log.
// Every node gets Flags(): --cluster, --cluster-redis, the key or
// --insecure, and --failure-timeout (TestClusterOptions); the test's
// arguments must not repeat them.
//
// Destruction kills (SIGKILL) the nodes still running, then Redis, then
// removes dir() (kept with LATENTD_KEEP_TEST_DIRS). A test that checks
// clean exits calls StopAll() first.
//
// Thread safety: none; use it from the test's main thread only (a daemon
// is killed when the thread that started it exits; see Daemon).
class TestCluster {
 public:
  explicit TestCluster(TestClusterOptions options = {});
  TestCluster(const TestCluster&) = delete;
  TestCluster& operator=(const TestCluster&) = delete;
  ~TestCluster();

  // Whether Redis answers.
  bool ok() const { return redis_.ok(); }
  const std::string& dir() const { return tmp_.path(); }
  const std::string& name() const { return options_.name; }
  RedisServer& redis() { return redis_; }
  const RedisServer& redis() const { return redis_; }
  // The flags that make a daemon a node of this cluster (see above).
  std::vector<std::string> Flags() const;

  // Starts one node per element of `node_args`, node i with node_args[i],
  // Flags() and --cluster-size node_args.size(), all before waiting for
  // any (a node serves only once the ring is fixed, i.e. once every one
  // has joined), then waits up to 60 s each for their ports. True if every
  // node serves; otherwise a test failure naming each that does not, with
  // its log. With `wait` false it returns true at once (each node's
  // WaitForPorts() waits). REQUIRES: no node started yet.
  bool Start(const std::vector<std::vector<std::string>>& node_args,
             bool wait = true);
  // The same with `args` for each of `nodes` nodes.
  bool Start(int nodes, const std::vector<std::string>& args);

  // Starts node size() with `args`, Flags(), --join (--cluster-join on) and
  // --join-timeout 120 (unless `args` set it): it waits as pending until
  // `latentctl cluster add-node` admits it, and serves only then, so it is not
  // waited for (its WaitForPorts() does, once the test admitted it).
  Daemon* StartJoiner(const std::vector<std::string>& args);

  // Starts node i again from its data directory with the arguments it
  // was first started with (its addresses the same only if they were
  // fixed: FixedPortArgs), after the test stopped or killed it, and waits
  // for its ports (check ok()). The Daemon* node(i) gave before is gone.
  // With `wait` false it returns at once (WaitForPorts() waits), so that
  // several can start together.
  Daemon* Restart(int i, bool wait = true);

  // Node i (in start order). REQUIRES: i < size().
  Daemon* node(int i) const { return nodes_[i].daemon.get(); }
  int size() const { return static_cast<int>(nodes_.size()); }
  std::vector<Daemon*> nodes() const;
  // dir()/node<i>, whether or not node i was started.
  std::string data_dir(int i) const;
  // Every node's log, each headed by its data directory (for messages).
  std::string Logs() const;

  // Stops (SIGTERM) every node still running, the last started first,
  // and fails the test (with its log) for each that does not exit 0.
  void StopAll();

 private:
  struct Node {
    std::vector<std::string> args;  // as the Daemon got them
    std::vector<std::string> exec;  // its exec_prefix
    std::unique_ptr<Daemon> daemon;
  };
  Daemon* Add(std::vector<std::string> args, bool wait);

  TestClusterOptions options_;
  TempDir tmp_;
  RedisServer redis_;  // after tmp_: stopped before it is removed
  std::vector<std::string> key_args_;
  std::vector<Node> nodes_;  // last: killed before Redis stops
};

// The flags giving a daemon the test corpus (TestCorpusArgs), `topics`
// topics and `max_sweeps` sweeps: the training of most two- and three-node
// tests.
std::vector<std::string> TrainingArgs(const char* topics = "20",
                                      const char* max_sweeps = "30");

// The corpus flags of a node training part `part` of what WriteCorpusParts
// wrote into `dir` (LDA-C with the test corpus's vocabulary), and 10
// topics, followed by `extra`.
std::vector<std::string> CorpusPartArgs(
    const std::string& dir, int part,
    const std::vector<std::string>& extra = {});

// {flag, "127.0.0.1:PORT"} for each of `flags` (--listen,
// --cluster-listen, --http), each port free now: for a node that must
// come back at the same addresses (its id is its API address). A test
// failure (and the flag left out) if no port can be had.
std::vector<std::string> FixedPortArgs(
    std::initializer_list<const char*> flags);

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

// Writes the documents of the test corpus (LDA-C), its first
// `max_documents` only if given, into `parts` files dir/part<i> (document
// d into part d % parts) and returns each word's frequency in them all,
// and in each part in *per_part (if given); fails the test (and returns
// what it has) if the corpus cannot be read.
std::map<std::string, long long> WriteCorpusParts(
    const std::string& dir, int parts,
    std::vector<std::map<std::string, long long>>* per_part = nullptr,
    size_t max_documents = SIZE_MAX);

// Runs `latentctl cluster drain` on `cluster` (sync/control/drain.h): its
// members stop sampling and settle on one table; a test failure unless it
// settles within `seconds`. True if it did.
bool DrainCluster(const TestCluster& cluster, int seconds = 60);

// Drains `cluster` (DrainCluster: sampling pauses at once, so no test
// waits for --max-sweeps; with `drain` false, waits for the nodes to reach
// it instead) until nodes `nodes` have stopped training with nothing
// pending (that many members each), then checks that the model is exact:
// every one exports the same counts (each holds every word of the cluster,
// docs/design.md "Growing vocabulary in a cluster"), and each word's row
// sums to its frequency `freq` in the corpus parts. Exports go under the
// cluster's directory. Returns the seconds it took to drain (-1 and a test
// failure if a node did not).
double DrainAndCheckExact(const TestCluster& cluster,
                          const std::map<std::string, long long>& freq,
                          std::vector<int> nodes = {0, 1, 2},
                          bool drain = true);

// Cluster `cluster` as the Redis server `redis` holds it; a test failure
// and an empty status if it cannot be read.
sync::ClusterStatus ReadStatus(const RedisServer& redis,
                               const std::string& cluster);

}  // namespace latentd::testing

#endif  // LATENTD_TESTS_SERVICE_DAEMON_CLUSTER_UTIL_H_
