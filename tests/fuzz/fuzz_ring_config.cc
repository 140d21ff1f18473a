// libFuzzer harness: the ring config parser (hashring::ParseRingConfig), as
// a node reads the config from Redis. What it accepts builds a ring, and
// serializes to a config that parses to the same value.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hashring/ring.h"
#include "hashring/ring_config.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  latentd::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace latentd::hashring;
  absl::StatusOr<RingConfig> config = ParseRingConfig(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!config.ok()) {
    LATENTD_FUZZ_CHECK(config.status().code() ==
                       absl::StatusCode::kInvalidArgument);
    return 0;
  }
  LATENTD_FUZZ_CHECK(ValidateRingConfig(*config).ok());
  // Large point counts make this slow by design (a ring of 2^22 points is
  // legal); building small ones checks that Validate and Build agree.
  uint64_t points = 0;
  for (const Member& m : config->members) {
    points += uint64_t{m.weight} * config->virtual_points_per_weight;
  }
  if (points <= 4096) LATENTD_FUZZ_CHECK(Ring::Build(*config).ok());
  absl::StatusOr<RingConfig> again =
      ParseRingConfig(SerializeRingConfig(*config));
  LATENTD_FUZZ_CHECK(again.ok() && *again == *config);
  return 0;
}
