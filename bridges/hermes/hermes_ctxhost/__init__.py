"""Hermes Agent plugin ``ctxhost``: a context engine served by ``ctxhost serve``.

Hermes finds it through the ``hermes_agent.plugins`` entry point, loads it when
``plugins.enabled`` lists ``ctxhost``, and selects its engine when ``context.engine: ctxhost``.
"""

import logging

from .settings import BridgeSettings, SettingsError

logger = logging.getLogger("hermes_ctxhost")

__all__ = ["register", "CtxhostEngine", "BridgeSettings"]


def register(ctx) -> None:
    """Hermes's plugin hook: registers the engine, or nothing when ctxhost cannot be used (Hermes
    then runs its own compressor and says so)."""
    from .engine import CtxhostEngine

    try:
        settings = BridgeSettings.from_hermes_config()
    except SettingsError as error:
        logger.warning("ctxhost: %s; no context engine registered", error)
        return
    ctx.register_context_engine(CtxhostEngine(settings))


def __getattr__(name):
    # `CtxhostEngine` imports Hermes's `agent.context_engine`; only when asked for.
    if name == "CtxhostEngine":
        from .engine import CtxhostEngine

        return CtxhostEngine
    raise AttributeError(name)
