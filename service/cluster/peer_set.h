// PeerSet: a ClusterLink's connections to the other members and its
// heartbeats. A member's sync client is created when the member is first
// met and kept until Close (never removed: a synchronizer channel may still
// use a departed member's client). Every `heartbeat`, or at once after
// Kick, each peer is sent this node's progress, asynchronously and one
// beat in flight per peer, so a dead or slow peer never delays the
// others'. A peer that has not answered for dead_after is marked dead in
// the clock table (it no longer holds back SSP, even if it returns) and
// logged once; its first answer after that is logged too.
//
// A member the ring no longer lists is retired: no more heartbeats, and it is
// neither reported unavailable nor logged (its client stays, as above).
//
// Thread-safety: every method may be called from any thread; the
// heartbeat thread runs from StartHeartbeats until StopHeartbeats.
#ifndef LATENTD_SERVICE_CLUSTER_PEER_SET_H_
#define LATENTD_SERVICE_CLUSTER_PEER_SET_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "hashring/ring.h"
#include "sync/consistency.h"
#include "sync/sync.pb.h"
#include "sync/transport/transport.h"

namespace latentd {

class PeerSet {
 public:
  struct Options {
    sync::EventLoop* loop = nullptr;  // the clients' (not owned)
    // For every client (auth, TLS, log); host and port are the member's.
    sync::ClientOptions client;
    absl::Duration heartbeat = absl::Milliseconds(200);
    absl::Duration call_timeout = absl::Seconds(2);
    absl::Duration dead_after = absl::Seconds(3);
    sync::LogFn log = sync::LogToStderr;       // a peer gone
    sync::LogFn info = sync::LogInfoToStderr;  // a peer back
  };
  // `clocks` (not owned) outlives the set; `progress` gives the beat's
  // payload, called on the heartbeat thread.
  PeerSet(Options options, sync::ClockTable* clocks,
          std::function<sync::Progress()> progress);
  ~PeerSet();  // StopHeartbeats(); Close()

  // The client of member `m`, created if new (a retired one is met again);
  // an error if its address does not parse.
  absl::StatusOr<sync::Client*> ClientFor(const hashring::Member& m);
  // The client of member `id` if it was met, else null.
  sync::Client* Find(std::string_view id) const;
  // Every peer met so far, with its client.
  std::vector<std::pair<std::string, sync::Client*>> All() const;
  // The peers the clock table holds dead, retired ones left out.
  std::vector<std::string> Unavailable() const;
  // Member `id` left the ring (see above); a no-op for a peer never met.
  void Retire(std::string_view id);

  void StartHeartbeats();
  // A beat now (after this node's progress changed).
  void Kick();
  void StopHeartbeats();
  // Closes every client. REQUIRES: no caller uses them any more.
  void Close();

 private:
  struct Peer;
  // Every peer, or only those not retired.
  std::vector<Peer*> List(bool members_only = false) const;
  void HeartbeatLoop();
  void OnHeartbeatReply(Peer* peer, const absl::Status& status);

  const Options options_;
  sync::ClockTable* const clocks_;
  const std::function<sync::Progress()> progress_;

  mutable absl::Mutex peers_mu_;
  std::vector<std::unique_ptr<Peer>> peers_ ABSL_GUARDED_BY(peers_mu_);

  absl::Mutex hb_mu_;
  bool hb_stop_ ABSL_GUARDED_BY(hb_mu_) = false;
  uint64_t hb_kick_ ABSL_GUARDED_BY(hb_mu_) = 0;
  std::thread heartbeat_;
};

}  // namespace latentd

#endif  // LATENTD_SERVICE_CLUSTER_PEER_SET_H_
