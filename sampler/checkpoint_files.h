// Two good snapshots in a model directory (sampler/model_dir.h): model.bin,
// the newest, and model.prev.bin, the one before it, so that one damaged
// checkpoint does not stop training or the daemon.
//
// SaveCheckpoint writes a new model.bin and keeps the one it replaces as
// model.prev.bin; LoadNewestSnapshot, at start-up, takes the newest of the
// two that verifies and fits the token store, and says why it refused the
// other. Resuming from the older one loses little: Trainer::Resume rebuilds
// the counts and takes the sweep number from the token store's
// assignments, so only the α optimized since that snapshot is lost.
//
// Usage:
//   ModelPaths paths(dir);
//   LATENTD_RETURN_IF_ERROR(SaveCheckpoint(trainer.Snapshot(), paths));
//   ...
//   absl::StatusOr<ResumePoint> p = LoadNewestSnapshot(paths, store->meta());
//   if (p.ok() && !p->refused.empty()) log(p->Describe());
//
// Stray temporary files a crash leaves (model.bin.tmp, model.prev.bin.tmp)
// are never read, and the next checkpoint overwrites them.
//
// Thread-safety: plain functions; one writer per directory at a time (the
// caller's lock), readers only while no checkpoint is being written.
#ifndef LATENTD_SAMPLER_CHECKPOINT_FILES_H_
#define LATENTD_SAMPLER_CHECKPOINT_FILES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "corpora/token_store.h"
#include "sampler/model_dir.h"
#include "sampler/model_snapshot.h"

namespace latentd {

// Writes `snapshot` as paths.snapshot() (model.bin). The model.bin it
// replaces becomes model.prev.bin if its checksum still verifies; if it
// does not, or keeping it fails, model.prev.bin is left as it is (a good
// older snapshot beats a damaged newer one) and *warning (if given) says
// why; else *warning is cleared. Either name always holds a complete
// snapshot: a crash at any step leaves the directory as before the call,
// with both names on the old model.bin, or as after it. Fails with the
// file system's error naming the path; model.bin is then the old one.
absl::Status SaveCheckpoint(const ModelRows& snapshot, const ModelPaths& paths,
                            std::string* warning = nullptr);

// True if the directory holds model.bin or model.prev.bin.
bool HasSnapshot(const ModelPaths& paths);

// The snapshot training resumes from, and why newer ones were passed over.
struct ResumePoint {
  ModelSnapshot snapshot;
  std::string path;  // the file it was read from
  // One line per snapshot refused before it, newest first, each "PATH
  // refused: why"; empty when model.bin itself was taken.
  std::vector<std::string> refused;
  // "DIR/model.bin refused: checksum mismatch over its 9120 bytes (...);
  // resuming from checkpoint at sweep 40 (model.prev.bin)".
  std::string Describe() const;
};

// Loads the newest snapshot (model.bin, then model.prev.bin) that verifies
// (magic, version, checksum, every row) and fits `store`: the same number
// of topics, no more words than the store, and not newer than the store's
// sweep (the store commits before every checkpoint, so a newer snapshot
// belongs to another store). Fails with kDataLoss naming every file and
// why it was refused if none does, kNotFound if neither file exists.
absl::StatusOr<ResumePoint> LoadNewestSnapshot(const ModelPaths& paths,
                                               const TokenStoreMeta& store);

}  // namespace latentd

#endif  // LATENTD_SAMPLER_CHECKPOINT_FILES_H_
