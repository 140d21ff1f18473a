// Checks absl_mutex_hb.cc (run by ops/tsan.sh, TSan builds only): two
// threads count under an absl::Mutex (Lock/Unlock, MutexLock, and an Await
// on a Condition that reads the count), which TSan must not report with the
// library preloaded; given an argument, both also write a counter without
// the mutex, which TSan must still report (the library hides no real race).
#include <cstdio>
#include <thread>

#include "absl/synchronization/mutex.h"

namespace {

int guarded = 0;    // under mu
int unguarded = 0;  // written by both threads without mu when racing
absl::Mutex mu;

}  // namespace

int main(int argc, char**) {
  const bool race = argc > 1;
  std::thread t([race] {
    for (int i = 0; i < 1000; ++i) {
      absl::MutexLock l(&mu);
      ++guarded;
    }
    if (race) ++unguarded;
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
  if (race) ++unguarded;
  t.join();
  std::printf("guarded %d\n", guarded);
  return guarded == 2000 ? 0 : 1;
}
