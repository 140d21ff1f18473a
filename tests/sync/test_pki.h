// A throwaway public-key infrastructure for TLS tests, made with the
// openssl CLI in a temp directory (removed by the destructor):
//   ca.pem / ca.key                 the test CA
//   server.pem / server.key         signed by the CA, subjectAltName IP
//                                   127.0.0.1 (a node's certificate: server
//                                   and client alike)
//   other-ca.pem / other-ca.key     a second CA
//   stranger.pem / stranger.key     signed by the second CA, IP 127.0.0.1
// Not thread-safe; make one per test suite.
#ifndef LATENTD_TESTS_SYNC_TEST_PKI_H_
#define LATENTD_TESTS_SYNC_TEST_PKI_H_

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"

namespace latentd::sync::testing {

class TestPki {
 public:
  TestPki() {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("latentd_pki.", ::getpid(), ".", ++instances_);
    std::filesystem::create_directories(dir_);
    Run("req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-ca "
        "-keyout ca.key -out ca.pem");
    Run("req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=other-ca "
        "-keyout other-ca.key -out other-ca.pem");
    Issue("server", "ca");
    Issue("stranger", "other-ca");
  }
  ~TestPki() { std::filesystem::remove_all(dir_); }
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  std::string path(const std::string& name) const { return dir_ / name; }
  // NAME.pem / NAME.key signed by the CA for IP 127.0.0.1, naming node
  // `node_id` (subjectAltName URI latentd-node:ID, as
  // ops/issue-node-cert.sh makes them). False if openssl failed.
  bool IssueNodeCert(const std::string& name, const std::string& node_id) {
    Issue(name, "ca",
          absl::StrCat("URI:latentd-node:", node_id, ",IP:127.0.0.1"));
    return ok_;
  }
  // False if any openssl command failed.
  bool ok() const { return ok_; }

 private:
  // NAME.pem / NAME.key for IP 127.0.0.1, signed by CA.pem.
  void Issue(const std::string& name, const std::string& ca,
             const std::string& san = "IP:127.0.0.1") {
    Run(absl::StrCat("req -newkey rsa:2048 -nodes -subj /CN=", name,
                     " -keyout ", name, ".key -out ", name, ".csr"));
    Run(absl::StrCat("x509 -req -in ", name, ".csr -CA ", ca, ".pem -CAkey ",
                     ca, ".key -CAcreateserial -days 2 -extfile san.ext -out ",
                     name, ".pem"),
        absl::StrCat("subjectAltName=", san, "\n"));
  }
  // openssl ARGS in the directory (`ext`: written to san.ext first).
  void Run(const std::string& args, const std::string& ext = "") {
    if (!ext.empty()) {
      FILE* f = std::fopen(path("san.ext").c_str(), "w");
      if (f == nullptr) {
        ok_ = false;
        return;
      }
      std::fputs(ext.c_str(), f);
      std::fclose(f);
    }
    const std::string cmd = absl::StrCat("cd '", dir_.string(), "' && openssl ",
                                         args, " >/dev/null 2>&1");
    ok_ = ok_ && std::system(cmd.c_str()) == 0;
  }

  static inline int instances_ = 0;
  std::filesystem::path dir_;
  bool ok_ = true;
};

}  // namespace latentd::sync::testing

#endif  // LATENTD_TESTS_SYNC_TEST_PKI_H_
