"""As root, an interpreter under a folder others cannot search (a pyenv
under a 0700 /root, a venv in a mkdtemp folder) runs in the sandbox: the
launcher binds it by the fd terp opened (issue 25, item 1). Where the
sandbox's uid truly cannot read it, one line with the safe fix first,
exit status 4 (the sandbox cannot run it), not 2 (usage)."""
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest


def need_root():
    if os.geteuid() != 0:
        pytest.fail("this test runs terp as root (the sandbox then drops to its own uid); "
                    "terp's CI runs as root")


@pytest.fixture
def private_venv():
    """A venv (of the system's Python, with its site packages) in a fresh
    0700 folder under /tmp, beside a file the sandbox must not see."""
    d = Path(tempfile.mkdtemp(prefix="terp-private-"))
    assert (d.stat().st_mode & 0o777) == 0o700
    (d / "secret.txt").write_text("not for the sandbox\n")
    v = d / "venv"
    p = subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip",
                        "--system-site-packages", str(v)], capture_output=True, text=True)
    assert p.returncode == 0, "python3 -m venv failed (Debian's python3-venv?): " + p.stderr
    yield v
    shutil.rmtree(d)


def test_venv_under_a_0700_folder_runs_as_root(terp, private_venv):
    need_root()
    code = ("import os, sys, pandas\n"
            "print(sys.prefix)\n"
            "print(sorted(os.listdir(os.path.dirname(sys.prefix))))\n"
            "try:\n"
            "    open(os.path.join(sys.prefix, 'x'), 'w')\n"
            "except OSError as e:\n"
            "    print('read-only', e.errno)\n")
    r = terp("exec", "--python", private_venv, "--json", "-c", code)
    assert r.rc == 0, r
    lines = r.stdout_of(1).splitlines()
    # The venv at its own path, nothing else of the private folder, and
    # still read-only (EROFS).
    assert lines == [str(private_venv), "['venv']", "read-only 30"], r
    assert not (private_venv / "x").exists()


def test_unreadable_venv_names_the_safe_fix_first(terp, private_venv):
    need_root()
    os.chmod(private_venv, 0o750)
    r = terp("exec", "--python", private_venv, "-c", "print(1)")
    assert r.rc == 4, r
    lines = [x for x in r.err.splitlines() if not x.startswith("terp: using")]
    assert len(lines) == 1, r
    line = lines[0]
    assert line.startswith("terp: the sandbox's own user cannot read %s (%s is mode 0750): "
                           "--python /usr/bin/python3 runs the system's Python instead "
                           "(python = /usr/bin/python3 in the config file keeps it), "
                           "or chmod -R o+rX %s" % (private_venv, private_venv, private_venv)), line
    assert r.out == ""
