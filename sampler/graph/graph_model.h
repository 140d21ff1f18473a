// GraphModel: a trained graph factorization, the file `latentctl graph
// train` writes (DIR/graph.bin) and that `graph score`, `graph neighbors`
// and a resumed training read.
//
// File layout (little-endian): magic "LTDGRAPH", u32 format version, u32
// dim, u64 vertices n, u64 epoch, u64 seed, i32 negatives, f64 λ, in
// version 2 a u32 negative_dims (the signature, signature.h), n × u64
// vertex keys, n × dim f32 vectors, then the XXH64 of everything before
// it. A model without a signature is written as version 1, so that older
// builds still read it; version 1 reads as negative_dims 0. Save writes
// atomically (temp file, fsync, rename). Load checks the
// sizes before it allocates, and reports a truncated, corrupt or foreign
// file, a repeated vertex key or a non-finite value as an error naming the
// path.
//
// Thread-safety: a plain value; const methods may be called concurrently.
#ifndef LATENTD_SAMPLER_GRAPH_GRAPH_MODEL_H_
#define LATENTD_SAMPLER_GRAPH_GRAPH_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "corpora/edge_list.h"

namespace latentd {

class GraphModel {
 public:
  struct Header {
    uint32_t dim = 0;
    uint32_t negative_dims = 0;  // the signature; < dim
    uint64_t epoch = 0;
    uint64_t seed = 1;
    int32_t negatives = 0;
    double lambda = 0;
  };
  // REQUIRES: vectors.size() == keys.size() × header.dim, keys distinct,
  // header.negative_dims < header.dim.
  GraphModel(Header header, std::vector<VertexKey> keys,
             std::vector<float> vectors);

  std::string Serialize() const;
  absl::Status Save(const std::string& path) const;
  static absl::StatusOr<GraphModel> Load(const std::string& path);

  const Header& header() const { return header_; }
  uint32_t dim() const { return header_.dim; }
  uint32_t negative_dims() const { return header_.negative_dims; }
  size_t num_vertices() const { return keys_.size(); }
  const std::vector<VertexKey>& keys() const { return keys_; }
  const std::vector<float>& vectors() const { return vectors_; }
  // The dense index of a vertex key, if the model has it.
  std::optional<uint32_t> Find(VertexKey key) const;

  // ⟨z_a, z_b⟩_s, the inner product with the model's signature: the
  // predicted link score. kNotFound naming the key the model does not know.
  absl::StatusOr<double> Score(VertexKey a, VertexKey b) const;
  // The `top` vertices u != v most similar to v: the highest plain
  // (Euclidean) ⟨z_v, z_u⟩, whatever the signature, best first (ties by
  // key). With a signature this is not the link score: similar vertices
  // are those whose vectors, hence whose scores against every vertex, are
  // alike (two users of one community), not those likely to link (a user
  // and an item); without one the two agree. kNotFound if v is unknown.
  absl::StatusOr<std::vector<std::pair<VertexKey, double>>> Nearest(
      VertexKey v, size_t top) const;

 private:
  Header header_;
  std::vector<VertexKey> keys_;
  std::vector<float> vectors_;
  absl::flat_hash_map<VertexKey, uint32_t> index_;
};

// A graph model directory: DIR/graph.bin, the newest, and DIR/graph.prev.bin,
// the one before it.
inline std::string GraphModelPath(const std::string& dir) {
  return dir + "/graph.bin";
}
inline std::string GraphPrevModelPath(const std::string& dir) {
  return dir + "/graph.prev.bin";
}

// Writes `model` as DIR/graph.bin; the graph.bin it replaces becomes
// graph.prev.bin if it still loads (else graph.prev.bin is left as is).
// Either name always holds a complete model: a crash between the steps
// leaves graph.prev.bin only. Fails with the file system's error naming the
// path.
absl::Status SaveGraphCheckpoint(const GraphModel& model,
                                 const std::string& dir);

// Loads the newest of graph.bin and graph.prev.bin that loads; for each one
// passed over, a line "PATH refused: why" is appended to *refused (if
// given). kNotFound if neither exists, else the last error.
absl::StatusOr<GraphModel> LoadNewestGraphModel(
    const std::string& dir, std::vector<std::string>* refused = nullptr);

}  // namespace latentd

#endif  // LATENTD_SAMPLER_GRAPH_GRAPH_MODEL_H_
