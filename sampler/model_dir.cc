#include "sampler/model_dir.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/file_system.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "corpora/input_file.h"
#include "sampler/tool_exports.h"

namespace latentd {

std::vector<std::string> ModelPaths::existing() const {
  std::vector<std::string> found;
  for (const std::string& f : all()) {
    if (PathExists(f)) found.push_back(f);
  }
  return found;
}

absl::Status MakeModelDirectory(const std::string& dir) {
  absl::Status made = FileSystem::Default()->CreateDirectory(dir);
  if (!made.ok() && !absl::IsAlreadyExists(made)) {
    return absl::InvalidArgumentError(made.message());
  }
  return absl::OkStatus();
}

absl::Status RemoveModelFiles(const std::vector<std::string>& files) {
  for (const std::string& f : files) {
    absl::Status removed = FileSystem::Default()->Remove(f);
    if (!removed.ok()) {
      return absl::PermissionDeniedError(
          absl::StrCat("--overwrite: ", removed.message()));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> ModelPaths::all() const {
  std::vector<std::string> files = {snapshot(),
                                    prev_snapshot(),
                                    vocab(),
                                    settings(),
                                    tokens(),
                                    heldout(),
                                    doc_topics(),
                                    dir + "/topics.txt",
                                    dir + "/alpha.txt",
                                    dir + "/word_topic_counts.tsv"};
  // The exports for other tools (`latentctl export DIR --format ...`).
  for (ToolFormat f :
       {ToolFormat::kPyldavis, ToolFormat::kMallet, ToolFormat::kCsv}) {
    for (const std::string& name : ToolExportFiles(f)) {
      files.push_back(dir + "/" + name);
    }
  }
  return files;
}

absl::Status SaveSettings(const ModelSettings& settings,
                          const std::string& path) {
  std::string out = "# latentd model settings (key=value)\n";
  for (const auto& [key, value] : settings) {
    absl::StrAppend(&out, key, "=", value, "\n");
  }
  return WriteFileAtomically(path, out);
}

absl::StatusOr<ModelSettings> LoadSettings(const std::string& path) {
  LATENTD_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  ModelSettings settings;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos || eq == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", line_number, ": expected key=value, got '", line, "'"));
    }
    settings[std::string(line.substr(0, eq))] =
        std::string(line.substr(eq + 1));
  }
  return settings;
}

void PutTokenizerSettings(const TokenizerOptions& options,
                          ModelSettings* settings) {
  (*settings)["tokenizer.remove_stopwords"] =
      options.remove_stopwords ? "true" : "false";
  (*settings)["tokenizer.min_length"] = absl::StrCat(options.min_length);
  (*settings)["tokenizer.max_length"] = absl::StrCat(options.max_length);
  (*settings)["tokenizer.strip_pos_tags"] =
      options.strip_pos_tags ? "true" : "false";
}

absl::StatusOr<TokenizerOptions> GetTokenizerSettings(
    const ModelSettings& settings) {
  TokenizerOptions options;
  auto get_bool = [&](const std::string& key, bool* out) -> absl::Status {
    auto it = settings.find(key);
    if (it == settings.end()) return absl::OkStatus();
    if (it->second != "true" && it->second != "false") {
      return absl::InvalidArgumentError(absl::StrCat(
          "setting ", key, "=", it->second, " is not true or false"));
    }
    *out = it->second == "true";
    return absl::OkStatus();
  };
  auto get_size = [&](const std::string& key, size_t* out) -> absl::Status {
    auto it = settings.find(key);
    if (it == settings.end()) return absl::OkStatus();
    uint64_t value;
    if (!absl::SimpleAtoi(it->second, &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("setting ", key, "=", it->second, " is not a number"));
    }
    *out = value;
    return absl::OkStatus();
  };
  LATENTD_RETURN_IF_ERROR(
      get_bool("tokenizer.remove_stopwords", &options.remove_stopwords));
  LATENTD_RETURN_IF_ERROR(
      get_size("tokenizer.min_length", &options.min_length));
  LATENTD_RETURN_IF_ERROR(
      get_size("tokenizer.max_length", &options.max_length));
  LATENTD_RETURN_IF_ERROR(
      get_bool("tokenizer.strip_pos_tags", &options.strip_pos_tags));
  return options;
}

absl::StatusOr<LoadedModel> LoadModelDir(const std::string& dir) {
  ModelPaths paths(dir);
  LoadedModel model;
  LATENTD_ASSIGN_OR_RETURN(model.snapshot,
                           ModelSnapshot::Load(paths.snapshot()));
  LATENTD_ASSIGN_OR_RETURN(model.vocab, Vocabulary::Load(paths.vocab()));
  LATENTD_ASSIGN_OR_RETURN(model.settings, LoadSettings(paths.settings()));
  if (model.vocab.size() != model.snapshot.vocab_size) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir, ": vocab.txt has ", model.vocab.size(),
                     " words but model.bin ", model.snapshot.vocab_size));
  }
  return model;
}

}  // namespace latentd
