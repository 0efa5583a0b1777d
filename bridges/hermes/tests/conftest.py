"""The end-to-end suite of the Hermes bridge: Hermes Agent 0.19.0 from PyPI, the real ``ctxhost``
binary, the lcm plugin staged by ``cargo xtask plugins``, and the e2e suite's local model server.

Run from the repository (``.ci/run`` does):

    .cache/hermes/venv/bin/python -m pytest bridges/hermes/tests

``CTXHOST_BIN`` names the binary (default: target/release/ctxhost); the plugins come from
``plugins/``. HERMES_HOME is a temporary directory whose config.yaml enables the plugin and
selects its engine; it is set here, before any Hermes module is imported.
"""

import json
import os
import pathlib
import subprocess
import tempfile

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
CTXHOST_BIN = pathlib.Path(os.environ.get("CTXHOST_BIN", REPO / "target" / "release" / "ctxhost"))
PLUGINS = REPO / "plugins"
TRANSCRIPTS = REPO / "examples" / "transcripts"
HERMES_HOME = pathlib.Path(tempfile.mkdtemp(prefix="hermes-home-"))

if not CTXHOST_BIN.is_file():
    raise pytest.UsageError(f"{CTXHOST_BIN} is not built: run `cargo xtask plugins` (or set CTXHOST_BIN)")
if not any((PLUGINS / "context_engine" / "lcm").glob("*.so")):
    raise pytest.UsageError("the lcm plugin is not staged: run `cargo xtask plugins`")

# ctxhost's own config: a threshold low enough that a short conversation compacts.
CTXHOST_CONFIG = HERMES_HOME / "ctxhost.yaml"
CTXHOST_CONFIG.write_text(
    f"""context:
  plugins_dir: {PLUGINS}
  tokenizer: rough
compression:
  threshold: 0.02
  protect_first_n: 1
  protect_last_n: 2
lcm:
  database: {HERMES_HOME / "lcm.sqlite"}
  fresh_tail: 8
auxiliary:
  compression:
    model: ""
"""
)
(HERMES_HOME / "config.yaml").write_text(
    f"""plugins:
  enabled: [ctxhost]
context:
  engine: ctxhost
ctxhost:
  engine: compressor
  binary: {CTXHOST_BIN}
  config: ctxhost.yaml
model:
  context_length: 64000
security:
  allow_lazy_installs: false
agent:
  environment_probe: false
"""
)
os.environ["HERMES_HOME"] = str(HERMES_HOME)


def transcript(name: str) -> list:
    """The OpenAI messages of one of the repository's example transcripts."""
    return json.loads((TRANSCRIPTS / name).read_text())["messages"]


def sequence_problems(messages: list) -> list:
    """What makes ``messages`` an invalid sequence: tool results answering no earlier call,
    calls never answered, a system message that is not first, a message without a role."""
    problems, open_calls = [], {}
    for index, message in enumerate(messages):
        role = message.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            problems.append(f"message {index}: role {role!r}")
        if role == "system" and index != 0:
            problems.append(f"message {index}: a system message after the first")
        for call in message.get("tool_calls") or []:
            open_calls[call["id"]] = index
        if role == "tool":
            if open_calls.pop(message.get("tool_call_id"), None) is None:
                problems.append(f"message {index}: answers no earlier call")
    problems.extend(f"call {call} (message {index}) is never answered" for call, index in open_calls.items())
    return problems


@pytest.fixture(scope="session")
def model_server():
    """The e2e suite's llama.cpp server with SmolLM2-135M, on a loopback port."""
    state = tempfile.mkdtemp(prefix="llm-")
    script = REPO / "tests" / "e2e" / "llm-server"
    started = subprocess.run(
        ["bash", str(script), "start", state, "--owner", str(os.getpid())], capture_output=True, text=True
    )
    assert started.returncode == 0, f"the model server did not start:\n{started.stderr}"
    yield started.stdout.strip().splitlines()[-1]
    subprocess.run(["bash", str(script), "stop", state], capture_output=True)
