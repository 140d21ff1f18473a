// Edge lists for graph factorization: SNAP-style text, one edge per line.
//
//   # comment lines start with '#' (also after leading blanks)
//   FromId  ToId  [weight]
//
// Fields are separated by any ASCII whitespace (tabs or spaces, CRLF line
// ends accepted). Ids are unsigned decimal 64-bit values (0 .. 2^64-1; no
// sign, no hex); the optional weight is a finite decimal number > 0
// (default 1). A file named *.zst or *.gz is decompressed on the fly
// (corpora/input_file.h). Blank lines are skipped.
//
// The graph is undirected unless told otherwise: {u, v} and {v, u} are one
// edge, stored with src <= dst. Self-loops (u u) and repeated edges (the
// same pair again, in either direction when undirected) are dropped and
// counted; a repeat keeps the first line's weight.
//
// Errors: a line that is not `id id [weight]` is kInvalidArgument "PATH:LINE:
// what" (or, with skip_malformed, counted in stats and its first messages
// kept); a missing, unreadable or damaged file is the file's error (see
// InputFile). An edge list with no edge left is not an error here: callers
// that need edges say so (GraphData does).
//
// Thread-safety: plain functions and values.
#ifndef LATENTD_CORPORA_EDGE_LIST_H_
#define LATENTD_CORPORA_EDGE_LIST_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace latentd {

// A vertex id as written in the file: any 64-bit value.
using VertexKey = uint64_t;

struct Edge {
  VertexKey src = 0;
  VertexKey dst = 0;
  float weight = 1.0f;
  friend bool operator==(const Edge&, const Edge&) = default;
};

struct EdgeListOptions {
  // Undirected: {u,v} = {v,u}, stored with src <= dst. Directed keeps the
  // order of the file and (u,v), (v,u) are two edges.
  bool undirected = true;
  // Skip (and count) malformed lines instead of failing on the first.
  bool skip_malformed = false;
};

struct EdgeListStats {
  static constexpr size_t kMaxMessages = 20;
  uint64_t lines = 0;          // every line read, comments and blanks too
  uint64_t comment_lines = 0;  // '#' lines
  uint64_t edges = 0;          // edges kept
  uint64_t self_loops = 0;     // dropped
  uint64_t duplicates = 0;     // dropped (a pair seen before)
  uint64_t malformed = 0;      // skipped (skip_malformed only)
  bool weighted = false;       // some line had a weight column
  // "PATH:LINE: what" for the first kMaxMessages malformed lines.
  std::vector<std::string> messages;
  // "28980 edge lines: 14484 edges kept, 12 self-loops and 14484
  // duplicates dropped, 0 malformed".
  std::string Summary() const;
};

struct EdgeList {
  std::vector<Edge> edges;  // in file order (first occurrence)
  EdgeListStats stats;
};

// Parses one non-comment, non-blank line. kInvalidArgument saying what is
// wrong (without the file and line, which the caller adds).
absl::Status ParseEdgeLine(std::string_view line, Edge* edge, bool* weighted);

// Reads the whole edge list at `path` (see the file comment).
absl::StatusOr<EdgeList> ReadEdgeList(const std::string& path,
                                      const EdgeListOptions& options = {});

// Parses edge-list text already in memory (`name` stands for the file in
// messages), with the same rules as ReadEdgeList: for ingestion and tests.
absl::StatusOr<EdgeList> ParseEdgeList(std::string_view text,
                                       std::string_view name,
                                       const EdgeListOptions& options = {});

}  // namespace latentd

#endif  // LATENTD_CORPORA_EDGE_LIST_H_
