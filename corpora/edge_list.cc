#include "corpora/edge_list.h"

#include <cmath>
#include <limits>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/absl_compat.h"
#include "base/status_macros.h"
#include "corpora/input_file.h"
#include "corpora/internal/reader_base.h"

namespace latentd {
namespace {

using internal::ToAbsl;

// Folds lines into an EdgeList: comments, dedup, self-loops, accounting.
class EdgeCollector {
 public:
  EdgeCollector(std::string_view name, const EdgeListOptions& options)
      : name_(name), options_(options) {}

  absl::Status AddLine(std::string_view line, uint64_t line_number) {
    ++out_.stats.lines;
    size_t first = line.find_first_not_of(" \t\r\f\v");
    if (first == std::string_view::npos) return absl::OkStatus();
    if (line[first] == '#') {
      ++out_.stats.comment_lines;
      return absl::OkStatus();
    }
    Edge edge;
    absl::Status parsed = ParseEdgeLine(line, &edge, &out_.stats.weighted);
    if (!parsed.ok()) {
      std::string message =
          absl::StrCat(ToAbsl(name_), ":", line_number, ": ", parsed.message());
      if (!options_.skip_malformed) {
        return absl::InvalidArgumentError(message);
      }
      ++out_.stats.malformed;
      if (out_.stats.messages.size() < EdgeListStats::kMaxMessages) {
        out_.stats.messages.push_back(std::move(message));
      }
      return absl::OkStatus();
    }
    if (edge.src == edge.dst) {
      ++out_.stats.self_loops;
      return absl::OkStatus();
    }
    if (options_.undirected && edge.src > edge.dst) {
      std::swap(edge.src, edge.dst);
    }
    if (!seen_.insert({edge.src, edge.dst}).second) {
      ++out_.stats.duplicates;
      return absl::OkStatus();
    }
    out_.edges.push_back(edge);
    ++out_.stats.edges;
    return absl::OkStatus();
  }

  EdgeList Finish() { return std::move(out_); }

 private:
  std::string_view name_;
  EdgeListOptions options_;
  EdgeList out_;
  absl::flat_hash_set<std::pair<VertexKey, VertexKey>> seen_;
};

}  // namespace

std::string EdgeListStats::Summary() const {
  return absl::StrCat(edges + self_loops + duplicates + malformed,
                      " edge lines: ", edges, " edges kept, ", self_loops,
                      " self-loops and ", duplicates, " duplicates dropped, ",
                      malformed, " malformed");
}

absl::Status ParseEdgeLine(std::string_view line, Edge* edge, bool* weighted) {
  std::vector<std::string_view> fields;
  internal::SplitWhitespace(line, &fields);
  if (fields.size() < 2 || fields.size() > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected 'FromId ToId [weight]', got ", fields.size(),
                     " field", fields.size() == 1 ? "" : "s"));
  }
  uint64_t ids[2];
  for (int k = 0; k < 2; ++k) {
    if (!internal::ParseUint(fields[k], std::numeric_limits<uint64_t>::max(),
                             &ids[k])) {
      return absl::InvalidArgumentError(absl::StrCat(
          k == 0 ? "from" : "to", " id '", ToAbsl(fields[k].substr(0, 40)),
          "' is not an unsigned 64-bit decimal number"));
    }
  }
  edge->src = ids[0];
  edge->dst = ids[1];
  edge->weight = 1.0f;
  if (fields.size() == 3) {
    // Checked after the narrowing too: 1e-50 is > 0 as a double but 0 as
    // a float.
    double w = 0;
    if (!absl::SimpleAtod(ToAbsl(fields[2]), &w) || !std::isfinite(w) ||
        !(w > 0) || w > std::numeric_limits<float>::max() ||
        !(static_cast<float>(w) > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("weight '", ToAbsl(fields[2].substr(0, 40)),
                       "' is not a finite number > 0"));
    }
    edge->weight = static_cast<float>(w);
    *weighted = true;
  }
  return absl::OkStatus();
}

absl::StatusOr<EdgeList> ReadEdgeList(const std::string& path,
                                      const EdgeListOptions& options) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<InputFile> file,
                           InputFile::Open(path));
  EdgeCollector collector(path, options);
  std::string line;
  while (true) {
    LATENTD_ASSIGN_OR_RETURN(bool more, file->ReadLine(&line));
    if (!more) break;
    LATENTD_RETURN_IF_ERROR(collector.AddLine(line, file->line_number()));
  }
  return collector.Finish();
}

absl::StatusOr<EdgeList> ParseEdgeList(std::string_view text,
                                       std::string_view name,
                                       const EdgeListOptions& options) {
  EdgeCollector collector(name, options);
  uint64_t line_number = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text =
        nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    LATENTD_RETURN_IF_ERROR(collector.AddLine(line, ++line_number));
  }
  return collector.Finish();
}

}  // namespace latentd
