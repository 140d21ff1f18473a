// The set-up of the network-fault tests (daemon_netfault_test.cc,
// netfault_retry_test.cc): latentd nodes and Redis in a NetTopology of
// their own, the nodes training small parts of the test corpus.
//
// Thread safety: none; use it from the test's main thread.
#ifndef LATENTD_TESTS_SERVICE_NETFAULT_CLUSTER_H_
#define LATENTD_TESTS_SERVICE_NETFAULT_CLUSTER_H_

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "tests/service/daemon_cluster_util.h"
#include "tests/service/netns_topology.h"

namespace latentd::testing {

// A cluster of `nodes` nodes, each node in the topology's namespace of its
// own with dir/part<i> of WriteCorpusParts (the test corpus's first
// `nodes * docs_per_node` documents), --replicas 2, --failure-timeout
// `failure_timeout`, one training thread, a sweep at most every
// LATENTD_NETFAULT_SWEEP_MS ms (20; 0: back to back, as ops/chaos.sh's
// long campaigns run) and fixed ports (7070-7072, free in every
// namespace), started. Builds
// the topology first (NetTopology::Create: the calling thread moves into a
// network namespace of its own). ok() says whether all of it worked (test
// failures otherwise).
struct NetCluster {
  NetCluster(int nodes, const std::string& failure_timeout, int docs_per_node);
  bool ok() const;

  std::unique_ptr<NetTopology> net;
  std::unique_ptr<TestCluster> cluster;   // after net: stopped first
  std::map<std::string, long long> base;  // the parts' word tokens
  double up_s = 0;                        // Start()'s seconds
};

// Seconds since `t` on the steady clock, and a sleep of `ms`
// milliseconds: the netfault tests' clock.
inline double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}
inline void SleepMs(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace latentd::testing

#endif  // LATENTD_TESTS_SERVICE_NETFAULT_CLUSTER_H_
