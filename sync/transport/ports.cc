#include "sync/transport/ports.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>

namespace latentd::sync {

int FirstEphemeralPort() {
  int first = 32768;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d", &first) != 1) first = 32768;
    std::fclose(f);
  }
  return first;
}

PortRange PortsBelowEphemeral(int first, int end) {
  return PortRange{first, std::min(end, FirstEphemeralPort()) - 1};
}

int DrawPort(const PortRange& range) {
  thread_local std::mt19937 rng(std::random_device{}() ^
                                static_cast<unsigned>(::getpid()));
  return std::uniform_int_distribution<int>(range.first, range.last)(rng);
}

}  // namespace latentd::sync
