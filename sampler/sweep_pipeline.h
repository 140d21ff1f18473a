// SweepPipeline: one Gibbs sweep over a token store as a oneTBB
// parallel_pipeline (docs/design.md "One node"):
//
//   reader (serial, in order)   next DocBatch from the store
//   samplers (parallel)         SamplingKernel::SampleBatch -> TopicChanges
//   combiner (parallel)         changes -> net (word, topic) deltas
//   count updater (in order)    TopicTable::Apply, the table's only writer
//   writer (in order)           batch with new topics -> the store's next
//                               version; DocTopicStats; progress
//
// At most `max_batches_in_flight` batches exist at once, so memory is bounded
// by that many batches whatever the corpus size. With one thread and one
// batch in flight a sweep is strictly sequential, hence reproducible.
//
// Thread-safety: Run() may not be called concurrently on one object; it uses
// its own task arena of `threads` threads.
#ifndef LATENTD_SAMPLER_SWEEP_PIPELINE_H_
#define LATENTD_SAMPLER_SWEEP_PIPELINE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "corpora/token_store.h"
#include "sampler/doc_topic_stats.h"
#include "sampler/sampling_kernel.h"
#include "sampler/topic_table.h"

namespace latentd {

struct PipelineOptions {
  // Sampler threads (the arena's size).
  int threads = 1;
  // Batches alive at once across all stages; 0 picks 2·threads + 1 (1 when
  // threads == 1, which makes single-thread sweeps reproducible).
  int max_batches_in_flight = 0;
  // The first this many batches of a Run are sampled one at a time, each
  // once the one before it is applied to the table (the rest as many at
  // once as above). For a pass that starts from an empty table, where a
  // batch sampled beside the first ones would see none of them.
  int serial_prefix_batches = 0;
  // The kernel of the samplers (kAuto runs SparseLDA here: choosing is the
  // Trainer's job). SetKernel changes it between runs.
  KernelKind kernel = KernelKind::kSparseLda;
  KernelOptions kernel_options;
  // If > 0, every thread that samples in this pipeline (the caller of Run
  // and the arena's workers) lowers its scheduling priority to this nice
  // value (Linux, per thread; never raises it). A daemon uses it so that
  // training yields the cores to queries under load and still gets all of
  // them when idle. Note: a thread keeps its lowered priority afterwards.
  int nice = 0;
  // Whether Run commits the store's new version in the background
  // (BatchWriter::CommitInBackground): the fsync and rename, about 10 ms a
  // sweep here (5-10% of a sweep of news20 on two threads), overlap the
  // next sweep instead of idling every core. The version is current when
  // Run returns and durable once TokenStore::WaitDurable() says so; a
  // failure of its commit fails the next Run. Off: Run returns once the
  // version is durable.
  bool background_commit = true;
};

struct SweepResult {
  uint64_t documents = 0;
  uint64_t tokens = 0;
  uint64_t changed = 0;  // tokens whose topic changed
  uint64_t batches = 0;
  double seconds = 0;
};

// Sets the calling thread's nice value to `nice` if that lowers its
// priority; nothing if nice <= 0 (best effort: errors are ignored).
void LowerThreadPriority(int nice);

class SweepPipeline {
 public:
  // REQUIRES: options.threads >= 1, num_topics in (0, kMaxTopics].
  SweepPipeline(const PipelineOptions& options, TopicId num_topics);
  ~SweepPipeline();

  // Runs one sweep: reads every batch of `store`, resamples it against
  // `table` (updating the table), and commits the store's new version. If
  // `stats` is given, every document's final assignments are added to it.
  // On error (a damaged store, a failed write) the store keeps its old
  // version; the table then holds the deltas of the batches already applied
  // and must be rebuilt from the store (Trainer does this).
  absl::StatusOr<SweepResult> Run(TokenStore* store, TopicTable* table,
                                  const SweepParams& params,
                                  DocTopicStats* stats);

  // Called by the count-updater stage, the table's single writer, after
  // each batch's deltas (`applied`) are applied: it folds in external
  // corrections (the cluster synchronizer's, sampler/synced_table.h). A
  // non-OK status fails the sweep like a failed count update. Empty by
  // default; set it only while no Run() is in progress.
  using CountUpdaterHook = std::function<absl::Status(
      TopicTable* table, std::span<const WordTopicDelta> applied)>;
  void SetCountUpdaterHook(CountUpdaterHook hook);
  // Called by the writer stage (one call at a time) once `every` has passed
  // since a Run() started or since the hook's last call in it, with the
  // tokens written so far in this Run() and the store's total: progress
  // within a long sweep. Empty by default; set it only while no Run() is
  // in progress.
  using ProgressHook =
      std::function<void(uint64_t tokens_done, uint64_t tokens_total)>;
  void SetProgressHook(ProgressHook hook, absl::Duration every);
  // The kernel of the next Run()s; call only while no Run() is in
  // progress. Each thread keeps one kernel object of each kind it ran.
  void SetKernel(KernelKind kind);
  KernelKind kernel() const;
  // Frees every thread's kernel object of `kind` (all kinds if none is
  // given), and the per-word scratch it holds (its BatchOverlay: 12
  // bytes a word), until a Run() of that kind makes it again. Call only
  // while no Run() is in progress: after a start's pass, or once sampling
  // is over.
  void ReleaseKernels(std::optional<KernelKind> kind = std::nullopt);
  // PipelineOptions::max_batches_in_flight of the next Run()s; call only
  // while no Run() is in progress.
  void SetMaxBatchesInFlight(int batches);
  int max_batches_in_flight() const;
  // PipelineOptions::serial_prefix_batches of the next Run()s; call only
  // while no Run() is in progress.
  void SetSerialPrefixBatches(int batches);
  // If set, Run() holds `mu` while it re-lays the table out after a sweep
  // (TopicTable::Quiesce), so a reader outside the pipeline that holds `mu`
  // never sees a row mid-move. `mu` must outlive the pipeline; set it only
  // while no Run() is in progress.
  void SetQuiesceMutex(absl::Mutex* mu);
  // Whether the next Run()s end in TopicTable::Quiesce (the default) or
  // only free the retired row blocks (TopicTable::ReleaseRetired), leaving
  // the rows where they are for a pass that fills them again.
  void SetRelayoutAfterRun(bool relayout);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Rebuilds `table` (cleared first) from the assignments in `store`.
// Fails if the store is damaged or its ids do not fit the table.
absl::Status RebuildTable(TokenStore* store, TopicTable* table);

// Each word's tokens in `store` (a pass over its words), each counted up to
// `cap`. Fails if the store is damaged or holds a word >= vocab_size.
absl::StatusOr<std::vector<uint32_t>> CountWordTokens(TokenStore* store,
                                                      size_t vocab_size,
                                                      uint32_t cap);

}  // namespace latentd

#endif  // LATENTD_SAMPLER_SWEEP_PIPELINE_H_
