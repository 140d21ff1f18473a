#include "sync/owner_channel.h"

#include <utility>

namespace latentd::sync {
namespace {

class LocalChannel final : public OwnerChannel {
 public:
  LocalChannel(OwnerShard* shard, std::string name, OwnerShard::Origin origin)
      : shard_(shard), name_(std::move(name)), origin_(origin) {}
  void Send(const DeltaBatch& batch, DoneFn done) override {
    DeltaReply reply;
    absl::Status s = shard_->Apply(batch, &reply, origin_);
    if (!s.ok()) {
      done(s);
    } else {
      done(std::move(reply));
    }
  }
  bool remote() const override { return false; }
  std::string name() const override { return name_; }

 private:
  OwnerShard* shard_;
  const std::string name_;
  const OwnerShard::Origin origin_;
};

class RemoteChannel final : public OwnerChannel {
 public:
  RemoteChannel(Client* client, absl::Duration timeout)
      : client_(client), timeout_(timeout) {}
  void Send(const DeltaBatch& batch, DoneFn done) override {
    client_->Call(MESSAGE_TYPE_DELTA_BATCH, batch.SerializeAsString(), timeout_,
                  [done](absl::StatusOr<Frame> frame) {
                    if (!frame.ok()) {
                      done(frame.status());
                      return;
                    }
                    DeltaReply reply;
                    if (!reply.ParseFromString(frame->payload)) {
                      done(absl::DataLossError("unparsable DeltaReply"));
                      return;
                    }
                    done(std::move(reply));
                  });
  }
  bool remote() const override { return true; }
  std::string name() const override { return client_->peer(); }

 private:
  Client* client_;
  absl::Duration timeout_;
};

}  // namespace

std::unique_ptr<OwnerChannel> MakeLocalChannel(OwnerShard* shard,
                                               std::string name,
                                               OwnerShard::Origin origin) {
  return std::make_unique<LocalChannel>(shard, std::move(name), origin);
}
std::unique_ptr<OwnerChannel> MakeRemoteChannel(Client* client,
                                                absl::Duration timeout) {
  return std::make_unique<RemoteChannel>(client, timeout);
}

}  // namespace latentd::sync
