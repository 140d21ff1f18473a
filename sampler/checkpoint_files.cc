#include "sampler/checkpoint_files.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "base/file_system.h"
#include "base/file_util.h"
#include "base/status_macros.h"

namespace latentd {
namespace {

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Makes `tmp` a second name of `from` (a hard link; a durable copy where
// the file system has no hard links). REQUIRES: `from` is durable.
absl::Status LinkOrCopy(const std::string& from, const std::string& tmp) {
  FileSystem* fs = FileSystem::Default();
  absl::Status removed = fs->Remove(tmp);
  if (!removed.ok() && !absl::IsNotFound(removed)) return removed;
  if (fs->Link(from, tmp).ok()) return absl::OkStatus();
  LATENTD_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(from));
  return WriteFileDurably(tmp, bytes);
}

// The snapshot at `path` if it verifies and fits `store`; else why not
// (kNotFound "missing" if there is no such file).
absl::StatusOr<ModelSnapshot> LoadFitting(const std::string& path,
                                          const TokenStoreMeta& store) {
  if (!PathExists(path)) return absl::NotFoundError("missing");
  absl::StatusOr<ModelSnapshot> snap = ModelSnapshot::Load(path);
  if (!snap.ok()) {
    // "model snapshot PATH: why" -> "why"; other messages stay whole.
    absl::string_view why = snap.status().message();
    absl::ConsumePrefix(&why, absl::StrCat("model snapshot ", path, ": "));
    return absl::Status(snap.status().code(), std::string(why));
  }
  if (snap->num_topics != store.num_topics) {
    return absl::FailedPreconditionError(
        absl::StrCat("it has ", snap->num_topics, " topics, the token store ",
                     store.num_topics));
  }
  if (snap->vocab_size > store.vocab_size) {
    return absl::FailedPreconditionError(
        absl::StrCat("it has ", snap->vocab_size, " words, the token store ",
                     store.vocab_size));
  }
  if (snap->sweep > store.sweep) {
    return absl::FailedPreconditionError(absl::StrCat(
        "it is at sweep ", snap->sweep, ", newer than the token store (sweep ",
        store.sweep, "): it belongs to another store"));
  }
  return snap;
}

}  // namespace

absl::Status SaveCheckpoint(const ModelRows& snapshot, const ModelPaths& paths,
                            std::string* warning) {
  if (warning != nullptr) warning->clear();
  const std::string current = paths.snapshot();
  const std::string previous = paths.prev_snapshot();
  const std::string fresh = current + ".tmp";
  // Crash safety, step by step: (1) the new snapshot goes to model.bin.tmp
  // and is fsynced; a crash here leaves both names as they were and a stray
  // temp file nobody reads. (2) model.bin gets a second name,
  // model.prev.bin.tmp, which a rename(2) moves over model.prev.bin; the
  // rename is atomic, so model.prev.bin is the old previous or the current
  // snapshot, never absent, and model.bin is untouched. (3) A rename moves
  // model.bin.tmp over model.bin, again atomically: model.bin is the
  // current or the new snapshot. At no moment is either name missing or
  // partly written, and the new file is durable before any name points at
  // it; each rename is followed by an fsync of the directory.
  absl::Status written = snapshot.WriteDurably(fresh);
  if (!written.ok()) {
    (void)FileSystem::Default()->Remove(fresh);
    return written;
  }
  if (PathExists(current)) {
    // A model.bin that no longer verifies must not push out a good
    // model.prev.bin. If keeping it fails, the new snapshot still goes in:
    // model.prev.bin then stays one checkpoint older, still good.
    std::string problem;
    absl::Status verified = ModelSnapshot::VerifyFile(current);
    if (verified.ok()) {
      const std::string link = previous + ".tmp";
      absl::Status kept = LinkOrCopy(current, link);
      if (kept.ok()) kept = RenameDurably(link, previous);
      if (!kept.ok()) {
        problem = absl::StrCat("could not keep ", current, " as ", previous,
                               " (", kept.message(), "); ", previous,
                               " stays one checkpoint older");
      }
    } else {
      problem =
          absl::StrCat(current, " no longer verifies (", verified.message(),
                       "); kept ", previous, " as the previous snapshot");
    }
    if (warning != nullptr) *warning = std::move(problem);
  }
  absl::Status status = RenameDurably(fresh, current);
  if (!status.ok() && PathExists(fresh)) {
    (void)FileSystem::Default()->Remove(fresh);
  }
  return status;
}

bool HasSnapshot(const ModelPaths& paths) {
  return PathExists(paths.snapshot()) || PathExists(paths.prev_snapshot());
}

std::string ResumePoint::Describe() const {
  std::string out = absl::StrJoin(refused, "; ");
  absl::StrAppend(&out, out.empty() ? "" : "; ",
                  "resuming from checkpoint at sweep ", snapshot.sweep, " (",
                  BaseName(path), ")");
  return out;
}

absl::StatusOr<ResumePoint> LoadNewestSnapshot(const ModelPaths& paths,
                                               const TokenStoreMeta& store) {
  ResumePoint point;
  bool any = false;
  for (const std::string& path : {paths.snapshot(), paths.prev_snapshot()}) {
    absl::StatusOr<ModelSnapshot> snap = LoadFitting(path, store);
    if (snap.ok()) {
      point.snapshot = *std::move(snap);
      point.path = path;
      return point;
    }
    any = any || snap.status().code() != absl::StatusCode::kNotFound;
    point.refused.push_back(
        absl::StrCat(path, " refused: ", snap.status().message()));
  }
  if (!any) {
    return absl::NotFoundError(
        absl::StrCat("no model snapshot in ", paths.dir));
  }
  return absl::DataLossError(absl::StrCat("no usable model snapshot in ",
                                          paths.dir, ": ",
                                          absl::StrJoin(point.refused, "; ")));
}

}  // namespace latentd
