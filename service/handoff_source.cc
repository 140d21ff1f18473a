#include "service/handoff_source.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace latentd::service {
namespace {

constexpr std::string_view kPrefix = "handoff:";

absl::string_view Sv(std::string_view s) { return {s.data(), s.size()}; }

}  // namespace

std::string HandoffAttempt::key() const {
  return absl::StrCat(node, "/", epoch);
}

std::string HandoffSource(std::string_view node, uint64_t epoch,
                          uint64_t index) {
  return absl::StrCat(Sv(kPrefix), Sv(node), "/", epoch, "/", index);
}

std::optional<HandoffAttempt> ParseHandoffKey(std::string_view key) {
  const size_t slash = key.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  HandoffAttempt a;
  if (!absl::SimpleAtoi(Sv(key.substr(slash + 1)), &a.epoch) || a.epoch == 0) {
    return std::nullopt;
  }
  a.node = std::string(key.substr(0, slash));
  return a;
}

std::optional<HandoffAttempt> ParseHandoffSource(std::string_view source) {
  if (!source.starts_with(kPrefix)) return std::nullopt;
  source.remove_prefix(kPrefix.size());
  const size_t slash = source.rfind('/');
  uint64_t index = 0;
  if (slash == std::string_view::npos ||
      !absl::SimpleAtoi(Sv(source.substr(slash + 1)), &index)) {
    return std::nullopt;
  }
  return ParseHandoffKey(source.substr(0, slash));
}

}  // namespace latentd::service
