"""A ``ctxhost serve`` child process and the JSON-RPC calls made to it (one at a time)."""

import json
import logging
import signal
import subprocess
import threading
from typing import Any, Dict, List, Optional

PROTOCOL_VERSION = "1.0"

# The server's answer to a config it cannot use (a file or an inline mapping), or an engine it
# cannot swap to.
CONFIG_ERROR = -32006

logger = logging.getLogger("hermes_ctxhost")


class ServerGone(Exception):
    """The server exited, or its pipes broke, before answering."""


class NotStartedYet(ServerGone):
    """The server failed to start a moment ago, and is not started again until its back-off ends:
    a binary that cannot run would otherwise be started (and said) at every call."""


class RpcError(Exception):
    """The server answered with a JSON-RPC error."""

    def __init__(self, error: Dict[str, Any]):
        self.code = error.get("code")
        self.data = error.get("data") or {}
        self.kind = self.data.get("kind")
        super().__init__(error.get("message", "error"))


class Server:
    """A running ``ctxhost serve``, handshake done."""

    def __init__(self, binary: str, args: List[str], client_name: str, cwd: Optional[str] = None):
        try:
            self.process = subprocess.Popen(
                [binary, *args, "serve"],
                cwd=cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                # Line-buffered text both ways: one request, one reply, one line each.
                text=True,
                encoding="utf-8",
                bufsize=1,
            )
        except OSError as error:
            raise ServerGone(f"cannot start {binary}: {error}") from error
        self._next_id = 1
        self._lock = threading.Lock()
        threading.Thread(target=self._forward_log, daemon=True).start()
        initialized = self.call("initialize", {"protocol_version": PROTOCOL_VERSION, "client_name": client_name})
        major = str(initialized.get("protocol_version", "")).split(".")[0]
        if major != PROTOCOL_VERSION.split(".")[0]:
            self.close()
            raise ServerGone(
                f"ctxhost speaks protocol {initialized.get('protocol_version')}, this bridge {PROTOCOL_VERSION}"
            )
        self.capabilities = set(initialized.get("capabilities", []))

    def call(self, method: str, params: Optional[Dict[str, Any]] = None) -> Any:
        """Sends one request and returns its result; raises RpcError or ServerGone."""
        with self._lock:
            request = {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params or {}}
            self._next_id += 1
            try:
                # default=str: a value Hermes keeps in a message that JSON cannot hold crosses as text.
                self.process.stdin.write(json.dumps(request, default=str) + "\n")
                self.process.stdin.flush()
                line = self.process.stdout.readline()
            except (BrokenPipeError, OSError, ValueError) as error:
                raise ServerGone(f"the server {self.ending()} during `{method}` ({error})") from error
            if not line:
                raise ServerGone(f"the server {self.ending()} during `{method}`")
            try:
                reply = json.loads(line)
            except json.JSONDecodeError as error:
                raise ServerGone(f"the server's reply to `{method}` is not JSON: {line[:200]!r}") from error
            if not isinstance(reply, dict) or reply.get("id") != request["id"] or not ("result" in reply or "error" in reply):
                raise ServerGone(f"the server's answer to `{method}` is not its reply: {line[:200]!r}")
            if "error" in reply:
                raise RpcError(reply["error"])
            return reply["result"]

    def close(self, timeout: float = 10.0) -> None:
        """Closes the server's input, so that it ends its sessions and exits; kills it if it
        does not within ``timeout`` seconds."""
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def ending(self) -> str:
        """How the process ended ("was killed by SIGSEGV", "exited with code 3"), once it has;
        its output closing comes a moment before the kernel says so."""
        try:
            code = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return "closed its pipes while still running"
        if code >= 0:
            return f"exited with code {code}"
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"

    def is_alive(self) -> bool:
        return self.process.poll() is None

    def _forward_log(self) -> None:
        # The server logs on stderr (`warning: ...`); its lines go to Python's logging.
        for line in self.process.stderr:
            line = line.rstrip()
            if line.startswith("error:"):
                logger.error("ctxhost: %s", line)
            elif line.startswith("warning:"):
                logger.warning("ctxhost: %s", line)
            elif line:
                logger.info("ctxhost: %s", line)
