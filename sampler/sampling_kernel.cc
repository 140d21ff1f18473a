#include "sampler/sampling_kernel.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sampler/internal/dense_row_masses.h"
#include "sampler/internal/mh_kernel.h"
#include "sampler/internal/progressive_start_kernel.h"
#include "sampler/internal/row_masses.h"
#include "sampler/internal/row_search.h"
#include "sampler/internal/sparse_lda_kernel.h"

namespace latentd {

absl::StatusOr<KernelKind> ParseKernelKind(std::string_view name) {
  if (name == "sparse") return KernelKind::kSparseLda;
  if (name == "dense") return KernelKind::kDense;
  if (name == "mh") return KernelKind::kMh;
  if (name == "auto") return KernelKind::kAuto;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown kernel '", std::string(name),
                   "' (expected auto, sparse, dense or mh)"));
}

std::string CpuPathsDescription() {
  using namespace internal;  // NOLINT: the paths' names
  const char* search = "scalar";
  if (kFindSlot != nullptr && kFindSlot == FindSlotAvx512) search = "avx512";
  if (kFindSlot != nullptr && kFindSlot == FindSlotAvx2) search = "avx2";
  return absl::StrCat("row walk ", kRowMassesPath.name, ", dense rows ",
                      kDenseRowMassesPath.name, ", row searches ", search);
}

std::string_view KernelKindName(KernelKind kind) {
  switch (kind) {
    case KernelKind::kSparseLda:
      return "sparse";
    case KernelKind::kDense:
      return "dense";
    case KernelKind::kMh:
      return "mh";
    case KernelKind::kAuto:
      return "auto";
    case KernelKind::kSparseInit:
      return "sparse-init";
    case KernelKind::kProgressiveStart:
      return "progressive-start";
  }
  return "?";
}

int64_t AutoOverlayMaxWordTokens(uint64_t num_docs, uint64_t num_tokens) {
  return num_docs > 0 && num_tokens / num_docs >= kLongDocumentTokens
             ? kLongDocumentOverlayMaxWordTokens
             : kDefaultOverlayMaxWordTokens;
}

absl::StatusOr<int64_t> ParseOverlayMaxWordTokens(std::string_view text) {
  if (text == "auto") return kOverlayMaxWordTokensAuto;
  int64_t n = 0;
  if (!absl::SimpleAtoi(absl::string_view(text.data(), text.size()), &n) ||
      n < 0 || n > (int64_t{1} << 62)) {
    return absl::InvalidArgumentError(
        absl::StrCat("overlay-max-word-tokens '", std::string(text),
                     "' is neither auto nor a count of tokens in 0..2^62"));
  }
  return n;
}

std::string OverlayMaxWordTokensName(int64_t max_word_tokens) {
  return max_word_tokens < 0 ? "auto" : absl::StrCat(max_word_tokens);
}

std::unique_ptr<SamplingKernel> MakeKernel(KernelKind kind, TopicId num_topics,
                                           const KernelOptions& options) {
  switch (kind) {
    case KernelKind::kSparseLda:
    case KernelKind::kAuto:
      return std::make_unique<internal::SparseLdaKernel>(
          num_topics, options.batch_overlay, options.overlay_max_word_tokens);
    case KernelKind::kDense:
      return std::make_unique<internal::DenseKernel>(
          num_topics, options.batch_overlay, options.overlay_max_word_tokens);
    case KernelKind::kMh:
      return std::make_unique<internal::MhKernel>(num_topics, options.mh);
    case KernelKind::kSparseInit:
      return std::make_unique<internal::SparseInitKernel>(
          num_topics, options.init_row_topics);
    case KernelKind::kProgressiveStart:
      return std::make_unique<internal::ProgressiveStartKernel>(num_topics);
  }
  return nullptr;
}

}  // namespace latentd
