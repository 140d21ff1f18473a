#include "sync/consistency.h"

#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace latentd::sync {

absl::StatusOr<Consistency> Consistency::Parse(std::string_view text) {
  Consistency c;
  if (text == "async") return c;
  c.bounded = true;
  if (text == "bsp") return c;
  uint32_t s = 0;
  if (text.substr(0, 4) == "ssp:" &&
      absl::SimpleAtoi(absl::string_view(text.data() + 4, text.size() - 4),
                       &s) &&
      s <= 1000000) {
    c.staleness = s;
    return c;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("consistency '", absl::string_view(text.data(), text.size()),
                   "': expected async, bsp or ssp:<s>"));
}

std::string Consistency::ToString() const {
  if (!bounded) return "async";
  return absl::StrCat("ssp:", staleness);
}

ClockTable::ClockTable(std::vector<std::string> nodes) {
  for (auto& n : nodes) entries_[n] = Entry{};
}

ClockTable::Entry* ClockTable::FindOrPend(const std::string& node) {
  if (auto it = entries_.find(node); it != entries_.end()) return &it->second;
  if (auto it = pending_.find(node); it != pending_.end()) return &it->second;
  if (pending_.size() >= kMaxPendingNodes) return nullptr;
  return &pending_[node];
}

bool ClockTable::Update(const std::string& node, uint64_t clock,
                        bool finished) {
  absl::MutexLock l(&mu_);
  Entry* e = FindOrPend(node);
  if (e == nullptr) return false;
  e->clock = std::max(e->clock, clock);
  e->finished = e->finished || finished;
  e->heard = true;
  return true;
}

void ClockTable::Add(const std::string& node) {
  absl::MutexLock l(&mu_);
  if (entries_.contains(node)) return;
  auto pending = pending_.extract(node);
  entries_.emplace(node, pending ? pending.mapped() : Entry{});
}

bool ClockTable::MarkReady(const std::string& node) {
  absl::MutexLock l(&mu_);
  Entry* e = FindOrPend(node);
  if (e == nullptr) return false;
  e->ready = true;
  e->heard = true;
  return true;
}

bool ClockTable::WaitAllReady(absl::Time deadline) const {
  absl::MutexLock l(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const auto& [id, e] : entries_) {
      if (!e.dead && !e.ready) return false;
    }
    return true;
  };
  return mu_.AwaitWithDeadline(absl::Condition(&ready), deadline);
}

bool ClockTable::WaitAllFinished(absl::Time deadline) const {
  absl::MutexLock l(&mu_);
  auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const auto& [id, e] : entries_) {
      if (!e.dead && !e.finished) return false;
    }
    return true;
  };
  return mu_.AwaitWithDeadline(absl::Condition(&done), deadline);
}

void ClockTable::MarkDead(const std::string& node) {
  absl::MutexLock l(&mu_);
  auto it = entries_.find(node);
  if (it != entries_.end()) it->second.dead = true;
}

void ClockTable::Revive(const std::string& node) {
  absl::MutexLock l(&mu_);
  auto pending = pending_.extract(node);
  entries_.try_emplace(node, pending ? pending.mapped() : Entry{})
      .first->second.dead = false;
}

bool ClockTable::IsDead(const std::string& node) const {
  absl::MutexLock l(&mu_);
  auto it = entries_.find(node);
  return it != entries_.end() && it->second.dead;
}

bool ClockTable::Heard(const std::string& node) const {
  absl::MutexLock l(&mu_);
  for (const auto* table : {&entries_, &pending_}) {
    if (auto it = table->find(node); it != table->end()) {
      return it->second.heard;
    }
  }
  return false;
}

uint64_t ClockTable::MinLocked() const {
  uint64_t m = std::numeric_limits<uint64_t>::max();
  for (const auto& [id, e] : entries_) {
    if (!e.dead && !e.finished) m = std::min(m, e.clock);
  }
  return m;
}

uint64_t ClockTable::MinClock() const {
  absl::MutexLock l(&mu_);
  return MinLocked();
}

bool ClockTable::WaitForMin(uint64_t clock, absl::Time deadline) const {
  absl::MutexLock l(&mu_);
  auto reached = [this, clock]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return MinLocked() >= clock;
  };
  return mu_.AwaitWithDeadline(absl::Condition(&reached), deadline);
}

uint64_t ClockTable::Get(const std::string& node) const {
  absl::MutexLock l(&mu_);
  auto it = entries_.find(node);
  return it == entries_.end() ? 0 : it->second.clock;
}

}  // namespace latentd::sync
