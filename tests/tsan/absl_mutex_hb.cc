// ThreadSanitizer only (ops/tsan.sh preloads it): happens-before for
// Debian's absl::Mutex and absl::CondVar.
//
// Debian's Abseil is not built with -fsanitize=thread, so TSan never sees
// an absl::Mutex being locked or unlocked (its own annotations are compiled
// out, its atomics are not instrumented) and would report every access to
// state guarded by one as a data race. This library, loaded with
// LD_PRELOAD into a TSan-instrumented test, interposes the exported lock,
// unlock, wait and await functions: each calls the real one (found with
// dlsym(RTLD_NEXT)) and tells TSan what it did, with __tsan_release(mu)
// before the mutex is given up and __tsan_acquire(mu) once it is held. A
// reader lock is annotated as a writer lock: readers then also order among
// themselves, which can hide a race between two readers (they only read)
// but never invents one.
//
// Not annotated (latentd does not use them): absl::Notification,
// absl::BlockingCounter, absl::Barrier.
//
// Thread-safety: the functions are as thread-safe as absl's; the lookup of
// each real function is a function-local static (thread-safe init).
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/base/options.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

// Weak: the TSan runtime (linked into the instrumented executable) defines
// them; in any other process that inherits LD_PRELOAD (ctest, a shell) they
// are null and the wrappers only forward.
extern "C" void __tsan_acquire(void* addr) __attribute__((weak));
extern "C" void __tsan_release(void* addr) __attribute__((weak));

namespace {

#define LATENTD_STR2(x) #x
#define LATENTD_STR(x) LATENTD_STR2(x)

// The mangled name of absl::<inline namespace>::<rest>, e.g. rest
// "5Mutex4LockEv" for absl::Mutex::Lock().
std::string Mangled(const char* rest) {
  const std::string ns = LATENTD_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  return "_ZN4absl" + std::to_string(ns.size()) + ns + rest;
}

template <typename Fn>
Fn Real(const char* rest) {
  const std::string name = Mangled(rest);
  void* f = dlsym(RTLD_NEXT, name.c_str());
  if (f == nullptr) {
    std::fprintf(stderr, "absl_mutex_hb: %s not found: %s\n", name.c_str(),
                 dlerror());
    std::abort();
  }
  return reinterpret_cast<Fn>(f);
}

void Acquire(void* addr) {
  if (__tsan_acquire != nullptr) __tsan_acquire(addr);
}

void Release(void* addr) {
  if (__tsan_release != nullptr) __tsan_release(addr);
}

// absl evaluates a waiter's Condition with the mutex held but inside its
// own (uninstrumented) functions: in the waiter's thread before Await or
// LockWhen returns, or in another thread as it unlocks. The wrappers pass
// absl a Condition that acquires the mutex for TSan, evaluates the
// caller's, and releases it, so that what a condition reads is seen as
// guarded.
struct HeldCondition {
  const absl::Condition* cond;
  absl::Mutex* mu;
};

bool EvalHeld(void* arg) {
  const auto* held = static_cast<const HeldCondition*>(arg);
  Acquire(held->mu);
  const bool met = held->cond->Eval();
  // absl gives the mutex up later, unseen: what the condition read comes
  // before the next holder's acquire.
  Release(held->mu);
  return met;
}

// The Condition absl gets instead of `cond` (valid while *held lives).
absl::Condition Held(const absl::Condition& cond, absl::Mutex* mu,
                     HeldCondition* held) {
  *held = HeldCondition{&cond, mu};
  return absl::Condition(&EvalHeld, held);
}

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  static auto real = Real<void (*)(Mutex*)>("5Mutex4LockEv");
  real(this);
  Acquire(this);
}

void Mutex::Unlock() {
  static auto real = Real<void (*)(Mutex*)>("5Mutex6UnlockEv");
  Release(this);
  real(this);
}

bool Mutex::TryLock() {
  static auto real = Real<bool (*)(Mutex*)>("5Mutex7TryLockEv");
  const bool locked = real(this);
  if (locked) Acquire(this);
  return locked;
}

void Mutex::ReaderLock() {
  static auto real = Real<void (*)(Mutex*)>("5Mutex10ReaderLockEv");
  real(this);
  Acquire(this);
}

void Mutex::ReaderUnlock() {
  static auto real = Real<void (*)(Mutex*)>("5Mutex12ReaderUnlockEv");
  Release(this);
  real(this);
}

bool Mutex::ReaderTryLock() {
  static auto real = Real<bool (*)(Mutex*)>("5Mutex13ReaderTryLockEv");
  const bool locked = real(this);
  if (locked) Acquire(this);
  return locked;
}

// The *LockWhen* functions return with the mutex held, timed out or not.
void Mutex::LockWhen(const Condition& cond) {
  static auto real = Real<void (*)(Mutex*, const Condition&)>(
      "5Mutex8LockWhenERKNS0_9ConditionE");
  HeldCondition held;
  real(this, Held(cond, this, &held));
  Acquire(this);
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  static auto real = Real<void (*)(Mutex*, const Condition&)>(
      "5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  HeldCondition held;
  real(this, Held(cond, this, &held));
  Acquire(this);
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static auto real = Real<bool (*)(Mutex*, const Condition&, Duration)>(
      "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  HeldCondition held;
  const bool met = real(this, Held(cond, this, &held), timeout);
  Acquire(this);
  return met;
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static auto real = Real<bool (*)(Mutex*, const Condition&, Duration)>(
      "5Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  HeldCondition held;
  const bool met = real(this, Held(cond, this, &held), timeout);
  Acquire(this);
  return met;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  static auto real = Real<bool (*)(Mutex*, const Condition&, Time)>(
      "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  HeldCondition held;
  const bool met = real(this, Held(cond, this, &held), deadline);
  Acquire(this);
  return met;
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline) {
  static auto real = Real<bool (*)(Mutex*, const Condition&, Time)>(
      "5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  HeldCondition held;
  const bool met = real(this, Held(cond, this, &held), deadline);
  Acquire(this);
  return met;
}

// Await* give the (held) mutex up while they wait and hold it again after.
void Mutex::Await(const Condition& cond) {
  static auto real = Real<void (*)(Mutex*, const Condition&)>(
      "5Mutex5AwaitERKNS0_9ConditionE");
  Release(this);
  HeldCondition held;
  real(this, Held(cond, this, &held));
  Acquire(this);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  static auto real = Real<bool (*)(Mutex*, const Condition&, Duration)>(
      "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  Release(this);
  HeldCondition held;
  const bool met = real(this, Held(cond, this, &held), timeout);
  Acquire(this);
  return met;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  static auto real = Real<bool (*)(Mutex*, const Condition&, Time)>(
      "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  Release(this);
  HeldCondition held;
  const bool met = real(this, Held(cond, this, &held), deadline);
  Acquire(this);
  return met;
}

// CondVar waits give `mu` up and hold it again when they return.
void CondVar::Wait(Mutex* mu) {
  static auto real =
      Real<void (*)(CondVar*, Mutex*)>("7CondVar4WaitEPNS0_5MutexE");
  Release(mu);
  real(this, mu);
  Acquire(mu);
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  static auto real = Real<bool (*)(CondVar*, Mutex*, Duration)>(
      "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  Release(mu);
  const bool timed_out = real(this, mu, timeout);
  Acquire(mu);
  return timed_out;
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  static auto real = Real<bool (*)(CondVar*, Mutex*, Time)>(
      "7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  Release(mu);
  const bool timed_out = real(this, mu, deadline);
  Acquire(mu);
  return timed_out;
}

ABSL_NAMESPACE_END
}  // namespace absl
