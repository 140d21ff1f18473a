#include "base/testing/scratch_dir.h"

#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"

namespace latentd::testing {

std::string ScratchDir(std::string_view suite, std::string_view name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      absl::StrCat(std::string(suite), "_", ::getpid()) / std::string(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace latentd::testing
