#include "tests/fuzz/fuzz_util.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/log.h"
#include "google/protobuf/stubs/logging.h"

namespace latentd::fuzz {
namespace {

void RemoveScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(ScratchDir(), ignored);
}

void DropProtobufLog(google::protobuf::LogLevel, const char*, int,
                     const std::string&) {}

}  // namespace

void CheckFailed(const char* cond, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: invariant violated: %s\n", file, line, cond);
  std::abort();
}

const std::string& ScratchDir() {
  static const std::string* dir = [] {
    // Memory-backed where there is one: the file readers' harnesses
    // write a file per input.
    const char* tmp = std::getenv("TMPDIR");
    std::string base = tmp != nullptr && *tmp ? tmp : "/tmp";
    if (tmp == nullptr && ::access("/dev/shm", W_OK) == 0) base = "/dev/shm";
    std::string tmpl = base + "/latentd_fuzz_XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      std::perror("latentd fuzz: mkdtemp");
      std::abort();
    }
    auto* d = new std::string(tmpl);
    std::atexit(RemoveScratchDir);
    return d;
  }();
  return *dir;
}

std::string WriteScratchFile(std::string_view name, std::string_view bytes) {
  std::string path = ScratchDir() + "/" + std::string(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "latentd fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

std::vector<Message> SplitMessages(std::string_view input, size_t max) {
  std::vector<Message> out;
  while (input.size() >= 3 && out.size() < max) {
    Message m;
    m.op = static_cast<uint8_t>(input[0]);
    const size_t len = static_cast<uint8_t>(input[1]) |
                       (size_t{static_cast<uint8_t>(input[2])} << 8);
    input.remove_prefix(3);
    m.body = input.substr(0, len);
    input.remove_prefix(m.body.size());
    out.push_back(m);
  }
  return out;
}

void AppendMessage(uint8_t op, std::string_view body, std::string* out) {
  body = body.substr(0, 0xffff);
  out->push_back(static_cast<char>(op));
  out->push_back(static_cast<char>(body.size() & 0xff));
  out->push_back(static_cast<char>(body.size() >> 8));
  out->append(body);
}

void QuietLogs() {
  google::protobuf::SetLogHandler(DropProtobufLog);
  log::SetLevel(log::Level::kError);
}

}  // namespace latentd::fuzz
