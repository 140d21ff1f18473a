// Checks absl_mutex_hb.cc (run by ops/tsan.sh, TSan builds only): two
// threads count under an absl::Mutex (Lock/Unlock, MutexLock, and an Await
// on a Condition that reads the count), which TSan must not report with the
// library preloaded; given an argument, both also write a counter without
// the mutex, which TSan must still report (the library hides no real race).
// The two writes are apart in time but unordered (relaxed atomics, which
// TSan does not count as synchronization): TSan can miss two racing
// accesses made at the same moment, each checking the other's shadow
// before it is written, and these two followed one Unlock (18 runs in 100
// did not report it).
#include <atomic>
#include <cstdio>
#include <thread>

#include "absl/synchronization/mutex.h"

namespace {

int guarded = 0;    // under mu
int unguarded = 0;  // written by both threads without mu when racing
std::atomic<bool> thread_wrote{false};  // relaxed only: no ordering
absl::Mutex mu;

}  // namespace

int main(int argc, char**) {
  const bool race = argc > 1;
  std::thread t([race] {
    for (int i = 0; i < 1000; ++i) {
      absl::MutexLock l(&mu);
      ++guarded;
    }
    if (race) {
      ++unguarded;
      thread_wrote.store(true, std::memory_order_relaxed);
    }
  });
  for (int i = 0; i < 1000; ++i) {
    mu.Lock();
    ++guarded;
    mu.Unlock();
  }
  {
    absl::MutexLock l(&mu);
    mu.Await(absl::Condition(
        +[](int* g) { return *g == 2000; }, &guarded));
  }
  if (race) {
    while (!thread_wrote.load(std::memory_order_relaxed)) {
      std::this_thread::yield();
    }
    ++unguarded;
  }
  t.join();
  std::printf("guarded %d\n", guarded);
  return guarded == 2000 ? 0 : 1;
}
