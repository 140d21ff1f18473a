// API authentication: bearer tokens with roles, read from the daemon's
// tokens file (setting api-tokens), checked by both front ends (the HTTP
// gateway's "Authorization: Bearer TOKEN" header, the framed TCP API's
// AuthenticatedCall envelope; docs/api.md "Authentication").
//
// Tokens file: one "ROLE TOKEN" per line, ROLE one of read, write, admin;
// '#' starts a comment; blank lines are skipped. A token has at least
// kMinTokenChars characters and no white space; one token appears once.
//
// Roles nest: read may call the queries (ListTopics, GetTopic, WordTopics,
// InferDocument, GetUserProfile, Status, ExportModel, GetEmbedding,
// ScorePairs, NearestVertices, SimilarDocuments, SimilarUsers); write also
// Ingest and IngestEdges; admin every call (Checkpoint).
//
// Thread-safety: every method is safe from any number of threads; Reload
// swaps the whole set at once (a call checks against the old set or the
// new one, never a mix).
#ifndef LATENTD_SERVICE_API_AUTH_H_
#define LATENTD_SERVICE_API_AUTH_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "service/api_dispatch.h"

namespace latentd::service {

enum class Role { kRead = 1, kWrite = 2, kAdmin = 3 };

inline constexpr size_t kMinTokenChars = 16;

// "read" | "write" | "admin".
std::string_view RoleName(Role role);
// The least role that may call `method`.
Role RequiredRole(Method method);

class ApiTokens {
 public:
  // Reads and checks a tokens file. kInvalidArgument naming "FILE:LINE" for
  // an unknown role, a malformed line, a token shorter than kMinTokenChars
  // or one given twice, and for a file without any token; kNotFound if it
  // cannot be read.
  static absl::StatusOr<ApiTokens> Load(const std::string& path);
  // The same for `text`, named `source` in errors (tests).
  static absl::StatusOr<ApiTokens> Parse(std::string_view text,
                                         const std::string& source);

  // The role of `token`, nullopt if it is not known. Compares with every
  // token in constant time (for tokens of one length), so the time taken
  // tells nothing about which bytes matched.
  std::optional<Role> Find(std::string_view token) const;

  // OK if `token` may call `method`. kUnauthenticated when the token is
  // empty (missing) or unknown; kPermissionDenied, naming the token's role
  // and the one needed, when its role is too low.
  absl::Status Authorize(std::string_view token, Method method) const;
  // Authorize, returning the token's role when it may call `method` (the
  // dispatcher gates the cluster-internal fields of a call on it).
  absl::StatusOr<Role> Caller(std::string_view token, Method method) const;

  // The first admin token in the file, "" if none: what the daemon sends
  // its cluster peers when it forwards a user's events or profile query.
  std::string PeerToken() const;

  // Reads `path` again (as Load) and, if it is good, replaces every token
  // with its tokens; returns how many. On an error (as Load's) the tokens
  // stay as they were. (The daemon's SIGHUP.)
  absl::StatusOr<size_t> Reload(const std::string& path);

 private:
  struct Entry {
    Role role;
    std::string token;
  };
  // Behind a pointer so that an ApiTokens can move (StatusOr) with its
  // mutex.
  struct State {
    mutable absl::Mutex mu;
    std::vector<Entry> entries ABSL_GUARDED_BY(mu);
  };
  ApiTokens() : state_(std::make_unique<State>()) {}
  std::unique_ptr<State> state_;
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_API_AUTH_H_
