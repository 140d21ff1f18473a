#include "corpora/synthetic_corpus.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "absl/strings/str_cat.h"
#include "base/random.h"
#include "base/status_macros.h"

namespace latentd {
namespace {

// Stream ids of the generator's Rngs.
constexpr uint64_t kPhiStream = 1;
constexpr uint64_t kDocStream = 2;

// Index drawn from the cumulative distribution `cdf` (last entry ~1).
uint32_t SampleCdf(Rng& rng, std::span<const double> cdf) {
  double u = rng.Uniform() * cdf.back();
  auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
  if (it == cdf.end()) --it;
  return static_cast<uint32_t>(it - cdf.begin());
}

void Cumulate(std::span<const double> p, std::span<double> cdf) {
  double sum = 0;
  for (size_t i = 0; i < p.size(); ++i) cdf[i] = sum += p[i];
}

absl::Status Validate(const SyntheticCorpusOptions& o) {
  auto bad = [](std::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("synthetic corpus: ", std::string(what)));
  };
  if (o.num_topics == 0 || o.num_topics > kMaxTopics) {
    return bad("num_topics not in [1, kMaxTopics]");
  }
  if (o.vocab_size == 0) return bad("vocab_size must be > 0");
  if (uint64_t{o.num_topics} * o.vocab_size > (uint64_t{1} << 26)) {
    return bad("num_topics * vocab_size over 2^26");
  }
  if (!(o.mean_doc_length > 0) || !(o.alpha > 0) || !(o.beta > 0)) {
    return bad("mean_doc_length, alpha and beta must be > 0");
  }
  if (static_cast<double>(o.num_docs) * o.mean_doc_length >
      static_cast<double>(uint64_t{1} << 31)) {
    return bad("num_docs * mean_doc_length over 2^31");
  }
  return absl::OkStatus();
}

}  // namespace

void SampleDirichlet(Rng& rng, double concentration, std::span<double> out) {
  double max_log = -INFINITY;
  for (double& x : out) {
    x = rng.LogGamma(concentration);
    max_log = std::max(max_log, x);
  }
  double sum = 0;
  for (double& x : out) {
    x = std::exp(x - max_log);
    sum += x;
  }
  for (double& x : out) x /= sum;
}

std::string SyntheticCorpus::WordName(WordId w) { return absl::StrCat("w", w); }

std::vector<std::vector<std::string>> SyntheticCorpus::WordDocuments() const {
  std::vector<std::vector<std::string>> out(docs.size());
  for (size_t d = 0; d < docs.size(); ++d) {
    out[d].reserve(docs[d].size());
    for (WordId w : docs[d]) out[d].push_back(WordName(w));
  }
  return out;
}

uint64_t SyntheticCorpus::num_tokens() const {
  uint64_t n = 0;
  for (const auto& doc : docs) n += doc.size();
  return n;
}

absl::StatusOr<SyntheticCorpus> GenerateSyntheticCorpus(
    const SyntheticCorpusOptions& o) {
  LATENTD_RETURN_IF_ERROR(Validate(o));
  const size_t k_count = o.num_topics, v_count = o.vocab_size;
  SyntheticCorpus c;
  c.num_topics = o.num_topics;
  c.vocab_size = o.vocab_size;
  c.phi.resize(k_count * v_count);
  std::vector<double> phi_cdf(k_count * v_count);
  for (size_t k = 0; k < k_count; ++k) {
    Rng rng = Rng::ForStream(o.seed, kPhiStream, k);
    std::span<double> row(c.phi.data() + k * v_count, v_count);
    SampleDirichlet(rng, o.beta, row);
    Cumulate(row, std::span<double>(phi_cdf.data() + k * v_count, v_count));
  }
  c.theta.resize(o.num_docs * k_count);
  c.docs.resize(o.num_docs);
  c.topics.resize(o.num_docs);
  std::vector<double> theta_cdf(k_count);
  for (uint64_t d = 0; d < o.num_docs; ++d) {
    Rng rng = Rng::ForStream(o.seed, kDocStream, d);
    std::span<double> theta(c.theta.data() + d * k_count, k_count);
    SampleDirichlet(rng, o.alpha, theta);
    Cumulate(theta, theta_cdf);
    uint64_t length =
        o.poisson_length
            ? rng.Poisson(o.mean_doc_length)
            : static_cast<uint64_t>(std::llround(o.mean_doc_length));
    length = std::max<uint64_t>(length, 1);
    c.docs[d].resize(length);
    c.topics[d].resize(length);
    for (uint64_t i = 0; i < length; ++i) {
      uint32_t z = SampleCdf(rng, theta_cdf);
      c.topics[d][i] = z;
      c.docs[d][i] = SampleCdf(
          rng, std::span<const double>(phi_cdf.data() + z * v_count, v_count));
    }
  }
  return c;
}

}  // namespace latentd
