#include "sync/owner_admission.h"

namespace latentd::sync {

uint64_t IncarnationAt(absl::Time start, uint32_t random_bits) {
  return (static_cast<uint64_t>(absl::ToUnixMicros(start)) << 12) |
         (random_bits & 0xfff);
}

uint64_t IncarnationBound(absl::Time now, absl::Duration skew) {
  return IncarnationAt(now + skew, 0xfff);
}

}  // namespace latentd::sync
