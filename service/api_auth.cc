#include "service/api_auth.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/absl_compat.h"
#include "corpora/input_file.h"
#include "sync/transport/peer_auth.h"

namespace latentd::service {
namespace {

using ::latentd::internal::ToAbsl;

std::optional<Role> RoleFromName(std::string_view name) {
  if (name == "read") return Role::kRead;
  if (name == "write") return Role::kWrite;
  if (name == "admin") return Role::kAdmin;
  return std::nullopt;
}

}  // namespace

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kRead:
      return "read";
    case Role::kWrite:
      return "write";
    case Role::kAdmin:
      return "admin";
  }
  return "?";
}

Role RequiredRole(Method method) {
  switch (method) {
    case Method::kListTopics:
    case Method::kGetTopic:
    case Method::kWordTopics:
    case Method::kInferDocument:
    case Method::kGetUserProfile:
    case Method::kStatus:
    case Method::kExportModel:
    case Method::kGetEmbedding:
    case Method::kScorePairs:
    case Method::kNearestVertices:
    case Method::kSimilarDocuments:
    case Method::kSimilarUsers:
    case Method::kGetDocumentTopics:
    case Method::kTopicDocuments:
    case Method::kClusterMembers:
      return Role::kRead;
    case Method::kIngest:
    case Method::kIngestEdges:
      return Role::kWrite;
    case Method::kCheckpoint:
      return Role::kAdmin;
  }
  return Role::kAdmin;  // a call added later is admin's until placed
}

absl::StatusOr<ApiTokens> ApiTokens::Load(const std::string& path) {
  absl::StatusOr<std::string> text = ReadWholeFile(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat("api-tokens: ", text.status().message()));
  }
  return Parse(*text, path);
}

absl::StatusOr<ApiTokens> ApiTokens::Parse(std::string_view text,
                                           const std::string& source) {
  ApiTokens tokens;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(ToAbsl(text), '\n')) {
    ++line_no;
    const size_t hash = line.find('#');
    if (hash != absl::string_view::npos) line = line.substr(0, hash);
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":", line_no, ": ", why));
    };
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (fields.size() != 2) {
      return bad("want \"ROLE TOKEN\" (ROLE: read, write or admin)");
    }
    const std::optional<Role> role =
        RoleFromName(std::string_view(fields[0].data(), fields[0].size()));
    if (!role.has_value()) {
      return bad(absl::StrCat("unknown role '", fields[0],
                              "' (read, write or admin)"));
    }
    if (fields[1].size() < kMinTokenChars) {
      return bad(
          absl::StrCat("token shorter than ", kMinTokenChars, " characters"));
    }
    const std::string_view token(fields[1].data(), fields[1].size());
    if (tokens.Find(token).has_value()) {
      return bad("token given twice");
    }
    absl::MutexLock lock(&tokens.state_->mu);
    tokens.state_->entries.push_back({*role, std::string(token)});
  }
  bool empty = false;
  {
    absl::MutexLock lock(&tokens.state_->mu);
    empty = tokens.state_->entries.empty();
  }
  if (empty) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": no token (want \"ROLE TOKEN\" lines)"));
  }
  return tokens;
}

std::optional<Role> ApiTokens::Find(std::string_view token) const {
  std::optional<Role> found;
  absl::ReaderMutexLock lock(&state_->mu);
  // Every entry is compared, so the time does not say which one matched.
  for (const Entry& e : state_->entries) {
    if (sync::ConstantTimeEqual(e.token, token)) found = e.role;
  }
  return found;
}

absl::Status ApiTokens::Authorize(std::string_view token, Method method) const {
  return Caller(token, method).status();
}

absl::StatusOr<Role> ApiTokens::Caller(std::string_view token,
                                       Method method) const {
  const std::string_view call = MethodName(method);
  if (token.empty()) {
    return absl::UnauthenticatedError(
        absl::StrCat("the daemon wants a token (", ToAbsl(call), " needs a ",
                     ToAbsl(RoleName(RequiredRole(method))), " token)"));
  }
  const std::optional<Role> role = Find(token);
  if (!role.has_value()) {
    return absl::UnauthenticatedError("the daemon knows no such token");
  }
  const Role need = RequiredRole(method);
  if (static_cast<int>(*role) < static_cast<int>(need)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "the token's role (", ToAbsl(RoleName(*role)), ") cannot call ",
        ToAbsl(call), ": it needs ", ToAbsl(RoleName(need))));
  }
  return *role;
}

std::string ApiTokens::PeerToken() const {
  absl::ReaderMutexLock lock(&state_->mu);
  for (const Entry& e : state_->entries) {
    if (e.role == Role::kAdmin) return e.token;
  }
  return "";
}

absl::StatusOr<size_t> ApiTokens::Reload(const std::string& path) {
  absl::StatusOr<ApiTokens> next = Load(path);
  if (!next.ok()) return next.status();
  std::vector<Entry> entries;
  {
    absl::MutexLock lock(&next->state_->mu);
    entries.swap(next->state_->entries);
  }
  absl::MutexLock lock(&state_->mu);
  state_->entries.swap(entries);
  return state_->entries.size();
}

}  // namespace latentd::service
