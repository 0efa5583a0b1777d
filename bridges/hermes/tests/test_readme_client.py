"""The README's protocol client example, run exactly as written there."""

import re
import subprocess
import sys

from conftest import CTXHOST_BIN, REPO


def test_the_readmes_client_example_compresses_a_transcript(tmp_path):
    readme = (REPO / "README.md").read_text()
    match = re.search(r"<!-- client-example -->\n```python\n(.*?)```", readme, re.S)
    assert match, "the README has no client example"
    client = tmp_path / "client.py"
    client.write_text(match.group(1))
    assert len(match.group(1).splitlines()) <= 25
    run = subprocess.run(
        [sys.executable, str(client), str(CTXHOST_BIN), "examples/transcripts/coupon-fix.json"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    before, after = re.match(r"(\d+) -> (\d+) messages;", run.stdout).groups()
    assert int(after) < int(before), run.stdout
    assert "'compression_count': 1" in run.stdout
