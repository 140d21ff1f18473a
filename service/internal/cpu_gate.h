// CpuGate: admits at most `slots` callers at once into CPU-bound work
// (InferDocument's fold-in), in arrival order. Without it, every HTTP or RPC
// thread folds in at the same time: on a small machine the documents then
// time-share the cores and thrash their caches, and every request of a
// burst finishes late. With it, the work runs `slots` at a time (two per
// core by default, LatentdService) and the others wait their turn, first
// come first served.
//
// Thread-safety: thread-safe.
#ifndef LATENTD_SERVICE_INTERNAL_CPU_GATE_H_
#define LATENTD_SERVICE_INTERNAL_CPU_GATE_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace latentd::service::internal {

class CpuGate {
 public:
  // slots <= 0: no limit.
  explicit CpuGate(int slots) : slots_(slots) {}

  // Held while inside; leaves on destruction.
  class Pass {
   public:
    explicit Pass(CpuGate* gate) : gate_(gate) {}
    Pass(Pass&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;
    Pass& operator=(Pass&&) = delete;
    ~Pass() {
      if (gate_ != nullptr) gate_->Leave();
    }

   private:
    CpuGate* gate_;
  };

  // Blocks until this caller's turn: fewer than `slots` inside and every
  // earlier caller admitted.
  Pass Enter() {
    if (slots_ <= 0) return Pass(nullptr);
    absl::MutexLock lock(&mu_);
    const uint64_t ticket = next_ticket_++;
    auto turn = [this, ticket]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return ticket < left_ + static_cast<uint64_t>(slots_);
    };
    mu_.Await(absl::Condition(&turn));
    return Pass(this);
  }

  // Callers inside or waiting.
  uint64_t load() const {
    absl::MutexLock lock(&mu_);
    return next_ticket_ - left_;
  }

 private:
  void Leave() {
    absl::MutexLock lock(&mu_);
    ++left_;
  }

  const int slots_;
  mutable absl::Mutex mu_;
  uint64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 0;  // tickets handed out
  uint64_t left_ ABSL_GUARDED_BY(mu_) = 0;         // passes released
};

}  // namespace latentd::service::internal

#endif  // LATENTD_SERVICE_INTERNAL_CPU_GATE_H_
