// WorkQueue: a fixed pool of threads running queued closures, for work that
// must not run on the transport's event loop. Closures must not throw.
//
// Thread-safety: Post() from any thread; the destructor drains the queue
// and joins the threads.
#ifndef LATENTD_SERVICE_INTERNAL_WORK_QUEUE_H_
#define LATENTD_SERVICE_INTERNAL_WORK_QUEUE_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace latentd::service::internal {

class WorkQueue {
 public:
  explicit WorkQueue(int threads) {
    for (int i = 0; i < std::max(threads, 1); ++i) {
      threads_.emplace_back([this] { Run(); });
    }
  }
  ~WorkQueue() {
    {
      absl::MutexLock lock(&mu_);
      done_ = true;
    }
    for (std::thread& t : threads_) t.join();
  }
  void Post(std::function<void()> fn) {
    absl::MutexLock lock(&mu_);
    queue_.push_back(std::move(fn));
  }
  size_t depth() const {
    absl::MutexLock lock(&mu_);
    return queue_.size();
  }

 private:
  void Run() {
    for (;;) {
      std::function<void()> fn;
      {
        absl::MutexLock lock(&mu_);
        auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return done_ || !queue_.empty();
        };
        mu_.Await(absl::Condition(&ready));
        if (queue_.empty()) return;  // done_ and drained
        fn = std::move(queue_.front());
        queue_.pop_front();
      }
      fn();
    }
  }
  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace latentd::service::internal

#endif  // LATENTD_SERVICE_INTERNAL_WORK_QUEUE_H_
