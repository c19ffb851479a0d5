"""HAProxy running deploy/haproxy/haproxy.cfg in front of loopback replicas, read through its stats socket."""

from __future__ import annotations

import csv
import io
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from tests.deploy.processes import BASE_DIR
from tests.missing_tools import skip_or_fail

CONFIG = BASE_DIR / "deploy" / "haproxy" / "haproxy.cfg"
REQUIRE = "GATEWAY_REQUIRE_HAPROXY"  # set by .ci/run: a missing haproxy fails the test instead of skipping it


def haproxy_binary() -> str:
    binary = shutil.which("haproxy") or ("/usr/sbin/haproxy" if os.access("/usr/sbin/haproxy", os.X_OK) else None)
    if binary is None:
        skip_or_fail("haproxy", "apt-get install haproxy", REQUIRE)
    return binary


class HAProxy:
    def __init__(self, folder: Path, port: int, replicas: list[str], log) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.socket_path = str(folder / "haproxy.sock")
        self.env = {
            **os.environ,
            "HAPROXY_BIND": f"127.0.0.1:{port}",
            "HAPROXY_STATS_SOCKET": self.socket_path,
            "HAPROXY_REPLICA_HEADER": "1",
            **{f"GATEWAY_{index}": address for index, address in enumerate(replicas, 1)},
        }
        binary = haproxy_binary()
        check = subprocess.run([binary, "-c", "-q", "-f", str(CONFIG)], env=self.env, capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        self.process = subprocess.Popen([binary, "-db", "-f", str(CONFIG)], env=self.env, stdout=log, stderr=log)

    def command(self, line: str) -> str:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(5)
            sock.connect(self.socket_path)
            sock.sendall(line.encode() + b"\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def servers(self) -> dict[str, dict[str, str]]:
        """Per server of the `gateways` backend: its `show stat` row (status, stot, econ, wretr, wredis...)."""
        text = self.command("show stat").lstrip("# ")
        rows = csv.DictReader(io.StringIO(text))
        return {row["svname"]: row for row in rows if row["pxname"] == "gateways" and row["svname"].startswith("gw")}

    def status(self, server: str) -> str:
        return self.servers()[server]["status"].split()[0]  # "UP", "DOWN", "UP 1/2", "DOWN 1/2"...

    def wait_status(self, server: str, wanted: str, timeout: float = 30.0) -> float:
        """Seconds until `server`'s status is `wanted` (polled every 20 ms)."""
        started = time.monotonic()
        while True:
            try:
                if self.servers()[server]["status"] == wanted:
                    return time.monotonic() - started
            except (OSError, KeyError):
                pass  # the stats socket is not open yet
            assert time.monotonic() - started < timeout, f"{server} not {wanted} within {timeout} s"
            time.sleep(0.02)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
