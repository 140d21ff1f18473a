"""Helpers of the cluster benchmarks (failover_bench.py,
replication_bench.py, profile_bench.py): latentd daemons on 127.0.0.1, a
private redis-server on a Unix socket, blei-ap split into thirds, their
metrics, and waiting for a condition."""
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(pred, timeout, what):
    """Polls pred() every 20 ms; exits naming `what` after `timeout` s."""
    end = time.time() + timeout
    while not pred():
        if time.time() > end:
            sys.exit(f"{what}: not within {timeout} s")
        time.sleep(0.02)


def metric(http, name):
    """The unlabelled sample `name` of the daemon at `http`; None if none."""
    try:
        with urllib.request.urlopen(f"http://{http}/metrics", timeout=5) as r:
            for line in r.read().decode().splitlines():
                parts = line.split()
                if len(parts) == 2 and parts[0] == name:
                    return float(parts[1])
    except OSError:
        return None
    return None


class Node:
    def __init__(self, i, tmp, common):
        self.i = i
        self.dir = os.path.join(tmp, f"node{i}")
        self.tcp = f"127.0.0.1:{free_port()}"
        self.http = f"127.0.0.1:{free_port()}"
        self.args = common + [
            "--corpus", os.path.join(tmp, f"part{i}"),
            "--data-dir", self.dir,
            "--listen", self.tcp, "--http", self.http,
            "--cluster-listen", f"127.0.0.1:{free_port()}"]
        self.log = os.path.join(tmp, f"node{i}.log")
        self.proc = None

    def start(self):
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen(self.args, stdout=log,
                                         stderr=subprocess.STDOUT)

    def log_tail(self, lines=30):
        """The last lines of the node's log (the directory is removed after
        a failed run, so a failure message carries them)."""
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError as e:
            return f"(no log: {e})\n"

    def wait_up(self, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                sys.exit(f"node{self.i} exited (status {self.proc.returncode})"
                         f"; its log ends:\n{self.log_tail()}")
            if metric(self.http, "latentd_sweeps_total") is not None:
                return
            time.sleep(0.05)
        sys.exit(f"node{self.i} did not come up; its log ends:\n"
                 f"{self.log_tail()}")

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_redis(tmp):
    """A redis-server on the Unix socket tmp/redis.sock (no TCP port, no
    persistence); returns (process, "unix:" url) once the socket exists."""
    sock = os.path.join(tmp, "redis.sock")
    redis = subprocess.Popen(
        ["redis-server", "--port", "0", "--unixsocket", sock, "--save", "",
         "--appendonly", "no", "--dir", tmp],
        stdout=open(os.path.join(tmp, "redis.log"), "w"),
        stderr=subprocess.STDOUT)
    for _ in range(200):
        if os.path.exists(sock):
            break
        time.sleep(0.025)
    return redis, "unix:" + sock


def write_ap_thirds(ap, tmp):
    """blei-ap's documents into tmp/part0..2 (document d in part d % 3)."""
    parts = [open(os.path.join(tmp, f"part{i}"), "w") for i in range(3)]
    docs = subprocess.run(["zstdcat", os.path.join(ap, "ap.dat.zst")],
                          check=True, capture_output=True, text=True)
    d = 0
    for line in docs.stdout.splitlines():
        if line.strip():
            parts[d % 3].write(line + "\n")
            d += 1
    for f in parts:
        f.close()


def write_cluster_key(tmp):
    key = os.path.join(tmp, "cluster.key")
    with open(key, "w") as f:
        f.write("cluster-bench-key-0123456789abcdef\n")
    os.chmod(key, 0o600)
    return key
