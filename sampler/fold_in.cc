#include "sampler/fold_in.h"

#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/random.h"
#include "base/status_macros.h"

namespace latentd {

FoldIn::FoldIn(const TopicTable& table, std::vector<double> alpha, double beta)
    : table_(table),
      alpha_(std::move(alpha)),
      beta_(beta),
      inv_denom_(table.num_topics()),
      smoothing_(table.num_topics()),
      smoothing_cum_(table.num_topics()),
      n_dk_(table.num_topics()),
      doc_pos_(table.num_topics()),
      q_mass_(table.num_topics()) {
  const double beta_sum = beta_ * static_cast<double>(table.vocab_size());
  for (TopicId k = 0; k < table.num_topics(); ++k) {
    inv_denom_[k] = 1.0 / (static_cast<double>(table.TopicTotal(k)) + beta_sum);
    smoothing_[k] = beta_ * inv_denom_[k];
    alpha_sum_ += alpha_[k];
    smoothing_total_ += alpha_[k] * smoothing_[k];
    smoothing_cum_[k] = smoothing_total_;
  }
}

void FoldIn::AddDocTopic(TopicId k) {
  doc_pos_[k] = static_cast<uint32_t>(doc_topics_.size());
  doc_topics_.push_back(k);
}

void FoldIn::RemoveDocTopic(TopicId k) {
  const TopicId last = doc_topics_.back();
  doc_topics_[doc_pos_[k]] = last;
  doc_pos_[last] = doc_pos_[k];
  doc_topics_.pop_back();
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
  std::vector<TopicId> z;
  std::vector<double> theta;
  LATENTD_RETURN_IF_ERROR(Run(words, options, stream,
                              /*allow_unseen=*/false, &z, &theta));
  return theta;
}

absl::StatusOr<std::vector<TopicId>> FoldIn::Assign(
    std::span<const WordId> words, const InferOptions& options,
    uint64_t stream) {
  std::vector<TopicId> z;
  LATENTD_RETURN_IF_ERROR(Run(words, options, stream, /*allow_unseen=*/true, &z,
                              /*theta=*/nullptr));
  return z;
}

absl::Status FoldIn::Run(std::span<const WordId> words,
                         const InferOptions& options, uint64_t stream,
                         bool allow_unseen, std::vector<TopicId>* z_out,
                         std::vector<double>* theta_out) {
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
    if (words[i] >= table_.vocab_size() && !allow_unseen) {
      return absl::InvalidArgumentError(
          absl::StrCat("word id ", words[i], " is outside the model (",
                       table_.vocab_size(), " words)"));
    }
    auto [it, added] =
        slot_of.try_emplace(words[i], static_cast<uint32_t>(row_begin_.size()));
    if (added) {
      row_begin_.push_back(static_cast<uint32_t>(row_entries_.size()));
      if (words[i] < table_.vocab_size()) {  // else unseen: an empty row
        table_.ForEachNonZero(words[i], [&](TopicId k, Count c) {
          row_entries_.emplace_back(k, c * inv_denom_[k]);
        });
      }
    }
    slots[i] = it->second;
  }
  row_begin_.push_back(static_cast<uint32_t>(row_entries_.size()));

  Rng rng = Rng::ForStream(options.seed, stream, 0x666f6c64);  // "fold"
  std::vector<TopicId>& z = *z_out;
  z.assign(words.size(), 0);
  std::fill(n_dk_.begin(), n_dk_.end(), 0);
  doc_topics_.clear();
  for (size_t i = 0; i < words.size(); ++i) {
    z[i] = static_cast<TopicId>(rng.UniformInt(K));
    if (n_dk_[z[i]]++ == 0) AddDocTopic(z[i]);
  }
  // The SparseLDA split of p(z=k) ∝ (n_dk + α_k)(n_wk + β)/(n_k + Vβ) with
  // the model frozen: the smoothing bucket Σ α_k β/(n_k+Vβ) is a constant
  // (its running sum is built once, in the constructor), the document
  // bucket runs over the document's topics and the word bucket over the
  // word's row, so a token costs O(row + document topics), not O(K).
  double r = 0;
  for (TopicId k : doc_topics_) r += n_dk_[k] * smoothing_[k];
  std::vector<double> theta(theta_out != nullptr ? K : 0, 0.0);
  int kept = 0;
  const double norm = static_cast<double>(words.size()) + alpha_sum_;
  for (int it = 0; it < options.iterations; ++it) {
    for (size_t i = 0; i < words.size(); ++i) {
      const TopicId old_topic = z[i];
      r -= smoothing_[old_topic];
      if (--n_dk_[old_topic] == 0) RemoveDocTopic(old_topic);

      double q = 0;
      const uint32_t begin = row_begin_[slots[i]];
      const uint32_t end = row_begin_[slots[i] + 1];
      for (uint32_t j = begin; j < end; ++j) {
        const auto& [k, phi] = row_entries_[j];
        q += (n_dk_[k] + alpha_[k]) * phi;
        q_mass_[j - begin] = q;
      }
      double u = rng.Uniform() * (smoothing_total_ + r + q);
      TopicId pick;
      if (u < q) {
        const uint32_t j = static_cast<uint32_t>(
            std::upper_bound(q_mass_.begin(), q_mass_.begin() + (end - begin),
                             u) -
            q_mass_.begin());
        pick = row_entries_[begin + std::min(j, end - begin - 1)].first;
      } else if ((u -= q) < r && !doc_topics_.empty()) {
        pick = doc_topics_.back();
        for (TopicId k : doc_topics_) {
          u -= n_dk_[k] * smoothing_[k];
          if (u <= 0) {
            pick = k;
            break;
          }
        }
      } else {
        u = std::min(u - r, smoothing_total_);
        pick = static_cast<TopicId>(std::min<size_t>(
            std::upper_bound(smoothing_cum_.begin(), smoothing_cum_.end(), u) -
                smoothing_cum_.begin(),
            K - 1));
      }
      z[i] = pick;
      if (n_dk_[pick]++ == 0) AddDocTopic(pick);
      r += smoothing_[pick];
    }
    if (theta_out != nullptr &&
        (it >= options.burn_in || it == options.iterations - 1)) {
      for (TopicId k = 0; k < K; ++k) {
        theta[k] += (n_dk_[k] + alpha_[k]) / norm;
      }
      ++kept;
    }
  }
  for (double& t : theta) t /= kept;
  if (theta_out != nullptr) *theta_out = std::move(theta);
  return absl::OkStatus();
}

absl::Status AddDocumentCompletion(FoldIn* fold_in,
                                   std::span<const WordId> words,
                                   const InferOptions& options, uint64_t stream,
                                   PerplexityResult* result) {
  if (words.size() < 2) return absl::OkStatus();
  const size_t half = words.size() / 2;
  LATENTD_ASSIGN_OR_RETURN(std::vector<double> theta,
                           fold_in->Infer(words.first(half), options, stream));
  for (WordId w : words.subspan(half)) {
    result->log_likelihood += std::log(fold_in->WordProbability(w, theta));
  }
  result->scored_tokens += words.size() - half;
  ++result->documents;
  return absl::OkStatus();
}

absl::Status FinishPerplexity(PerplexityResult* result) {
  if (result->scored_tokens == 0) {
    return absl::InvalidArgumentError(
        "held-out set has no document of two or more tokens to score");
  }
  result->perplexity = std::exp(-result->log_likelihood_per_token());
  return absl::OkStatus();
}

absl::StatusOr<PerplexityResult> DocumentCompletionPerplexity(
    FoldIn* fold_in, TokenStore* store, const InferOptions& options) {
  PerplexityResult result;
  LATENTD_RETURN_IF_ERROR(
      ForEachDocument(store, [&](const DocBatch& batch, size_t d) {
        return AddDocumentCompletion(fold_in, batch.doc_words(d), options,
                                     batch.first_doc + d, &result);
      }));
  LATENTD_RETURN_IF_ERROR(FinishPerplexity(&result));
  return result;
}

}  // namespace latentd
