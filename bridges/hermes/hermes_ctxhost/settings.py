"""The bridge's block of Hermes's ``config.yaml`` (``ctxhost:``), validated."""

import os
import shutil
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Union


class SettingsError(Exception):
    """The ``ctxhost:`` block cannot be used; the message names the key."""


@dataclass(frozen=True)
class BridgeSettings:
    """Where the server is and what it serves."""

    binary: str
    """The ``ctxhost`` executable (absolute)."""
    engine: str = "compressor"
    """The ctxhost engine each session runs."""
    config: Optional[Union[str, Dict[str, Any]]] = None
    """ctxhost's config: a path to its ``config.yaml``, or a mapping with the same keys."""
    plugins_dir: Optional[str] = None
    """ctxhost's plugins directory (holding ``context_engine/<name>/``), when the config names none."""
    args: tuple = field(default_factory=tuple)
    """Extra arguments before ``serve`` (e.g. ``-v``)."""
    base_dir: Optional[str] = None
    """Where the server runs: relative paths of an inline config are relative to it (HERMES_HOME)."""

    @classmethod
    def from_block(cls, block: Optional[Dict[str, Any]], base_dir: Optional[str] = None) -> "BridgeSettings":
        """Reads a ``ctxhost:`` block; relative paths are relative to ``base_dir`` (HERMES_HOME)."""
        block = block or {}
        if not isinstance(block, dict):
            raise SettingsError(f"`ctxhost` must be a mapping, got {type(block).__name__}")
        known = {"binary", "engine", "config", "plugins_dir", "args"}
        unknown = set(block) - known
        if unknown:
            raise SettingsError(
                f"unknown key `ctxhost.{sorted(unknown)[0]}` (known: {', '.join(sorted(known))})"
            )
        engine = block.get("engine", "compressor")
        if not isinstance(engine, str) or not engine.strip():
            raise SettingsError(f"`ctxhost.engine` must name a ctxhost engine, got {engine!r}")
        binary = block.get("binary") or "ctxhost"
        if not isinstance(binary, str):
            raise SettingsError(f"`ctxhost.binary` must be a path, got {binary!r}")
        found = _find_binary(binary, base_dir)
        if found is None:
            raise SettingsError(
                f"`ctxhost.binary`: {binary!r} is not an executable file"
                + (" and not on PATH" if os.sep not in binary else "")
            )
        config = block.get("config")
        if isinstance(config, str):
            config = _anchor(config, base_dir)
            if not os.path.isfile(config):
                raise SettingsError(f"`ctxhost.config`: {config} is not a file")
        elif config is not None and not isinstance(config, dict):
            raise SettingsError(f"`ctxhost.config` must be a path or a mapping, got {type(config).__name__}")
        plugins_dir = block.get("plugins_dir")
        if plugins_dir is not None:
            if not isinstance(plugins_dir, str):
                raise SettingsError(f"`ctxhost.plugins_dir` must be a path, got {plugins_dir!r}")
            plugins_dir = _anchor(plugins_dir, base_dir)
            if not os.path.isdir(plugins_dir):
                raise SettingsError(f"`ctxhost.plugins_dir`: {plugins_dir} is not a directory")
        args = block.get("args", [])
        if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
            raise SettingsError("`ctxhost.args` must be a list of strings")
        return cls(
            binary=found,
            engine=engine.strip(),
            config=config,
            plugins_dir=plugins_dir,
            args=tuple(args),
            base_dir=os.path.abspath(base_dir) if base_dir else None,
        )

    def server_args(self) -> list:
        """The arguments before ``serve``."""
        args = list(self.args)
        if self.plugins_dir is not None:
            args += ["--plugins-dir", self.plugins_dir]
        return args

    @classmethod
    def from_hermes_config(cls) -> "BridgeSettings":
        """Reads the ``ctxhost:`` block of ``$HERMES_HOME/config.yaml``."""
        from hermes_cli.config import get_hermes_home, load_config

        return cls.from_block(load_config().get("ctxhost"), str(get_hermes_home()))


def _anchor(path: str, base_dir: Optional[str]) -> str:
    path = os.path.expanduser(path)
    if base_dir and not os.path.isabs(path):
        path = os.path.join(base_dir, path)
    return os.path.abspath(path)


def _find_binary(binary: str, base_dir: Optional[str]) -> Optional[str]:
    if os.sep in binary:
        path = _anchor(binary, base_dir)
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    found = shutil.which(binary)
    return os.path.abspath(found) if found else None
