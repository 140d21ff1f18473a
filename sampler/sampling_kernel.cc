#include "sampler/sampling_kernel.h"

#include "absl/strings/str_cat.h"
#include "sampler/internal/sparse_lda_kernel.h"

namespace latentd {

absl::StatusOr<KernelKind> ParseKernelKind(std::string_view name) {
  if (name == "sparse") return KernelKind::kSparseLda;
  if (name == "dense") return KernelKind::kDense;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown kernel '", std::string(name), "' (expected sparse or dense)"));
}

std::string_view KernelKindName(KernelKind kind) {
  switch (kind) {
    case KernelKind::kSparseLda:
      return "sparse";
    case KernelKind::kDense:
      return "dense";
  }
  return "?";
}

std::unique_ptr<SamplingKernel> MakeKernel(KernelKind kind,
                                           TopicId num_topics) {
  switch (kind) {
    case KernelKind::kSparseLda:
      return std::make_unique<internal::SparseLdaKernel>(num_topics);
    case KernelKind::kDense:
      return std::make_unique<internal::DenseKernel>(num_topics);
  }
  return nullptr;
}

}  // namespace latentd
