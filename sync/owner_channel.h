// OwnerChannel: how a Synchronizer (sync/synchronizer.h) sends delta
// batches to one owner: this node's own shard, called directly, or a peer
// over the transport.
//
// Thread-safety: Send may be called from any thread, one batch at a time
// per channel; `done` runs on any thread.
#ifndef LATENTD_SYNC_OWNER_CHANNEL_H_
#define LATENTD_SYNC_OWNER_CHANNEL_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sync/owner_shard.h"
#include "sync/sync.pb.h"
#include "sync/transport/transport.h"

namespace latentd::sync {

// Sends delta batches to one owner.
class OwnerChannel {
 public:
  using DoneFn = std::function<void(absl::StatusOr<DeltaReply> reply)>;
  virtual ~OwnerChannel() = default;
  // Sends `batch`; calls `done` exactly once, on any thread.
  virtual void Send(const DeltaBatch& batch, DoneFn done) = 0;
  // Whether batches cross the network (counted as sync traffic).
  virtual bool remote() const = 0;
  virtual std::string name() const = 0;
};

// A shard in this process, called directly: this node's own, whose
// admission trusts the batches (OwnerShard::Origin), or, with
// Origin::kPeer, another node's in a one-process cluster (tools,
// benchmarks), checked as a peer's. `shard` must outlive the channel.
// `name` identifies the owner across Synchronizer::Reroute.
std::unique_ptr<OwnerChannel> MakeLocalChannel(
    OwnerShard* shard, std::string name = "self",
    OwnerShard::Origin origin = OwnerShard::Origin::kThisProcess);
// A peer over the transport. `client` must outlive the channel.
std::unique_ptr<OwnerChannel> MakeRemoteChannel(Client* client,
                                                absl::Duration timeout);

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_OWNER_CHANNEL_H_
