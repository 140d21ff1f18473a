"""One latentd process for the Python tests: started in a temporary
directory on 127.0.0.1 with ports the kernel picks (read back from
DIR/node/ports, so that no two tests collide), its output in DIR/latentd.log,
stopped with SIGTERM (then SIGKILL after 60 s) and the directory removed.
Also what the daemon tests with a planted corpus share: its words
(planted_word) and latentctl run against the daemon (LatentdProcess.ctl).
"""

import os
import shutil
import signal
import subprocess
import tempfile
import time


def planted_word(topic, i):
    """Word `i` of planted topic `topic` (letters only: the tokenizer keeps
    it; i < 676)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    return "q" + letters[topic] + letters[i // 26] + letters[i % 26]


def drop_proxies():
    """The daemon is on 127.0.0.1: no HTTP proxy must come between."""
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        os.environ.pop(name, None)


class LatentdProcess:
    """`make_args(dir)` writes what the daemon reads into `dir` and returns
    its arguments besides --data-dir, --http and --listen. Serving once the
    constructor returns: .http and .tcp (also .address, the HTTP one)."""

    def __init__(self, binary, prefix, make_args):
        self.dir = tempfile.mkdtemp(prefix=prefix + ".")
        self.data_dir = os.path.join(self.dir, "node")
        self.log_path = os.path.join(self.dir, "latentd.log")
        args = make_args(self.dir)
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [binary, "--data-dir", self.data_dir, "--http", "127.0.0.1:0",
             "--listen", "127.0.0.1:0", *args],
            stdout=self._log, stderr=subprocess.STDOUT)
        self.http, self.tcp = self._wait_for_ports()
        self.address = self.http

    def log_tail(self):
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-20:])

    def _wait_for_ports(self):
        ports = os.path.join(self.data_dir, "ports")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"latentd exited with {self.proc.returncode}"
                                   f":\n{self.log_tail()}")
            if os.path.exists(ports):
                found = {}
                with open(ports, encoding="utf-8") as f:
                    for line in f:
                        k, _, v = line.strip().partition("=")
                        found[k] = v
                if "http" in found and "tcp" in found:
                    return found["http"], found["tcp"]
            time.sleep(0.1)
        raise RuntimeError(f"latentd wrote no {ports}:\n{self.log_tail()}")

    def ctl(self, latentctl, *args, protocol="tcp", check=True):
        """Runs `latentctl ARGS --addr ... --protocol PROTOCOL` against this
        daemon (its TCP port for tcp, else its HTTP one); (exit status, out,
        err), or AssertionError with its stderr if it fails and `check`."""
        addr = self.tcp if protocol == "tcp" else self.http
        p = subprocess.run([latentctl, *args, "--addr", addr,
                            "--protocol", protocol],
                           capture_output=True, text=True, encoding="utf-8",
                           timeout=60)
        if check and p.returncode != 0:
            raise AssertionError(f"latentctl {args}: {p.stderr}")
        return p.returncode, p.stdout, p.stderr

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
