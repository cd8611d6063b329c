"""Shared fixtures for the integration tests: the built binary, a private
XDG state/config per test, and helpers to run terp and parse --json."""
import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TERP = ROOT / "terp"


@pytest.fixture(autouse=True)
def _traversable_tmp(tmp_path):
    """As root, terp runs the sandbox under its own uid, which must reach
    the session folder; pytest makes its folders 0700, so terp would put
    the sandbox's folders under /var/lib/terp instead and leave them
    there. Search permission (not read) for others avoids that."""
    if os.geteuid() == 0:
        for p in (tmp_path, tmp_path.parent, tmp_path.parent.parent):
            st = os.stat(p)
            os.chmod(p, st.st_mode | 0o011)


@pytest.fixture
def env(tmp_path):
    """A clean environment: no API keys, private XDG folders."""
    e = {k: v for k, v in os.environ.items()
         if not k.endswith("_API_KEY") and not k.startswith(("OPENAI_", "AZURE_", "ANTHROPIC_"))}
    e["XDG_STATE_HOME"] = str(tmp_path / "state")
    e["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    e["HOME"] = str(tmp_path / "home")
    os.makedirs(e["HOME"], exist_ok=True)
    e.pop("NO_COLOR", None)
    return e


class Result:
    def __init__(self, proc):
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr
        self.events = []
        for line in proc.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                self.events.append(json.loads(line))

    def of(self, type_):
        return [e for e in self.events if e["type"] == type_]

    def results(self):
        return self.of("result")

    def stdout_of(self, cell):
        return "".join(e["text"] for e in self.events
                       if e["type"] == "stdout" and e["cell"] == cell)

    def __repr__(self):
        return "rc=%s\nstdout=%s\nstderr=%s" % (self.rc, self.out[-3000:], self.err[-3000:])


@pytest.fixture
def terp(env, tmp_path):
    """terp(*args, input=None, timeout=120) -> Result, run in tmp_path."""
    def run(*args, input=None, timeout=120, cwd=None, extra_env=None):
        e = dict(env)
        if extra_env:
            e.update(extra_env)
        p = subprocess.run([str(TERP), *map(str, args)], input=input, capture_output=True,
                           text=True, timeout=timeout, cwd=cwd or tmp_path, env=e,
                           errors="replace")
        return Result(p)
    return run
