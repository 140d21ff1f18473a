// Happens-before annotations for ThreadSanitizer, for code whose threads
// are ordered by a library TSan cannot see into (Debian's oneTBB is not
// built with -fsanitize=thread: a parallel_pipeline hands an item from one
// stage to the next, and runs a serial stage on one item at a time, through
// its own uninstrumented scheduler). Without them TSan reports the
// hand-offs as data races; with them it still reports a real race, one the
// library's ordering does not cover.
//
//   tsan::Release(p)  everything this thread did so far ...
//   tsan::Acquire(p)  ... happens before what this thread does next, once
//                     it follows a Release of the same p in another thread.
//
// Outside a -fsanitize=thread build both are empty inline functions: no
// code, no cost. Thread-safety: callable from any thread.
#ifndef LATENTD_BASE_TSAN_H_
#define LATENTD_BASE_TSAN_H_

#if defined(__SANITIZE_THREAD__)
#define LATENTD_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LATENTD_TSAN 1
#endif
#endif

#ifdef LATENTD_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace latentd::tsan {

#ifdef LATENTD_TSAN
inline void Acquire(const void* p) { __tsan_acquire(const_cast<void*>(p)); }
inline void Release(const void* p) { __tsan_release(const_cast<void*>(p)); }
#else
inline void Acquire(const void*) {}
inline void Release(const void*) {}
#endif

}  // namespace latentd::tsan

#endif  // LATENTD_BASE_TSAN_H_
