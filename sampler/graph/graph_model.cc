#include "sampler/graph/graph_model.h"

#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "corpora/input_file.h"
#include "sampler/graph/signature.h"

namespace latentd {
namespace {

constexpr char kMagic[8] = {'L', 'T', 'D', 'G', 'R', 'A', 'P', 'H'};
constexpr uint32_t kVersionPlain = 1;           // no signature field
constexpr uint32_t kVersionSigned = 2;          // + u32 negative_dims
constexpr uint64_t kChecksumSeed = 0x67726170;  // "grap"
constexpr uint32_t kMaxDim = 4096;

template <typename T>
void Put(std::string* out, T value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(T));
}

template <typename T>
bool Get(std::string_view data, size_t* pos, T* value) {
  if (data.size() - *pos < sizeof(T)) return false;
  std::memcpy(value, data.data() + *pos, sizeof(T));
  *pos += sizeof(T);
  return true;
}

}  // namespace

GraphModel::GraphModel(Header header, std::vector<VertexKey> keys,
                       std::vector<float> vectors)
    : header_(header), keys_(std::move(keys)), vectors_(std::move(vectors)) {
  index_.reserve(keys_.size());
  for (size_t i = 0; i < keys_.size(); ++i) {
    index_.emplace(keys_[i], static_cast<uint32_t>(i));
  }
}

std::string GraphModel::Serialize() const {
  std::string out;
  out.reserve(64 + keys_.size() * 8 + vectors_.size() * 4);
  out.append(kMagic, sizeof(kMagic));
  const bool signed_form = header_.negative_dims != 0;
  Put(&out, signed_form ? kVersionSigned : kVersionPlain);
  Put(&out, header_.dim);
  Put(&out, static_cast<uint64_t>(keys_.size()));
  Put(&out, header_.epoch);
  Put(&out, header_.seed);
  Put(&out, header_.negatives);
  Put(&out, header_.lambda);
  if (signed_form) Put(&out, header_.negative_dims);
  out.append(reinterpret_cast<const char*>(keys_.data()),
             keys_.size() * sizeof(VertexKey));
  out.append(reinterpret_cast<const char*>(vectors_.data()),
             vectors_.size() * sizeof(float));
  Put(&out,
      static_cast<uint64_t>(XXH64(out.data(), out.size(), kChecksumSeed)));
  return out;
}

absl::Status GraphModel::Save(const std::string& path) const {
  return WriteFileAtomically(path, Serialize());
}

absl::StatusOr<GraphModel> GraphModel::Load(const std::string& path) {
  absl::StatusOr<std::string> read = ReadWholeFile(path);
  if (!read.ok()) return read.status();
  const std::string& data = *read;
  auto bad = [&path](auto&&... what) {
    return absl::DataLossError(absl::StrCat(path, ": ", what...));
  };
  if (data.size() < sizeof(kMagic) ||
      std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is not a latentd graph model (bad magic)"));
  }
  if (data.size() < sizeof(kMagic) + 8) return bad("truncated header");
  uint64_t stored = 0;
  std::memcpy(&stored, data.data() + data.size() - 8, 8);
  if (XXH64(data.data(), data.size() - 8, kChecksumSeed) != stored) {
    return bad("checksum mismatch over its ", data.size(),
               " bytes (truncated or corrupt file)");
  }
  std::string_view body(data.data(), data.size() - 8);
  size_t pos = sizeof(kMagic);
  uint32_t version = 0;
  Header h;
  uint64_t n = 0;
  if (!Get(body, &pos, &version) || !Get(body, &pos, &h.dim) ||
      !Get(body, &pos, &n) || !Get(body, &pos, &h.epoch) ||
      !Get(body, &pos, &h.seed) || !Get(body, &pos, &h.negatives) ||
      !Get(body, &pos, &h.lambda)) {
    return bad("truncated header");
  }
  if (version != kVersionPlain && version != kVersionSigned) {
    return bad("format version ", version, " (this build reads ", kVersionPlain,
               " and ", kVersionSigned, ")");
  }
  if (version == kVersionSigned && !Get(body, &pos, &h.negative_dims)) {
    return bad("truncated header");
  }
  if (h.dim == 0 || h.dim > kMaxDim) return bad("dim ", h.dim, " out of range");
  if (h.negative_dims >= h.dim) {
    return bad("negative dims ", h.negative_dims, " not below dim ", h.dim);
  }
  const size_t left = body.size() - pos;
  if (n > left / 8 || (left - n * 8) != n * h.dim * sizeof(float)) {
    return bad(n, " vertices of dim ", h.dim, " do not fit the ", left,
               " bytes after the header");
  }
  std::vector<VertexKey> keys(n);
  std::memcpy(keys.data(), body.data() + pos, n * 8);
  pos += n * 8;
  std::vector<float> vectors(n * h.dim);
  std::memcpy(vectors.data(), body.data() + pos,
              vectors.size() * sizeof(float));
  for (float v : vectors) {
    if (!std::isfinite(v)) return bad("a vector value is not finite");
  }
  GraphModel model(h, std::move(keys), std::move(vectors));
  if (model.index_.size() != model.keys_.size())
    return bad("a vertex key is repeated");
  return model;
}

std::optional<uint32_t> GraphModel::Find(VertexKey key) const {
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<double> GraphModel::Score(VertexKey a, VertexKey b) const {
  std::optional<uint32_t> ia = Find(a), ib = Find(b);
  if (!ia) return absl::NotFoundError(absl::StrCat("unknown vertex ", a));
  if (!ib) return absl::NotFoundError(absl::StrCat("unknown vertex ", b));
  const uint32_t d = header_.dim;
  return SignedDot(&vectors_[size_t{*ia} * d], &vectors_[size_t{*ib} * d], d,
                   header_.negative_dims);
}

absl::StatusOr<std::vector<std::pair<VertexKey, double>>> GraphModel::Nearest(
    VertexKey v, size_t top) const {
  std::optional<uint32_t> iv = Find(v);
  if (!iv) return absl::NotFoundError(absl::StrCat("unknown vertex ", v));
  const uint32_t d = header_.dim;
  std::vector<std::pair<VertexKey, double>> all;
  all.reserve(keys_.size());
  for (size_t u = 0; u < keys_.size(); ++u) {
    if (u == *iv) continue;
    all.push_back(
        {keys_[u], SignedDot(&vectors_[size_t{*iv} * d], &vectors_[u * d], d,
                             /*negative_dims=*/0)});
  }
  auto better = [](const auto& x, const auto& y) {
    return x.second != y.second ? x.second > y.second : x.first < y.first;
  };
  top = std::min(top, all.size());
  std::partial_sort(all.begin(), all.begin() + top, all.end(), better);
  all.resize(top);
  return all;
}

absl::Status SaveGraphCheckpoint(const GraphModel& model,
                                 const std::string& dir) {
  const std::string path = GraphModelPath(dir);
  if (PathExists(path) && GraphModel::Load(path).ok()) {
    LATENTD_RETURN_IF_ERROR(RenameDurably(path, GraphPrevModelPath(dir)));
  }
  return model.Save(path);
}

absl::StatusOr<GraphModel> LoadNewestGraphModel(
    const std::string& dir, std::vector<std::string>* refused) {
  absl::Status last = absl::NotFoundError(
      absl::StrCat(dir, " holds no graph model (graph.bin)"));
  for (const std::string& path :
       {GraphModelPath(dir), GraphPrevModelPath(dir)}) {
    if (!PathExists(path)) continue;
    absl::StatusOr<GraphModel> m = GraphModel::Load(path);
    if (m.ok()) return m;
    if (refused != nullptr) {
      refused->push_back(
          absl::StrCat(path, " refused: ", m.status().message()));
    }
    last = m.status();
  }
  return last;
}

}  // namespace latentd
