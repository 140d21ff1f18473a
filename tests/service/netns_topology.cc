#include "tests/service/netns_topology.h"

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace latentd::testing {
namespace {

constexpr const char* kSubnet = "10.213.0.";

// Runs a shell command line; its exit status and output.
std::pair<int, std::string> Shell(const std::string& cmd) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, std::strerror(errno)};
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof(buf), p) != nullptr) out += buf;
  return {::pclose(p), out};
}

absl::Status Run(const std::string& cmd) {
  auto [rc, out] = Shell(cmd);
  if (rc == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("`", cmd, "` failed: ", out));
}

// Runs `lines` as one `ip -batch` in namespace `ns` ("" : this one).
absl::Status Batch(const std::string& ns, const std::vector<std::string>& lines,
                   const std::string& file) {
  {
    std::ofstream out(file);
    for (const std::string& l : lines) out << l << "\n";
  }
  const std::string cmd =
      absl::StrCat("ip ", ns.empty() ? "" : "-n " + ns + " ", "-batch ", file);
  absl::Status s = Run(cmd);
  std::remove(file.c_str());
  return s;
}

// Deletes the namespaces lt<pid>-* of processes that no longer run.
void DeleteStale() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/run/netns", ec)) {
    const std::string name = e.path().filename().string();
    const size_t dash = name.find('-');
    int pid = 0;
    if (name.rfind("lt", 0) != 0 || dash == std::string::npos ||
        !absl::SimpleAtoi(name.substr(2, dash - 2), &pid) || pid <= 0) {
      continue;
    }
    if (::kill(pid, 0) != 0 && errno == ESRCH) {
      Shell("ip netns del " + name);
    }
  }
}

}  // namespace

std::string EndpointName(int endpoint) {
  return endpoint == NetTopology::kRedis ? "redis"
                                         : absl::StrCat("n", endpoint);
}

std::string NetTopology::Unavailable() {
  if (::geteuid() != 0) return "not root (network namespaces need root)";
  if (Shell("ip -V").first != 0) return "no `ip` (iproute2) on the PATH";
  const std::string probe = absl::StrCat("lt", ::getpid(), "-probe");
  auto [rc, out] = Shell("ip netns add " + probe);
  if (rc != 0) return absl::StrCat("`ip netns add` failed: ", out);
  // The topology's links: a bridge and a veth pair (kernel support for
  // both), tried inside the probe namespace.
  auto [link_rc, link_out] =
      Shell(absl::StrCat("ip -n ", probe, " link add pbr type bridge && ip -n ",
                         probe, " link add pa type veth peer name pb"));
  Shell("ip netns del " + probe);
  if (link_rc != 0) {
    return absl::StrCat("no bridge or veth links here: ", link_out);
  }
  return "";
}

absl::StatusOr<std::unique_ptr<NetTopology>> NetTopology::Create(int nodes) {
  if (::unshare(CLONE_NEWNET) != 0) {
    return absl::InternalError(
        absl::StrCat("unshare(CLONE_NEWNET): ", std::strerror(errno)));
  }
  DeleteStale();
  std::unique_ptr<NetTopology> t(
      new NetTopology(absl::StrCat("lt", ::getpid()), nodes));
  absl::Status s = t->Build();
  if (!s.ok()) return s;
  return t;
}

NetTopology::~NetTopology() {
  for (const std::string& ns : created_) Shell("ip netns del " + ns);
}

std::string NetTopology::Namespace(int endpoint) const {
  return absl::StrCat(prefix_, "-", EndpointName(endpoint));
}

std::string NetTopology::Address(int endpoint) const {
  return absl::StrCat(kSubnet, endpoint == kRedis ? 2 : 10 + endpoint);
}

std::vector<std::string> NetTopology::Exec(int endpoint) const {
  return {"ip", "netns", "exec", Namespace(endpoint)};
}

absl::Status NetTopology::Build() {
  const std::string sw = absl::StrCat(prefix_, "-sw");
  std::vector<int> endpoints = {kRedis};
  for (int i = 0; i < nodes_; ++i) endpoints.push_back(i);
  for (const std::string& ns : {sw}) {
    if (absl::Status s = Run("ip netns add " + ns); !s.ok()) return s;
    created_.push_back(ns);
  }
  for (int e : endpoints) {
    const std::string ns = Namespace(e);
    if (absl::Status s = Run("ip netns add " + ns); !s.ok()) return s;
    created_.push_back(ns);
  }
  // The switch: a bridge per link, the switch's end of each veth on it.
  std::vector<std::string> sw_lines;
  std::vector<std::vector<std::string>> ep_lines(endpoints.size());
  int bridge = 0;
  for (size_t i = 0; i < endpoints.size(); ++i) {
    ep_lines[i].push_back("link set lo up");
    for (size_t j = i + 1; j < endpoints.size(); ++j, ++bridge) {
      const std::string br = absl::StrCat("b", bridge);
      sw_lines.push_back(absl::StrCat("link add ", br, " type bridge"));
      sw_lines.push_back(absl::StrCat("link set ", br, " up"));
      for (auto [from, to] : {std::pair(i, j), std::pair(j, i)}) {
        const int a = endpoints[from], b = endpoints[to];
        const std::string port =
            absl::StrCat(EndpointName(a), "-", EndpointName(b));
        const std::string dev = "to-" + EndpointName(b);
        sw_lines.push_back(absl::StrCat("link add ", port,
                                        " type veth peer name ", dev, " netns ",
                                        Namespace(a)));
        sw_lines.push_back(
            absl::StrCat("link set ", port, " master ", br, " up"));
        ep_lines[from].push_back(absl::StrCat(
            "addr add ", Address(a), "/32 peer ", Address(b), "/32 dev ", dev));
        ep_lines[from].push_back(absl::StrCat("link set ", dev, " up"));
      }
    }
  }
  const std::string tmp = absl::StrCat("/tmp/", prefix_, ".batch");
  if (absl::Status s = Batch(sw, sw_lines, tmp); !s.ok()) return s;
  for (size_t i = 0; i < endpoints.size(); ++i) {
    if (absl::Status s = Batch(Namespace(endpoints[i]), ep_lines[i], tmp);
        !s.ok()) {
      return s;
    }
  }
  // The test's own links to the nodes (never cut).
  const std::string self = absl::StrCat(kSubnet, 1);
  std::vector<std::string> own = {"link set lo up"};
  for (int i = 0; i < nodes_; ++i) {
    const std::string dev = absl::StrCat("c", i);
    own.push_back(absl::StrCat("link add ", dev, " type veth peer name ctl",
                               " netns ", Namespace(i)));
    own.push_back(absl::StrCat("addr add ", self, "/32 peer ", Address(i),
                               "/32 dev ", dev));
    own.push_back(absl::StrCat("link set ", dev, " up"));
  }
  if (absl::Status s = Batch("", own, tmp); !s.ok()) return s;
  for (int i = 0; i < nodes_; ++i) {
    if (absl::Status s = Batch(Namespace(i),
                               {absl::StrCat("addr add ", Address(i),
                                             "/32 peer ", self, "/32 dev ctl"),
                                "link set ctl up"},
                               tmp);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status NetTopology::SetLink(int a, int b, bool up) {
  const std::string ab = absl::StrCat(EndpointName(a), "-", EndpointName(b));
  const std::string ba = absl::StrCat(EndpointName(b), "-", EndpointName(a));
  const char* state = up ? "up" : "down";
  return Run(absl::StrCat("ip -n ", prefix_, "-sw link set ", ab, " ", state,
                          " && ip -n ", prefix_, "-sw link set ", ba, " ",
                          state));
}

absl::Status NetTopology::Cut(int a, int b) {
  const std::pair<int, int> link(std::min(a, b), std::max(a, b));
  if (cut_.count(link)) return absl::OkStatus();
  absl::Status s = SetLink(a, b, false);
  if (s.ok()) cut_.insert(link);
  return s;
}

absl::Status NetTopology::Heal(int a, int b) {
  const std::pair<int, int> link(std::min(a, b), std::max(a, b));
  if (!cut_.count(link)) return absl::OkStatus();
  absl::Status s = SetLink(a, b, true);
  if (s.ok()) cut_.erase(link);
  return s;
}

absl::Status NetTopology::HealAll() {
  const std::set<std::pair<int, int>> links = cut_;
  for (const auto& [a, b] : links) {
    if (absl::Status s = Heal(a, b); !s.ok()) return s;
  }
  return absl::OkStatus();
}

bool NetTopology::IsCut(int a, int b) const {
  return cut_.count({std::min(a, b), std::max(a, b)}) > 0;
}

}  // namespace latentd::testing
