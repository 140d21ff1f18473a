#include "cli/gensim_export.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gensim_export_py.h"

extern char** environ;

namespace latentd {

absl::Status ExportGensim(const std::string& model_dir,
                          const std::string& out_dir, const std::string& python,
                          FILE* err) {
  std::fflush(err);
  std::vector<std::string> args = {python, "-c", kGensimExportPy, model_dir,
                                   out_dir};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The writer prints the file it saved: to `err`, as the other formats'
  // lines go.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fileno(err), STDOUT_FILENO);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, python.c_str(), &actions, nullptr,
                                   argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  const std::string hint =
      "--format gensim runs a Python 3 with gensim (Debian: python3-gensim); "
      "give another with --python";
  if (spawned != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot run ", python, ": ", std::strerror(spawned), "; ", hint));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      return absl::InternalError(
          absl::StrCat("waiting for ", python, ": ", std::strerror(errno)));
    }
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat(
      "%s (the gensim writer) failed (%s %d; its message is above); %s", python,
      WIFEXITED(status) ? "exit status" : "signal",
      WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), hint));
}

}  // namespace latentd
