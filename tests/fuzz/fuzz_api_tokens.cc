// libFuzzer harness: the API's tokens file parser (ApiTokens::Parse). Any
// text gives tokens or an error naming the line; every token it accepts is
// found again with its role, and authorizes exactly what the role allows.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_split.h"
#include "service/api_auth.h"
#include "service/api_dispatch.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace latentd::service;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<ApiTokens> tokens = ApiTokens::Parse(text, "tokens");
  if (!tokens.ok()) {
    LATENTD_FUZZ_CHECK(tokens.status().code() ==
                       absl::StatusCode::kInvalidArgument);
    return 0;
  }
  LATENTD_FUZZ_CHECK(!tokens->Authorize("", Method::kStatus).ok());
  // Each "ROLE TOKEN" line that was accepted names a known token.
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    std::vector<absl::string_view> f =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (f.size() != 2 || f[0][0] == '#') continue;
    const std::string_view token(f[1].data(), f[1].size());
    const std::optional<Role> role = tokens->Find(token);
    if (!role.has_value()) continue;
    const absl::Status read = tokens->Authorize(token, Method::kStatus);
    LATENTD_FUZZ_CHECK(read.ok());
    const absl::Status admin = tokens->Authorize(token, Method::kCheckpoint);
    LATENTD_FUZZ_CHECK(admin.ok() == (*role == Role::kAdmin));
  }
  return 0;
}
