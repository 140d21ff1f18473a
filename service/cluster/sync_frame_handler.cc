#include "service/cluster/sync_frame_handler.h"

#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "sync/control/cluster_admin.h"

namespace latentd {

void SyncFrameHandler::Handle(sync::Frame request, sync::Responder responder) {
  switch (request.type) {
    case sync::MESSAGE_TYPE_DELTA_BATCH:
      HandleDeltaBatch(request, responder);
      return;
    case sync::MESSAGE_TYPE_PROGRESS:
      HandleProgress(request, responder);
      return;
    case sync::MESSAGE_TYPE_KEY_HANDOFF:
      HandleKeyHandoff(request, responder);
      return;
    case sync::MESSAGE_TYPE_REPLICA_UPDATE:
      HandleReplicaUpdate(request, responder);
      return;
    default:
      responder.Reply(absl::UnimplementedError(
          absl::StrCat("unknown message type ", request.type)));
  }
}

void SyncFrameHandler::HandleDeltaBatch(const sync::Frame& request,
                                        sync::Responder& responder) {
  sync::DeltaBatch batch;
  if (!batch.ParseFromString(request.payload)) {
    responder.Reply(absl::InvalidArgumentError("unparsable DeltaBatch"));
    return;
  }
  if (absl::Status s = CheckSender(request, batch.node_id()); !s.ok()) {
    responder.Reply(s);
    return;
  }
  sync::DeltaReply reply;
  absl::Status s = parts_.owner->Apply(batch, &reply);
  if (!s.ok()) {
    // Refusals by ring epoch are an expected part of a ring change.
    const bool epoch = absl::IsFailedPrecondition(s) ||
                       (absl::IsUnavailable(s) &&
                        absl::StrContains(s.message(), "ring epoch"));
    // So is one addressed to this owner's previous process: its sender
    // re-seeds it (sync/synchronizer.h), once per sender.
    const bool restarted =
        absl::IsAborted(s) && absl::StrContains(s.message(), "owner restarted");
    const std::string line = absl::StrCat("rejected delta batch from ",
                                          batch.node_id(), ": ", s.ToString());
    if (restarted) {
      parts_.info(line);
    } else if (!epoch) {
      LogRefusal(absl::IsPermissionDenied(s) ? not_member_log_ : invalid_log_,
                 line);
    }
    responder.Reply(s);
    return;
  }
  responder.Reply(reply.SerializeAsString());
}

void SyncFrameHandler::HandleProgress(const sync::Frame& request,
                                      sync::Responder& responder) {
  sync::Progress p;
  if (!p.ParseFromString(request.payload)) {
    responder.Reply(absl::InvalidArgumentError("unparsable Progress"));
    return;
  }
  if (absl::Status s = CheckSender(request, p.node_id()); !s.ok()) {
    responder.Reply(s);
    return;
  }
  // A member of this node's ring (or, before the ring is known, anyone)
  // counts; an id no ring here lists is kept aside only if the cluster's
  // registry names it: a joiner whose ring this node has not reached yet
  // (docs/design.md, "Consistency"). Any other id is refused, and the
  // registry read again in case it names a node just registered.
  if (!parts_.owner->Admits(p.node_id()) && !InRegistry(p.node_id())) {
    registry_stale_.store(true);
    progress_refused_.fetch_add(1);
    const absl::Status refused = absl::PermissionDeniedError(absl::StrCat(
        "progress from '", p.node_id(),
        "' refused: not a member of ring epoch ", parts_.owner->epoch(),
        " nor a node that cluster ", parts_.cluster,
        "'s registry lists (members, pending); nothing of it was recorded"));
    LogRefusal(progress_log_, std::string(refused.message()));
    responder.Reply(refused);
    return;
  }
  if (!parts_.clocks->Update(p.node_id(), p.clock(), p.finished()) ||
      (p.ready() && !parts_.clocks->MarkReady(p.node_id()))) {
    // Only when many registered ids that no ring names have sent progress.
    responder.Reply(absl::ResourceExhaustedError(absl::StrCat(
        "progress from '", p.node_id(),
        "' dropped: not a member, and too many non-members' progress is "
        "kept already")));
    return;
  }
  responder.Reply(parts_.progress().SerializeAsString());
}

void SyncFrameHandler::HandleKeyHandoff(const sync::Frame& request,
                                        sync::Responder& responder) {
  sync::KeyHandoff h;
  if (!h.ParseFromString(request.payload)) {
    responder.Reply(absl::InvalidArgumentError("unparsable KeyHandoff"));
    return;
  }
  if (absl::Status s = CheckSender(request, h.from_node()); !s.ok()) {
    responder.Reply(s);
    return;
  }
  if (!parts_.owner->Admits(h.from_node())) {
    // Perhaps a member of a ring this node has not reached: it sends again
    // until taken.
    handoffs_refused_.fetch_add(1);
    const absl::Status refused = absl::UnavailableError(
        absl::StrCat("key hand-off from '", h.from_node(),
                     "', not a member of this node's ring epoch ",
                     parts_.owner->epoch(), "; nothing was imported"));
    LogRefusal(handoff_log_, std::string(refused.message()));
    responder.Reply(refused);
    return;
  }
  std::function<absl::Status(const sync::KeyHandoff&)> importer;
  {
    absl::MutexLock l(&importer_mu_);
    importer = importer_;
  }
  if (absl::Status s = importer ? importer(h) : parts_.owner->ImportKeys(h);
      !s.ok()) {
    parts_.log(absl::StrCat("refused key hand-off from ", h.from_node(),
                            " (epoch ", h.epoch(), "): ", s.ToString()));
    responder.Reply(s);
    return;
  }
  handoff_keys_in_.fetch_add(h.keys_size());
  handoff_bytes_in_.fetch_add(request.payload.size());
  sync::KeyHandoffReply reply;
  reply.set_owner_incarnation(parts_.owner->incarnation());
  responder.Reply(reply.SerializeAsString());
}

void SyncFrameHandler::HandleReplicaUpdate(const sync::Frame& request,
                                           sync::Responder& responder) {
  sync::ReplicaUpdate u;
  if (!u.ParseFromString(request.payload)) {
    responder.Reply(absl::InvalidArgumentError("unparsable ReplicaUpdate"));
    return;
  }
  if (absl::Status s = CheckSender(request, u.owner()); !s.ok()) {
    responder.Reply(s);
    return;
  }
  if (!parts_.owner->Admits(u.owner())) {
    // As a hand-off: perhaps a member of a ring not reached here yet, which
    // sends again until taken; otherwise no copy is kept.
    replicas_refused_.fetch_add(1);
    const absl::Status refused = absl::UnavailableError(
        absl::StrCat("replica update from '", u.owner(),
                     "', not a member of this node's ring epoch ",
                     parts_.owner->epoch(), "; nothing was kept"));
    LogRefusal(replica_log_, std::string(refused.message()));
    responder.Reply(refused);
    return;
  }
  bool duplicate = false;
  if (absl::Status s = parts_.replicas->Apply(u, &duplicate); !s.ok()) {
    if (!sync::IsNoBase(s)) {  // (the owner refills: expected)
      parts_.log(absl::StrCat("refused replica update from ", u.owner(), ": ",
                              s.ToString()));
    }
    responder.Reply(s);
    return;
  }
  responder.Reply(std::string());
}

// A frame on an authenticated connection speaks only for the node that
// proved the cluster key on it.
absl::Status SyncFrameHandler::CheckSender(const sync::Frame& request,
                                           const std::string& claimed) {
  if (request.peer_id.empty() || request.peer_id == claimed) {
    return absl::OkStatus();
  }
  const absl::Status refused = absl::PermissionDeniedError(absl::StrCat(
      "a frame claiming to come from node '", claimed,
      "' arrived on the connection of node '", request.peer_id, "'; refused"));
  sender_mismatches_.fetch_add(1);
  LogRefusal(mismatch_log_, std::string(refused.message()));
  return refused;
}

void SyncFrameHandler::LogRefusal(log::Throttle& throttle,
                                  const std::string& line) {
  if (const int64_t held = throttle.Pass(); held >= 0) {
    parts_.log(held == 0 ? line
                         : absl::StrCat(line, " (and ", held,
                                        " refusals not logged since the "
                                        "last one)"));
  }
}

absl::Status SyncFrameHandler::RefreshRegistryIfStale(
    sync::RedisClient* redis) {
  if (!registry_stale_.exchange(false)) return absl::OkStatus();
  const sync::ClusterKeys keys(parts_.cluster);
  absl::flat_hash_set<std::string> ids;
  for (const std::string* hash : {&keys.members, &keys.pending}) {
    absl::StatusOr<sync::RedisReply> reply = redis->Command({"HKEYS", *hash});
    if (!reply.ok()) {
      registry_stale_.store(true);
      return reply.status();
    }
    for (const sync::RedisReply& e : reply->elements) {
      if (e.type == sync::RedisReply::Type::kString) ids.insert(e.str);
    }
  }
  absl::MutexLock l(&registry_mu_);
  registry_ids_ = std::move(ids);
  return absl::OkStatus();
}

bool SyncFrameHandler::InRegistry(const std::string& id) const {
  absl::MutexLock l(&registry_mu_);
  return registry_ids_.contains(id);
}

}  // namespace latentd
