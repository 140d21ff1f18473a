// Where a listener draws a port it keeps for its life.
//
// A port that a process must listen on again after a restart (a node's
// sync address, which the ring names) must not come from the kernel's
// ephemeral range: meanwhile any outgoing connection on the machine may
// be given it as its source port, and the restarted process could not
// bind it. Ports below the range are taken only by explicit binds.
//
//   [kFirstTestPort, kFirstDurablePort)   ports tests and benchmarks pick
//                                          for the processes they start
//   [kFirstDurablePort, ephemeral range)  ports daemons draw to keep
//
// so that a daemon's draw never takes a port a test picked and has not
// bound yet. Thread-safety: all functions are thread-safe.
#ifndef LATENTD_SYNC_TRANSPORT_PORTS_H_
#define LATENTD_SYNC_TRANSPORT_PORTS_H_

namespace latentd::sync {

inline constexpr int kFirstTestPort = 10000;
inline constexpr int kFirstDurablePort = 20000;

// A closed range of ports; empty when first > last.
struct PortRange {
  int first = 0;
  int last = -1;
  int size() const { return last < first ? 0 : last - first + 1; }
};

// The first port of the kernel's ephemeral range (what a bind to port 0
// or a connect gets; /proc/sys/net/ipv4/ip_local_port_range), 32768 if it
// cannot be read.
int FirstEphemeralPort();

// [first, end) cut off below the ephemeral range.
PortRange PortsBelowEphemeral(int first, int end);

// A port drawn uniformly from `range` (not empty) by a per-thread
// generator seeded from std::random_device and the process id.
int DrawPort(const PortRange& range);

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_TRANSPORT_PORTS_H_
