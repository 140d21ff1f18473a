#include "sampler/sweep_pipeline.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "base/tbb_workers.h"
#include "base/tsan.h"
#include "oneapi/tbb/concurrent_queue.h"
#include "oneapi/tbb/enumerable_thread_specific.h"
#include "oneapi/tbb/parallel_pipeline.h"
#include "oneapi/tbb/task_arena.h"
#include "oneapi/tbb/task_scheduler_observer.h"
#include "sampler/internal/delta_combiner.h"

namespace latentd {
namespace {

// The pipeline's token: one batch and what the stages derive from it.
struct BatchWork {
  DocBatch batch;
  std::vector<TopicChange> changes;
  std::vector<WordTopicDelta> deltas;
};
// What travels between the stages: a plain pointer, which oneTBB passes as
// is. (A std::unique_ptr token would be moved into a slot oneTBB allocates
// and frees for every stage, out of ThreadSanitizer's sight.) The
// BatchWork objects are owned by SweepPipeline::Impl::works.
using WorkPtr = BatchWork*;

// First error of a run; stages stop early once one is set.
class ErrorSlot {
 public:
  void Set(absl::Status status) {
    absl::MutexLock lock(&mu_);
    if (status_.ok()) status_ = std::move(status);
    failed_.store(true, std::memory_order_release);
  }
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  absl::Status status() {
    absl::MutexLock lock(&mu_);
    return status_;
  }

 private:
  absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> failed_{false};
};

// Lowers the priority of each thread entering the arena to `nice`.
class NiceObserver final : public tbb::task_scheduler_observer {
 public:
  NiceObserver(tbb::task_arena& arena, int nice)
      : tbb::task_scheduler_observer(arena), nice_(nice) {
    if (nice_ > 0) observe(true);
  }
  ~NiceObserver() override { observe(false); }
  void on_scheduler_entry(bool /*is_worker*/) override {
    LowerThreadPriority(nice_);
  }

 private:
  const int nice_;
};

}  // namespace

void LowerThreadPriority(int nice) {
  if (nice <= 0) return;
  const id_t tid = static_cast<id_t>(::syscall(SYS_gettid));
  errno = 0;
  const int now = ::getpriority(PRIO_PROCESS, tid);
  if (errno == 0 && now >= nice) return;
  (void)::setpriority(PRIO_PROCESS, tid, nice);  // best effort
}

struct SweepPipeline::Impl {
  Impl(const PipelineOptions& o, TopicId k)
      : options(o),
        arena(EnsureTbbThreads(o.threads)),
        nice_observer(arena, o.nice),
        num_topics(k) {}

  // The calling thread's kernel of `kind`, made on first use.
  SamplingKernel& LocalKernel(KernelKind kind) {
    std::unique_ptr<SamplingKernel>& kernel =
        kernels.local()[static_cast<size_t>(kind)];
    if (kernel == nullptr)
      kernel = MakeKernel(kind, num_topics, options.kernel_options);
    return *kernel;
  }

  PipelineOptions options;
  tbb::task_arena arena;
  NiceObserver nice_observer;
  const TopicId num_topics;
  static constexpr size_t kKinds =
      static_cast<size_t>(KernelKind::kProgressiveStart) + 1;
  tbb::enumerable_thread_specific<
      std::array<std::unique_ptr<SamplingKernel>, kKinds>>
      kernels;
  uint64_t runs = 0;  // Run() calls so far; stamps SweepParams::run
  // Every BatchWork made (appended only by the serial read stage, at most
  // one per batch in flight), and those not in the pipeline now.
  std::vector<std::unique_ptr<BatchWork>> works;
  tbb::concurrent_queue<WorkPtr> pool;
  // The combiner stage's, one a thread: a batch's changes fold into its
  // deltas independently of every other batch's, so the stage runs in
  // parallel and only the count updater is left between the samplers.
  tbb::enumerable_thread_specific<internal::DeltaCombiner> combiners;
  CountUpdaterHook count_updater_hook;  // runs in the count updater
  ProgressHook progress_hook;           // runs in the writer
  absl::Duration progress_every;
  absl::Mutex* quiesce_mutex = nullptr;  // held around table->Quiesce()
  bool relayout_after_run = true;
};

SweepPipeline::SweepPipeline(const PipelineOptions& options, TopicId num_topics)
    : impl_(std::make_unique<Impl>(options, num_topics)) {}

SweepPipeline::~SweepPipeline() = default;

void SweepPipeline::SetCountUpdaterHook(CountUpdaterHook hook) {
  impl_->count_updater_hook = std::move(hook);
}

void SweepPipeline::SetProgressHook(ProgressHook hook, absl::Duration every) {
  impl_->progress_hook = std::move(hook);
  impl_->progress_every = every;
}

void SweepPipeline::SetKernel(KernelKind kind) { impl_->options.kernel = kind; }

KernelKind SweepPipeline::kernel() const { return impl_->options.kernel; }

void SweepPipeline::ReleaseKernels(std::optional<KernelKind> kind) {
  for (auto& thread_kernels : impl_->kernels) {
    for (size_t i = 0; i < thread_kernels.size(); ++i) {
      if (!kind.has_value() || static_cast<size_t>(*kind) == i) {
        thread_kernels[i].reset();
      }
    }
  }
}

void SweepPipeline::SetMaxBatchesInFlight(int batches) {
  impl_->options.max_batches_in_flight = batches;
}

int SweepPipeline::max_batches_in_flight() const {
  return impl_->options.max_batches_in_flight;
}

void SweepPipeline::SetSerialPrefixBatches(int batches) {
  impl_->options.serial_prefix_batches = batches;
}

void SweepPipeline::SetRelayoutAfterRun(bool relayout) {
  impl_->relayout_after_run = relayout;
}

void SweepPipeline::SetQuiesceMutex(absl::Mutex* mu) {
  impl_->quiesce_mutex = mu;
}

absl::StatusOr<SweepResult> SweepPipeline::Run(TokenStore* store,
                                               TopicTable* table,
                                               const SweepParams& run_params,
                                               DocTopicStats* stats) {
  const auto start = std::chrono::steady_clock::now();
  SweepParams params = run_params;
  params.run = impl_->runs++;
  params.overlay_max_word_tokens = AutoOverlayMaxWordTokens(
      store->meta().num_docs, store->meta().num_tokens);
  const KernelKind kind = impl_->options.kernel;
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<BatchReader> reader, store->Read());
  TokenStoreMeta next_meta = store->meta();
  next_meta.sweep = params.sweep + 1;
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<BatchWriter> writer,
                           store->Rewrite(next_meta));

  int in_flight = impl_->options.max_batches_in_flight;
  if (in_flight <= 0) {
    in_flight =
        impl_->options.threads == 1 ? 1 : 2 * impl_->options.threads + 1;
  }
  ErrorSlot error;
  SweepResult result;
  // Batches through the count updater so far, for the serial prefix: the
  // read of batch b < serial_prefix waits until b batches are applied.
  // Every batch passes the updater (a failed one too), so the wait ends.
  const uint64_t serial_prefix =
      in_flight > 1 ? static_cast<uint64_t>(
                          std::max(impl_->options.serial_prefix_batches, 0))
                    : 0;
  absl::Mutex applied_mu;
  uint64_t applied = 0;  // guarded by applied_mu

  // For ThreadSanitizer (base/tsan.h; nothing in other builds), what oneTBB
  // orders out of TSan's sight: Run's setup before the first read, each
  // serial stage's calls one after another (its token in `stage`), a batch's
  // hand-off from one stage to the next (and through the pool), and every
  // stage before Run goes on after the pipeline.
  enum { kRead, kUpdate, kWrite, kStages };
  const char stage[kStages] = {};
  tsan::Release(&stage[kRead]);

  auto read = [&](tbb::flow_control& fc) -> WorkPtr {
    tsan::Acquire(&stage[kRead]);
    WorkPtr work = nullptr;
    if (!error.failed()) {
      if (!impl_->pool.try_pop(work)) {
        work = impl_->works.emplace_back(std::make_unique<BatchWork>()).get();
      }
      tsan::Acquire(work);  // from the write that put it in the pool
      absl::StatusOr<bool> more = reader->Next(&work->batch);
      if (!more.ok()) error.Set(more.status());
      if (!more.ok() || !*more) {
        impl_->pool.push(work);
        work = nullptr;
      }
    }
    if (work != nullptr && work->batch.index < serial_prefix) {
      const uint64_t before = work->batch.index;
      struct Applied {
        const uint64_t* count;
        uint64_t want;
        bool Done() const { return *count >= want; }
      } applied_before{&applied, before};
      absl::MutexLock lock(&applied_mu);
      applied_mu.Await(absl::Condition(&applied_before, &Applied::Done));
    }
    if (work == nullptr) {
      fc.stop();
    } else {
      tsan::Release(work);
    }
    tsan::Release(&stage[kRead]);
    return work;
  };
  auto sample = [&](WorkPtr work) -> WorkPtr {
    tsan::Acquire(work);
    work->changes.clear();
    if (!error.failed()) {
      impl_->LocalKernel(kind).SampleBatch(params, &work->batch,
                                           &work->changes);
    }
    tsan::Release(work);
    return work;
  };
  auto combine = [&](WorkPtr work) -> WorkPtr {
    tsan::Acquire(work);
    impl_->combiners.local().Combine(work->changes, &work->deltas);
    tsan::Release(work);
    return work;
  };
  auto update = [&](WorkPtr work) -> WorkPtr {
    tsan::Acquire(&stage[kUpdate]);
    tsan::Acquire(work);
    if (!error.failed()) {
      absl::Status s = table->Apply(work->deltas);
      if (!s.ok()) {
        error.Set(absl::InternalError(absl::StrCat(
            "count update of batch ", work->batch.index, ": ", s.message())));
      } else if (impl_->count_updater_hook) {
        s = impl_->count_updater_hook(table, work->deltas);
        if (!s.ok()) error.Set(s);
      }
    }
    if (serial_prefix > 0) {
      absl::MutexLock lock(&applied_mu);
      ++applied;
    }
    tsan::Release(&stage[kUpdate]);
    tsan::Release(work);  // last: it also covers reading `stage`
    return work;
  };
  const uint64_t total_tokens = store->meta().num_tokens;
  absl::Time progress_at = absl::Now();
  auto write = [&](WorkPtr work) {
    tsan::Acquire(&stage[kWrite]);
    tsan::Acquire(work);
    if (!error.failed()) {
      absl::Status s = writer->Append(work->batch);
      if (!s.ok()) error.Set(s);
      const DocBatch& b = work->batch;
      if (stats != nullptr) {
        for (size_t d = 0; d < b.num_docs(); ++d) {
          stats->AddDocument(b.doc_topics(d));
        }
      }
      result.documents += b.num_docs();
      result.tokens += b.num_tokens();
      result.changed += work->changes.size();
      ++result.batches;
      if (impl_->progress_hook) {
        const absl::Time now = absl::Now();
        if (now - progress_at >= impl_->progress_every) {
          progress_at = now;
          impl_->progress_hook(result.tokens, total_tokens);
        }
      }
    }
    tsan::Release(work);  // to the read that takes it from the pool
    impl_->pool.push(work);
    tsan::Release(&stage[kWrite]);
  };

  LowerThreadPriority(impl_->options.nice);
  impl_->arena.execute([&] {
    tbb::parallel_pipeline(static_cast<size_t>(in_flight),
                           tbb::make_filter<void, WorkPtr>(
                               tbb::filter_mode::serial_in_order, read) &
                               tbb::make_filter<WorkPtr, WorkPtr>(
                                   tbb::filter_mode::parallel, sample) &
                               tbb::make_filter<WorkPtr, WorkPtr>(
                                   tbb::filter_mode::parallel, combine) &
                               tbb::make_filter<WorkPtr, WorkPtr>(
                                   tbb::filter_mode::serial_in_order, update) &
                               tbb::make_filter<WorkPtr, void>(
                                   tbb::filter_mode::serial_in_order, write));
  });
  // Every batch went through the write stage; the last read saw the end.
  tsan::Acquire(&stage[kWrite]);
  tsan::Acquire(&stage[kRead]);
  // No sampler runs now: retired row blocks can go.
  {
    std::optional<absl::MutexLock> l;
    if (impl_->quiesce_mutex != nullptr) l.emplace(impl_->quiesce_mutex);
    if (impl_->relayout_after_run) {
      table->Quiesce();
    } else {
      table->ReleaseRetired();
    }
  }
  LATENTD_RETURN_IF_ERROR(error.status());
  LATENTD_RETURN_IF_ERROR(impl_->options.background_commit
                              ? writer->CommitInBackground()
                              : writer->Commit());
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

absl::StatusOr<std::vector<uint32_t>> CountWordTokens(TokenStore* store,
                                                      size_t vocab_size,
                                                      uint32_t cap) {
  std::vector<uint32_t> tokens(vocab_size, 0);
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<BatchReader> reader, store->Read());
  DocBatch batch;
  while (true) {
    LATENTD_ASSIGN_OR_RETURN(bool more, reader->Next(&batch));
    if (!more) break;
    for (WordId w : batch.words) {
      if (w >= vocab_size) {
        return absl::DataLossError(
            absl::StrCat("token store batch ", batch.index, " has word ", w,
                         " outside the model (", vocab_size, " words)"));
      }
      tokens[w] += tokens[w] < cap;
    }
  }
  return tokens;
}

absl::Status RebuildTable(TokenStore* store, TopicTable* table) {
  table->Clear();
  if (store->meta().sweep == 0) {
    // The builder's uniform draws: a word of n tokens has about
    // ExpectedTopicsOfUniformDraws(n, K) topics, so each row is allocated once
    // at that size (a pass over the store's words), in the size class Quiesce
    // keeps it in, rather than grown through every size on the way (docs/
    // benchmarks.md, "Large corpora from disk"). A trained store's rows
    // hold far fewer topics than its tokens: they grow.
    const uint32_t K = table->num_topics();
    LATENTD_ASSIGN_OR_RETURN(std::vector<uint32_t> topics,
                             CountWordTokens(store, table->vocab_size(), K));
    for (uint32_t& t : topics) t = ExpectedTopicsOfUniformDraws(t, K);
    table->ReserveRows(topics);
  }
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<BatchReader> reader, store->Read());
  DocBatch batch;
  std::vector<WordTopicDelta> deltas;
  std::vector<TopicChange> adds;
  internal::DeltaCombiner combiner;
  while (true) {
    LATENTD_ASSIGN_OR_RETURN(bool more, reader->Next(&batch));
    if (!more) break;
    // A token counts as a change from nothing: +1 for (word, topic).
    adds.clear();
    for (size_t i = 0; i < batch.num_tokens(); ++i) {
      if (batch.words[i] >= table->vocab_size() ||
          batch.topics[i] >= table->num_topics()) {
        return absl::DataLossError(absl::StrCat(
            "token store batch ", batch.index, " has word ", batch.words[i],
            " topic ", batch.topics[i], " outside the model (",
            table->vocab_size(), " words, ", table->num_topics(), " topics)"));
      }
      adds.push_back({batch.words[i], kUncounted, batch.topics[i]});
    }
    combiner.Combine(adds, &deltas);
    LATENTD_RETURN_IF_ERROR(table->Apply(deltas));
  }
  table->Quiesce();
  return absl::OkStatus();
}

}  // namespace latentd
