// latentctl graph score / neighbors / embedding / ingest against a running
// latentd that serves a graph (cli/graph_commands.h).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cli/graph_commands.h"
#include "service/api_client.h"

namespace latentd {
namespace {

using service::ApiClient;
using service::Method;

// Pairs and edges per call: well inside the daemon's limits (100000) and
// its default frame size.
constexpr size_t kBatch = 10000;

}  // namespace

absl::Status RunRemoteGraphScore(const DaemonAddress& address, FILE* in,
                                 FILE* out, FILE* err) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<ApiClient> api,
                           ConnectDaemon(address));
  const std::vector<ScoreLine> lines = ReadScoreLines(in);
  std::vector<absl::StatusOr<double>> scores(lines.size(), 0.0);
  std::vector<size_t> batch;  // indices into lines
  auto flush = [&]() -> absl::Status {
    if (batch.empty()) return absl::OkStatus();
    api::ScorePairsRequest q;
    q.set_skip_unknown(true);  // an unknown vertex fails its line only
    for (size_t i : batch) {
      api::VertexPair* p = q.add_pairs();
      p->set_a(lines[i].a);
      p->set_b(lines[i].b);
    }
    api::ScorePairsResponse r;
    LATENTD_RETURN_IF_ERROR(api->Call(Method::kScorePairs, q, &r));
    if (r.scores_size() != static_cast<int>(batch.size())) {
      return absl::InternalError(absl::StrCat("the daemon answered ",
                                              r.scores_size(), " scores for ",
                                              batch.size(), " pairs"));
    }
    for (size_t j = 0; j < batch.size(); ++j) {
      const api::PairScore& s = r.scores(static_cast<int>(j));
      // The daemon's error names the pair's index in its call: name the
      // vertex only, the line number is printed with it.
      if (s.error().empty()) {
        scores[batch[j]] = s.score();
      } else {
        const std::string& e = s.error();
        const size_t colon = e.find(": ");
        scores[batch[j]] = absl::NotFoundError(
            colon == std::string::npos ? e : e.substr(colon + 2));
      }
    }
    batch.clear();
    return absl::OkStatus();
  };
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!lines[i].parsed.ok()) {
      scores[i] = lines[i].parsed;
      continue;
    }
    batch.push_back(i);
    if (batch.size() == kBatch) LATENTD_RETURN_IF_ERROR(flush());
  }
  LATENTD_RETURN_IF_ERROR(flush());
  return PrintScores(lines, scores, out, err);
}

absl::Status RunRemoteGraphNeighbors(const DaemonAddress& address,
                                     uint64_t vertex, size_t top, FILE* out) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<ApiClient> api,
                           ConnectDaemon(address));
  if (top == 0 || top > UINT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("--top ", top, " is not in 1..", UINT32_MAX));
  }
  api::NearestVerticesRequest q;
  q.set_vertex(vertex);
  q.set_top(static_cast<uint32_t>(top));
  api::NearestVerticesResponse r;
  LATENTD_RETURN_IF_ERROR(api->Call(Method::kNearestVertices, q, &r));
  for (const api::VertexScore& n : r.neighbors()) {
    std::fprintf(out, "%llu\t%.6g\n",
                 static_cast<unsigned long long>(n.vertex()), n.score());
  }
  return absl::OkStatus();
}

absl::Status RunRemoteGraphEmbedding(const DaemonAddress& address,
                                     uint64_t vertex, FILE* out) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<ApiClient> api,
                           ConnectDaemon(address));
  api::GetEmbeddingRequest q;
  q.set_vertex(vertex);
  api::GetEmbeddingResponse r;
  LATENTD_RETURN_IF_ERROR(api->Call(Method::kGetEmbedding, q, &r));
  PrintVector(std::span<const float>(r.vector().data(), r.vector_size()), out);
  return absl::OkStatus();
}

absl::Status RunRemoteGraphIngest(const DaemonAddress& address, FILE* in,
                                  FILE* out) {
  std::string text;
  char buf[1 << 16];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, in)) > 0;) {
    text.append(buf, n);
  }
  LATENTD_ASSIGN_OR_RETURN(EdgeList list, ParseEdgeList(text, "stdin"));
  if (list.edges.empty()) {
    return absl::InvalidArgumentError("stdin holds no edge to ingest");
  }
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<ApiClient> api,
                           ConnectDaemon(address));
  uint64_t accepted = 0, duplicates = list.stats.duplicates;
  for (size_t first = 0; first < list.edges.size(); first += kBatch) {
    api::IngestEdgesRequest q;
    const size_t last = std::min(list.edges.size(), first + kBatch);
    for (size_t i = first; i < last; ++i) {
      api::GraphEdge* e = q.add_edges();
      e->set_src(list.edges[i].src);
      e->set_dst(list.edges[i].dst);
      e->set_weight(list.edges[i].weight);
    }
    api::IngestEdgesResponse r;
    absl::Status s = api->Call(Method::kIngestEdges, q, &r);
    if (!s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat(s.message(), " (edges before stdin's edge ",
                                 first + 1, " were accepted: ", accepted, ")"));
    }
    accepted += r.accepted();
    duplicates += r.duplicates();
  }
  std::fprintf(out, "accepted %llu edges, %llu duplicates\n",
               static_cast<unsigned long long>(accepted),
               static_cast<unsigned long long>(duplicates));
  return absl::OkStatus();
}

}  // namespace latentd
