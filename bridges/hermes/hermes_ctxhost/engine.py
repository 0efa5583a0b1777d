"""``CtxhostEngine``: a Hermes ``ContextEngine`` whose every method is a call to ``ctxhost serve``.

- The server starts on the first call, not when the engine is made: Hermes deep-copies the
  registered engine for each agent, and a copy holds settings and mirrored state only.
- Every reply carries the engine's six counters; they are mirrored as the attributes Hermes's run
  loop reads.
- A server that died is started again at the next call and the session restored (model, agent
  session, usage); the call is retried once. One that fails to start is not started again for a
  while (30 s, doubling to 5 min), and that is said once.
- A ctxhost config the server refuses (bad YAML, a bad value) is said once, and the session runs
  ctxhost's compressor with its defaults, as an engine that cannot be loaded falls back to it:
  without it, the engine would never learn its window and never compact. Engine state kept on disk (LCM's store) survives;
  state kept in the dead server's memory does not, except the compaction count, which the bridge
  carries over. A call that still fails keeps the context unchanged: ``compress`` returns its
  input and reports the abort the way Hermes's own compressor does.
"""

import atexit
import copy
import dataclasses
import json
import logging
import math
import time
import weakref
from typing import Any, Dict, List, Optional

from agent.context_engine import ContextEngine

from .server import CONFIG_ERROR, NotStartedYet, RpcError, Server, ServerGone
from .settings import BridgeSettings

logger = logging.getLogger("hermes_ctxhost")

COUNTERS = (
    "last_prompt_tokens",
    "last_completion_tokens",
    "last_total_tokens",
    "threshold_tokens",
    "context_length",
    "compression_count",
)
MODEL_KEYS = ("model", "context_length", "base_url", "provider")
SESSION_INFO_KEYS = ("model", "context_length", "platform", "boundary_reason", "old_session_id")
# How long a server that failed to start is left alone, first and at most (seconds).
FIRST_BACKOFF = 30.0
LONGEST_BACKOFF = 300.0
USAGE_KEYS = (
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)

_live = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    # The end of the server's input ends its sessions (on_session_end flushes LCM's store).
    for engine in list(_live):
        engine.close()


class CtxhostEngine(ContextEngine):
    """A context engine served by ``ctxhost serve``."""

    def __init__(self, settings: Optional[BridgeSettings] = None):
        # Without settings: the `ctxhost:` block of $HERMES_HOME/config.yaml, as the plugin reads it.
        self.settings = settings if settings is not None else BridgeSettings.from_hermes_config()
        self._server: Optional[Server] = None
        self._session: Optional[str] = None
        self._tools: List[Dict[str, Any]] = []
        self._served_engine: Optional[str] = None
        # What a restarted server is told again.
        self._model: Optional[Dict[str, Any]] = None
        self._started: Optional[tuple] = None
        self._last_usage: Optional[Dict[str, Any]] = None
        # Compactions counted by servers that died: the new one counts from 0.
        self._count_carried = 0
        self._last_compress_aborted = False
        self._last_summary_error: Optional[str] = None
        self._last_compression_made_progress = False
        # Why the server last failed to start, and until when it is not started again.
        self._start_failure: Optional[tuple] = None
        self._backoff = FIRST_BACKOFF
        # Why ctxhost refused the configured config, once it did: later servers run without it.
        self._config_refused: Optional[str] = None
        for counter in COUNTERS:
            setattr(self, counter, 0)

    @property
    def name(self) -> str:
        return "ctxhost"

    @property
    def served_engine(self) -> Optional[str]:
        """The ctxhost engine that runs (known once the server started)."""
        return self._served_engine

    def __deepcopy__(self, memo):
        # A copy has no server of its own yet: it starts one at its first call and restores the
        # session there, as after a restart.
        clone = CtxhostEngine.__new__(CtxhostEngine)
        memo[id(self)] = clone
        for key, value in self.__dict__.items():
            if key == "_server":
                clone._server = None
            elif key == "_session":
                clone._session = None
            else:
                setattr(clone, key, copy.deepcopy(value, memo))
        if self._server is not None:
            clone._count_carried = self.compression_count
        return clone

    # -- the server --------------------------------------------------------------------------

    def _ensure_server(self) -> None:
        if self._server is not None and self._server.is_alive() and self._session is not None:
            return
        if self._start_failure is not None:
            reason, until = self._start_failure
            if time.monotonic() < until:
                raise NotStartedYet(f"not started again yet ({reason})")
        if self._server is not None and not self._server.is_alive():
            logger.warning("ctxhost: the server %s; starting it again", self._server.ending())
        self._drop_server()
        try:
            self._start_server()
        except (ServerGone, RpcError) as error:
            self._drop_server()
            if self._start_failure is None:
                logger.warning(
                    "ctxhost: the server cannot be started: %s; not tried again for %d s", error, self._backoff
                )
            else:
                self._backoff = min(self._backoff * 2, LONGEST_BACKOFF)
            self._start_failure = (str(error), time.monotonic() + self._backoff)
            # Not retried by `_call`: a start that failed now fails again at once.
            raise NotStartedYet(str(error)) from error
        if self._start_failure is not None:
            logger.warning("ctxhost: the server started again")
        self._start_failure = None
        self._backoff = FIRST_BACKOFF
        # The session as it was: an engine failing here fails this call, as it would any other
        # (the server is up; it is not a failed start).
        if self._started is not None:
            session_id, session_info = self._started
            self._mirror(self._raw("on_session_start", {"session_id": session_id, "info": session_info}))
        if self._last_usage is not None:
            self._mirror(self._raw("update_from_response", {"usage": self._last_usage}))

    def _start_server(self) -> None:
        self._server = Server(
            self.settings.binary, self.settings.server_args(), "hermes-ctxhost", cwd=self.settings.base_dir
        )
        _live.add(self)
        opened = self._open_session()
        info = opened["value"]
        self._session = info["session"]
        self._tools = info.get("tools", [])
        self._served_engine = info.get("engine")
        if info.get("fallback"):
            fallback = info["fallback"]
            logger.warning(
                "ctxhost: engine `%s` cannot be used: %s; ctxhost runs its compressor",
                fallback.get("requested"),
                fallback.get("reason"),
            )
        self._mirror(opened)

    def _open_session(self) -> Dict[str, Any]:
        params: Dict[str, Any] = {"engine": self.settings.engine}
        if self.settings.config is not None and self._config_refused is None:
            params["config"] = self.settings.config
        if self._config_refused is not None:
            params["engine"] = "compressor"
        if self._model is not None:
            params["model"] = self._model
        try:
            return self._server.call("session/open", params)
        except RpcError as error:
            if error.code != CONFIG_ERROR or "config" not in params:
                raise
            self._config_refused = str(error)
            logger.warning(
                "ctxhost: the config %s cannot be used: %s; ctxhost runs its compressor with its defaults",
                self.settings.config if isinstance(self.settings.config, str) else "(inline)",
                error,
            )
            return self._open_session()

    def _drop_server(self) -> None:
        if self._server is not None:
            if self._session is not None:
                # A server that died counted compactions the next one will not know.
                self._count_carried = self.compression_count
            try:
                self._server.process.kill()
                self._server.process.wait(timeout=5)
            except Exception:
                pass
        self._server = None
        self._session = None

    def _raw(self, method: str, params: Dict[str, Any]) -> Any:
        return self._server.call(method, {"session": self._session, **params})

    def _call(self, method: str, mirror: bool = True, **params: Any) -> Dict[str, Any]:
        """Calls ``method`` on the session, mirroring the counters of its answer unless told not
        to; a dead server is restarted and the call made again once. Raises RpcError (the engine
        or the request failed) or ServerGone."""
        for attempt in (1, 2):
            try:
                self._ensure_server()
                answer = self._raw(method, params)
                if mirror:
                    self._mirror(answer)
                return answer
            except NotStartedYet:
                raise
            except ServerGone as error:
                if attempt == 2:
                    raise
                logger.warning("ctxhost: %s; starting it again", error)
                self._drop_server()
        raise AssertionError("unreachable")

    def _mirror(self, answer: Dict[str, Any]) -> None:
        counters = answer.get("counters") or {}
        for counter in COUNTERS:
            if counter in counters:
                setattr(self, counter, int(counters[counter]))
        self.compression_count = int(counters.get("compression_count", 0)) + self._count_carried
        # Hermes reads threshold_percent too (its preflight, its checks of
        # `threshold_tokens == int(context_length * threshold_percent)`); ctxhost's engine decides
        # the threshold, so the share is derived from it, nudged up past float rounding.
        if self.context_length:
            share = self.threshold_tokens / self.context_length
            while int(self.context_length * share) < self.threshold_tokens:
                share = math.nextafter(share, 1.0)
            self.threshold_percent = share

    def close(self) -> None:
        """Stops the server; its sessions end (``on_session_end``) first."""
        if self._server is not None:
            self._server.close()
        self._server = None
        self._session = None
        _live.discard(self)

    def _failed(self, method: str, error: Exception) -> None:
        if isinstance(error, NotStartedYet):
            # Said once, when the start failed.
            logger.debug("ctxhost: `%s` failed: %s", method, error)
        else:
            logger.warning("ctxhost: `%s` failed: %s", method, error)

    # -- the contract ------------------------------------------------------------------------

    def update_model(
        self,
        model: str,
        context_length: int,
        base_url: str = "",
        api_key: str = "",
        provider: str = "",
        api_mode: str = "",
    ) -> None:
        # The API key stays in Hermes: ctxhost's engines summarise through ctxhost's own config.
        values = {"model": model, "context_length": context_length, "base_url": base_url, "provider": provider}
        wanted = {key: value for key, value in values.items() if value is not None}
        try:
            self._call("update_model", model=wanted)
            self._model = wanted
        except ServerGone as error:
            # Told to the next server when the session is opened again.
            self._model = wanted
            self._failed("update_model", error)
            self.context_length = int(context_length or 0)
            self.threshold_tokens = int(self.context_length * self.threshold_percent)
        except RpcError as error:
            # Refused (a window of 0 tokens): the session keeps the model it had, and a server
            # started again later is not opened with one it would refuse.
            self._failed("update_model", error)

    def on_session_start(self, session_id: str, **kwargs) -> None:
        info = {key: kwargs[key] for key in SESSION_INFO_KEYS if kwargs.get(key) is not None}
        self._started = (session_id or "", info)
        try:
            self._call("on_session_start", session_id=session_id or "", info=info)
        except (RpcError, ServerGone) as error:
            self._failed("on_session_start", error)

    def on_session_end(self, session_id: str, messages: List[Dict[str, Any]]) -> None:
        try:
            self._call("on_session_end", session_id=session_id or "", messages=list(messages or []))
        except (RpcError, ServerGone) as error:
            self._failed("on_session_end", error)
        self._started = None

    def on_session_reset(self) -> None:
        self._count_carried = 0
        self._last_usage = None
        try:
            self._call("on_session_reset")
        except (RpcError, ServerGone) as error:
            self._failed("on_session_reset", error)
            super().on_session_reset()

    def update_from_response(self, usage: Dict[str, Any]) -> None:
        usage = usage or {}
        wire = {key: int(usage[key]) for key in USAGE_KEYS if isinstance(usage.get(key), (int, float))}
        wire.setdefault("prompt_tokens", 0)
        wire.setdefault("completion_tokens", 0)
        self._last_usage = wire
        try:
            self._call("update_from_response", usage=wire)
        except (RpcError, ServerGone) as error:
            self._failed("update_from_response", error)
            self.last_prompt_tokens = wire["prompt_tokens"]
            self.last_completion_tokens = wire["completion_tokens"]
            self.last_total_tokens = wire.get("total_tokens", wire["prompt_tokens"] + wire["completion_tokens"])

    def should_compress(self, prompt_tokens: int = None) -> bool:
        params = {} if prompt_tokens is None else {"prompt_tokens": max(0, int(prompt_tokens))}
        try:
            return bool(self._call("should_compress", **params)["value"])
        except (RpcError, ServerGone) as error:
            self._failed("should_compress", error)
            return False

    def should_compress_preflight(self, messages: List[Dict[str, Any]]) -> bool:
        try:
            return bool(self._call("should_compress_preflight", messages=list(messages))["value"])
        except (RpcError, ServerGone) as error:
            self._failed("should_compress_preflight", error)
            return False

    def has_content_to_compress(self, messages: List[Dict[str, Any]]) -> bool:
        try:
            return bool(self._call("has_content_to_compress", messages=list(messages))["value"])
        except (RpcError, ServerGone) as error:
            self._failed("has_content_to_compress", error)
            return True

    def compress(
        self,
        messages: List[Dict[str, Any]],
        current_tokens: Optional[int] = None,
        focus_topic: Optional[str] = None,
        force: bool = False,
        memory_context: str = "",
    ) -> List[Dict[str, Any]]:
        params: Dict[str, Any] = {"messages": list(messages)}
        if current_tokens is not None and current_tokens >= 0:
            params["current_tokens"] = int(current_tokens)
        if focus_topic:
            params["focus_topic"] = focus_topic
        try:
            answer = self._call("compress", **params)
        except (RpcError, ServerGone) as error:
            # As Hermes's own compressor does on an abort: the context stays as it was, and the
            # run loop shows why.
            self._failed("compress", error)
            self._last_compress_aborted = True
            self._last_summary_error = f"ctxhost: {error}"
            self._last_compression_made_progress = False
            return messages
        compressed = answer["value"]["messages"]
        self._last_compress_aborted = False
        self._last_summary_error = None
        self._last_compression_made_progress = answer["value"]["record"]["outcome"]["status"] == "applied"
        return compressed

    def get_tool_schemas(self) -> List[Dict[str, Any]]:
        try:
            self._ensure_server()
        except (RpcError, ServerGone) as error:
            self._failed("get_tool_schemas", error)
        return list(self._tools)

    def handle_tool_call(self, name: str, args: Dict[str, Any], **kwargs) -> str:
        params: Dict[str, Any] = {"name": name, "arguments": dict(args or {})}
        if kwargs.get("messages") is not None:
            params["messages"] = list(kwargs["messages"])
        try:
            return json.dumps(self._call("handle_tool_call", **params)["value"])
        except (RpcError, ServerGone) as error:
            return json.dumps({"error": f"ctxhost: {error}"})

    def get_status(self) -> Dict[str, Any]:
        try:
            # A read: the attributes stay as they are (Hermes may have written them).
            status = dict(self._call("get_status", mirror=False)["value"])
        except (RpcError, ServerGone) as error:
            self._failed("get_status", error)
            status = {}
        # The fields Hermes's run loop reads come from the attributes, as the base class gives
        # them: they mirror the engine's counters, and Hermes writes some of them itself (e.g.
        # `last_prompt_tokens = -1` after a compaction, until the next real usage).
        status.update(super().get_status())
        status.setdefault("engine", self._served_engine)
        return status

    def swap(self, engine: str) -> None:
        """Runs ``engine`` from now on in this session (``/engine NAME``); raises RpcError when
        it cannot be used, and the session keeps its engine."""
        answer = self._call("swap", engine=engine)
        self._tools = answer["value"].get("tools", [])
        self._served_engine = answer["value"].get("engine")
        self.settings = dataclasses.replace(self.settings, engine=engine)

    def compactions(self) -> List[Dict[str, Any]]:
        """ctxhost's record of every compress of this server's session."""
        return self._call("compactions")["value"]
