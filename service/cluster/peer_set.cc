#include "service/cluster/peer_set.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"

namespace latentd {

struct PeerSet::Peer {
  std::string id;
  std::unique_ptr<sync::Client> client;
  absl::Mutex mu;
  absl::Time last_ok ABSL_GUARDED_BY(mu) = absl::Now();
  bool reported_down ABSL_GUARDED_BY(mu) = false;
  bool in_flight ABSL_GUARDED_BY(mu) = false;  // one heartbeat at a time
  bool retired ABSL_GUARDED_BY(mu) = false;
};

PeerSet::PeerSet(Options options, sync::ClockTable* clocks,
                 std::function<sync::Progress()> progress)
    : options_(std::move(options)),
      clocks_(clocks),
      progress_(std::move(progress)) {}

PeerSet::~PeerSet() {
  StopHeartbeats();
  Close();
}

absl::StatusOr<sync::Client*> PeerSet::ClientFor(const hashring::Member& m) {
  absl::MutexLock l(&peers_mu_);
  for (const auto& p : peers_) {
    if (p->id != m.id) continue;
    absl::MutexLock pl(&p->mu);
    if (p->retired) {
      p->retired = false;
      p->reported_down = false;
      p->last_ok = absl::Now();
    }
    return p->client.get();
  }
  auto peer = std::make_unique<Peer>();
  peer->id = m.id;
  sync::ClientOptions co = options_.client;
  LATENTD_RETURN_IF_ERROR(sync::SplitHostPort(m.address, &co.host, &co.port));
  peer->client = std::make_unique<sync::Client>(options_.loop, co);
  peers_.push_back(std::move(peer));
  return peers_.back()->client.get();
}

sync::Client* PeerSet::Find(std::string_view id) const {
  absl::MutexLock l(&peers_mu_);
  for (const auto& p : peers_) {
    if (p->id == id) return p->client.get();
  }
  return nullptr;
}

std::vector<std::pair<std::string, sync::Client*>> PeerSet::All() const {
  std::vector<std::pair<std::string, sync::Client*>> out;
  for (Peer* p : List()) out.emplace_back(p->id, p->client.get());
  return out;
}

std::vector<PeerSet::Peer*> PeerSet::List(bool members_only) const {
  absl::MutexLock l(&peers_mu_);
  std::vector<Peer*> out;
  for (const auto& p : peers_) {
    if (members_only) {
      absl::MutexLock pl(&p->mu);
      if (p->retired) continue;
    }
    out.push_back(p.get());
  }
  return out;
}

std::vector<std::string> PeerSet::Unavailable() const {
  std::vector<std::string> out;
  for (const Peer* p : List(/*members_only=*/true)) {
    if (clocks_->IsDead(p->id)) out.push_back(p->id);
  }
  return out;
}

void PeerSet::Retire(std::string_view id) {
  for (Peer* p : List()) {
    if (p->id != id) continue;
    absl::MutexLock l(&p->mu);
    p->retired = true;
  }
}

void PeerSet::StartHeartbeats() {
  heartbeat_ = std::thread([this] { HeartbeatLoop(); });
}

void PeerSet::Kick() {
  absl::MutexLock l(&hb_mu_);
  ++hb_kick_;
}

void PeerSet::StopHeartbeats() {
  {
    absl::MutexLock l(&hb_mu_);
    hb_stop_ = true;
  }
  if (heartbeat_.joinable()) heartbeat_.join();
}

void PeerSet::Close() {
  for (Peer* p : List()) p->client->Close();
}

void PeerSet::HeartbeatLoop() {
  uint64_t seen_kick = 0;
  while (true) {
    {
      absl::MutexLock l(&hb_mu_);
      auto wake = [this, &seen_kick]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(hb_mu_) {
        return hb_stop_ || hb_kick_ != seen_kick;
      };
      hb_mu_.AwaitWithTimeout(absl::Condition(&wake), options_.heartbeat);
      if (hb_stop_) return;
      seen_kick = hb_kick_;
    }
    const std::string payload = progress_().SerializeAsString();
    for (Peer* pp : List(/*members_only=*/true)) {
      {
        absl::MutexLock l(&pp->mu);
        if (pp->in_flight) continue;
        pp->in_flight = true;
      }
      pp->client->Call(sync::MESSAGE_TYPE_PROGRESS, payload,
                       options_.call_timeout,
                       [this, pp](absl::StatusOr<sync::Frame> r) {
                         OnHeartbeatReply(pp, r.status());
                       });
    }
  }
}

void PeerSet::OnHeartbeatReply(Peer* pp, const absl::Status& status) {
  absl::MutexLock l(&pp->mu);
  pp->in_flight = false;
  if (pp->retired) return;  // (a beat sent before it left)
  if (status.ok()) {
    pp->last_ok = absl::Now();
    if (pp->reported_down) {
      options_.info(absl::StrCat("peer ", pp->id, " reachable again"));
      pp->reported_down = false;
    }
  } else if (absl::Now() - pp->last_ok > options_.dead_after &&
             !pp->reported_down) {
    pp->reported_down = true;
    clocks_->MarkDead(pp->id);
    options_.log(absl::StrCat("peer ", pp->id, " unavailable (",
                              status.ToString(), "); going on without it"));
  }
}

}  // namespace latentd
