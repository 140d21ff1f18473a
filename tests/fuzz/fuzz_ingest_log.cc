// libFuzzer harness: the ingest log reader (IngestLog::Open, with and
// without repair) on a file of arbitrary bytes. A damaged log is an error
// naming the path and offset, or, repaired, a report of what was lost;
// the records it returns have increasing sequences and are reopened the
// same.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

#include "service/ingest_log.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  latentd::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace latentd::service;
  if (size < 1) return 0;
  const std::string dir = latentd::fuzz::ScratchDir() + "/log";
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);  // files kept aside by repairs
  std::filesystem::create_directories(dir);
  const std::string path = latentd::fuzz::WriteScratchFile(
      "log/ingest.log",
      std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  IngestLogOpenOptions o;
  o.repair = (data[0] & 1) != 0;
  o.merged_through = (data[0] >> 1) & 7;
  o.refuse_loss = (data[0] & 0x10) != 0;
  std::vector<IngestRecord> records;
  IngestLogRepair repair;
  absl::StatusOr<std::unique_ptr<IngestLog>> log =
      IngestLog::Open(path, &records, o, &repair);
  if (!log.ok()) return 0;
  for (size_t r = 1; r < records.size(); ++r) {
    LATENTD_FUZZ_CHECK(records[r].sequence > records[r - 1].sequence);
  }
  if (!records.empty()) {
    LATENTD_FUZZ_CHECK((*log)->last_sequence() >= records.back().sequence);
  }
  for (const IngestLogDamage& d : repair.damage) (void)d.Describe();
  log->reset();
  // What Open left (cut or repaired) opens again without damage, with the
  // same records.
  std::vector<IngestRecord> again;
  IngestLogOpenOptions strict;
  strict.merged_through = o.merged_through;
  absl::StatusOr<std::unique_ptr<IngestLog>> reopened =
      IngestLog::Open(path, &again, strict);
  LATENTD_FUZZ_CHECK(reopened.ok());
  LATENTD_FUZZ_CHECK(again.size() == records.size());
  for (size_t r = 0; r < again.size(); ++r) {
    LATENTD_FUZZ_CHECK(again[r].sequence == records[r].sequence);
    LATENTD_FUZZ_CHECK(again[r].words == records[r].words);
  }
  return 0;
}
