#include "sampler/fold_in.h"

#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "corpora/random.h"
#include "corpora/status_macros.h"

namespace latentd {

FoldIn::FoldIn(const TopicTable& table, std::vector<double> alpha, double beta)
    : table_(table),
      alpha_(std::move(alpha)),
      beta_(beta),
      inv_denom_(table.num_topics()),
      smoothing_(table.num_topics()),
      n_dk_(table.num_topics()),
      weights_(table.num_topics()) {
  const double beta_sum = beta_ * static_cast<double>(table.vocab_size());
  for (TopicId k = 0; k < table.num_topics(); ++k) {
    inv_denom_[k] = 1.0 / (static_cast<double>(table.TopicTotal(k)) + beta_sum);
    smoothing_[k] = beta_ * inv_denom_[k];
    alpha_sum_ += alpha_[k];
  }
}

double FoldIn::Phi(WordId word, TopicId topic) const {
  return (table_.Get(word, topic) + beta_) * inv_denom_[topic];
}

double FoldIn::WordProbability(WordId word,
                               std::span<const double> theta) const {
  double p = 0;
  for (TopicId k = 0; k < table_.num_topics(); ++k) {
    p += theta[k] * smoothing_[k];
  }
  table_.ForEachNonZero(
      word, [&](TopicId k, Count c) { p += theta[k] * c * inv_denom_[k]; });
  return p;
}

absl::StatusOr<std::vector<double>> FoldIn::Infer(std::span<const WordId> words,
                                                  const InferOptions& options,
                                                  uint64_t stream) {
  const TopicId K = table_.num_topics();
  if (words.empty()) {
    return absl::InvalidArgumentError("document has no known words");
  }
  // Each distinct word's row, read once: n_wk/(n_k+Vβ) for non-zero n_wk.
  absl::flat_hash_map<WordId, uint32_t> slot_of;
  std::vector<uint32_t> slots(words.size());
  row_begin_.clear();
  row_entries_.clear();
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i] >= table_.vocab_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("word id ", words[i], " is outside the model (",
                       table_.vocab_size(), " words)"));
    }
    auto [it, added] =
        slot_of.try_emplace(words[i], static_cast<uint32_t>(row_begin_.size()));
    if (added) {
      row_begin_.push_back(static_cast<uint32_t>(row_entries_.size()));
      table_.ForEachNonZero(words[i], [&](TopicId k, Count c) {
        row_entries_.emplace_back(k, c * inv_denom_[k]);
      });
    }
    slots[i] = it->second;
  }
  row_begin_.push_back(static_cast<uint32_t>(row_entries_.size()));

  Rng rng = Rng::ForStream(options.seed, stream, 0x666f6c64);  // "fold"
  std::vector<TopicId> z(words.size());
  std::fill(n_dk_.begin(), n_dk_.end(), 0);
  for (size_t i = 0; i < words.size(); ++i) {
    z[i] = static_cast<TopicId>(rng.UniformInt(K));
    ++n_dk_[z[i]];
  }
  std::vector<double> theta(K, 0.0);
  int kept = 0;
  const double norm = static_cast<double>(words.size()) + alpha_sum_;
  for (int it = 0; it < options.iterations; ++it) {
    for (size_t i = 0; i < words.size(); ++i) {
      --n_dk_[z[i]];
      double total = 0;
      for (TopicId k = 0; k < K; ++k) {
        weights_[k] = (n_dk_[k] + alpha_[k]) * smoothing_[k];
      }
      for (uint32_t j = row_begin_[slots[i]]; j < row_begin_[slots[i] + 1];
           ++j) {
        const auto& [k, phi] = row_entries_[j];
        weights_[k] += (n_dk_[k] + alpha_[k]) * phi;
      }
      for (TopicId k = 0; k < K; ++k) total += weights_[k];
      double u = rng.Uniform() * total;
      TopicId pick = K - 1;
      for (TopicId k = 0; k < K; ++k) {
        u -= weights_[k];
        if (u <= 0) {
          pick = k;
          break;
        }
      }
      z[i] = pick;
      ++n_dk_[pick];
    }
    if (it >= options.burn_in || it == options.iterations - 1) {
      for (TopicId k = 0; k < K; ++k) {
        theta[k] += (n_dk_[k] + alpha_[k]) / norm;
      }
      ++kept;
    }
  }
  for (double& t : theta) t /= kept;
  return theta;
}

absl::StatusOr<PerplexityResult> DocumentCompletionPerplexity(
    FoldIn* fold_in, TokenStore* store, const InferOptions& options) {
  PerplexityResult result;
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<BatchReader> reader, store->Read());
  DocBatch batch;
  while (true) {
    LATENTD_ASSIGN_OR_RETURN(bool more, reader->Next(&batch));
    if (!more) break;
    for (size_t d = 0; d < batch.num_docs(); ++d) {
      std::span<const WordId> words = batch.doc_words(d);
      if (words.size() < 2) continue;
      const size_t half = words.size() / 2;
      LATENTD_ASSIGN_OR_RETURN(
          std::vector<double> theta,
          fold_in->Infer(words.first(half), options, batch.first_doc + d));
      for (WordId w : words.subspan(half)) {
        result.log_likelihood += std::log(fold_in->WordProbability(w, theta));
      }
      result.scored_tokens += words.size() - half;
      ++result.documents;
    }
  }
  if (result.scored_tokens == 0) {
    return absl::InvalidArgumentError(
        "held-out set has no document of two or more tokens to score");
  }
  result.perplexity = std::exp(-result.log_likelihood /
                               static_cast<double>(result.scored_tokens));
  return result;
}

}  // namespace latentd
