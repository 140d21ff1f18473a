// ApiTokens (service/api_auth.h): the tokens file's checks, each naming
// file:line, and which role may make which call.
#include "service/api_auth.h"

#include <string>

#include "gtest/gtest.h"

namespace latentd::service {
namespace {

constexpr char kRead[] = "read-token-0123456789";
constexpr char kWrite[] = "write-token-0123456789";
constexpr char kAdmin[] = "admin-token-0123456789";

ApiTokens Tokens() {
  absl::StatusOr<ApiTokens> t = ApiTokens::Parse(
      "# the cluster's tokens\n"
      "read  read-token-0123456789\n"
      "\n"
      "write\twrite-token-0123456789   # the ingesters\n"
      "admin admin-token-0123456789\n",
      "tokens");
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

TEST(ApiTokens, ParsesRolesCommentsAndBlankLines) {
  const ApiTokens t = Tokens();
  EXPECT_EQ(t.Find(kRead), Role::kRead);
  EXPECT_EQ(t.Find(kWrite), Role::kWrite);
  EXPECT_EQ(t.Find(kAdmin), Role::kAdmin);
  EXPECT_EQ(t.Find("read-token-012345678"), std::nullopt);  // a prefix
  EXPECT_EQ(t.Find(""), std::nullopt);
  EXPECT_EQ(t.PeerToken(), kAdmin);
}

TEST(ApiTokens, BadFileNamesFileAndLine) {
  struct Case {
    const char* text;
    const char* want;
  };
  const Case cases[] = {
      {"read read-token-0123456789\nowner owner-token-0123456789\n",
       "tokens:2: unknown role 'owner'"},
      {"# c\nwrite short\n", "tokens:2: token shorter than 16"},
      {"read read-token-0123456789\nadmin read-token-0123456789\n",
       "tokens:2: token given twice"},
      {"read\n", "tokens:1: want \"ROLE TOKEN\""},
      {"read a-token-0123456789 extra\n", "tokens:1: want \"ROLE TOKEN\""},
      {"# nothing\n", "tokens: no token"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ApiTokens> t = ApiTokens::Parse(c.text, "tokens");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find(c.want), std::string::npos)
        << t.status();
  }
  EXPECT_EQ(ApiTokens::Load("/nonexistent/tokens").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ApiTokens, EachRoleMakesExactlyItsCalls) {
  const ApiTokens t = Tokens();
  for (uint32_t i = 1; i <= kNumMethods; ++i) {
    const Method m = *MethodFromType(i);
    const Role need = RequiredRole(m);
    EXPECT_TRUE(t.Authorize(kAdmin, m).ok()) << MethodName(m);
    EXPECT_EQ(t.Authorize(kWrite, m).ok(), need != Role::kAdmin)
        << MethodName(m);
    EXPECT_EQ(t.Authorize(kRead, m).ok(), need == Role::kRead) << MethodName(m);
  }
  EXPECT_EQ(RequiredRole(Method::kIngest), Role::kWrite);
  EXPECT_EQ(RequiredRole(Method::kCheckpoint), Role::kAdmin);
  EXPECT_EQ(RequiredRole(Method::kExportModel), Role::kRead);
  for (Method m : {Method::kGetEmbedding, Method::kScorePairs,
                   Method::kNearestVertices, Method::kSimilarDocuments,
                   Method::kSimilarUsers, Method::kGetDocumentTopics,
                   Method::kTopicDocuments, Method::kClusterMembers}) {
    EXPECT_EQ(RequiredRole(m), Role::kRead) << MethodName(m);
  }
  EXPECT_EQ(RequiredRole(Method::kIngestEdges), Role::kWrite);
  const absl::Status denied = t.Authorize(kRead, Method::kIngest);
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(denied.message().find("role (read) cannot call Ingest"),
            std::string::npos)
      << denied;
  EXPECT_EQ(t.Authorize("", Method::kStatus).code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(t.Authorize("no-such-token-0123456789", Method::kStatus).code(),
            absl::StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace latentd::service
