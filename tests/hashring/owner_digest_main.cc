// Helper for Ring.OwnersAreDeterministicAcrossProcesses: reads a serialized
// RingConfigProto, builds the ring and prints, in hex, the PlacementDigest of
// its owners and replicas for `count` keys from std::mt19937_64(seed).
//
//   hashring_owner_digest CONFIG_FILE COUNT SEED
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "hashring/ring.h"
#include "hashring/ring_config.h"
#include "tests/hashring/test_util.h"

int main(int argc, char** argv) {
  namespace hr = latentd::hashring;
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s CONFIG_FILE COUNT SEED\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  absl::StatusOr<hr::RingConfig> config = hr::ParseRingConfig(bytes);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
    return 1;
  }
  const auto ring = hr::test_util::MustBuild<hr::Ring>(*config);
  const uint64_t digest =
      hr::test_util::PlacementDigest(*ring, std::strtoull(argv[2], nullptr, 10),
                                     std::strtoull(argv[3], nullptr, 10));
  std::printf("%016" PRIx64 "\n", digest);
  return 0;
}
