// The client side of daemon_netfault_test.cc: documents ingested into a
// cluster while links are cut, with a ledger of what was acknowledged, and
// the model every node must end with.
//
// Each document is one word no other document has plus "market", sent
// alone in an Ingest call to a node drawn from the seed; every other one is
// an event of one of `users` users (forwarded to the user's owner). Each
// carries a source (its idempotency key), so a call that failed is sent
// again with the same source until it is acknowledged: once Settle() has
// returned with nothing left, every document was acknowledged and must
// count exactly once in the model, and each user's events must all be in
// its profile.
//
// Thread safety: Start() runs the sender on a thread of its own; the other
// methods are for one controlling thread and synchronize with it.
#ifndef LATENTD_TESTS_SERVICE_NETFAULT_WORKLOAD_H_
#define LATENTD_TESTS_SERVICE_NETFAULT_WORKLOAD_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "service/api_client.h"

namespace latentd::testing {

class Workload {
 public:
  // `addresses`: each node's API (TCP) address. Calls time out after
  // `call_timeout_ms` (a cut link makes a call hang until then).
  Workload(const std::vector<std::string>& addresses, uint32_t seed, int users,
           int call_timeout_ms, int pause_ms);
  ~Workload();  // stops the sender

  // Starts or resumes sending (one call at a time, `pause_ms` apart).
  void Start();
  // Stops sending; returns once no call is in flight.
  void Pause();

  // REQUIRES: paused. Sends every document not yet acknowledged again
  // until each is or `timeout_s` passed; returns how many are still not
  // acknowledged. A user's event goes to any node (round robin: its
  // owner drops a source it has); another document to the node it was
  // first sent to, as the API asks (a source is known only where the
  // document was taken: sent to another node it would count twice).
  int Settle(double timeout_s);

  struct Counts {
    int sent = 0;          // documents
    int acked = 0;         // documents acknowledged
    int failed_calls = 0;  // calls that failed (retries included)
    std::string last_error;
  };
  Counts counts() const;

  // Each word's tokens in every document sent (acknowledged or not).
  std::map<std::string, long long> Freq() const;
  // Each user's events among the documents sent.
  std::map<std::string, int> UserEvents() const;

 private:
  struct Doc {
    std::string word, user, source;
    size_t node = 0;  // the node first sent to
    bool acked = false;
  };
  void Loop();
  // One Ingest call of doc `d` to node `node`; marks it acknowledged.
  bool Send(size_t d, size_t node);

  std::vector<std::unique_ptr<service::ApiClient>> clients_;
  const uint32_t seed_;
  const int users_;
  const int pause_ms_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool running_ = false;    // guarded by mu_
  bool in_flight_ = false;  // guarded by mu_
  bool quit_ = false;       // guarded by mu_
  std::vector<Doc> docs_;   // guarded by mu_
  int failed_calls_ = 0;    // guarded by mu_
  std::string last_error_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace latentd::testing

#endif  // LATENTD_TESTS_SERVICE_NETFAULT_WORKLOAD_H_
