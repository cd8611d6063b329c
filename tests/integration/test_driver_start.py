"""The driver's start (issue 14): what a trivial first cell waits for.
The driver imports only cheap modules at start."""
import glob
import subprocess

import pytest

PY = "/usr/bin/python3"
CMDLINE = "print(open('/proc/self/cmdline', 'rb').read().split(b'\\0')[3].decode())"


@pytest.fixture
def cache(tmp_path):
    return tmp_path / "cache"


def run(terp, cache, *cells, **kw):
    args = ["exec", "--json", "--python", PY]
    for c in cells:
        args += ["-c", c]
    env = {"XDG_CACHE_HOME": str(cache)}
    env.update(kw.pop("extra_env", {}))
    return terp(*args, extra_env=env, **kw)


def code_files(cache):
    return glob.glob(str(cache / "terp" / "pyenv" / "driver-*.code"))


def blob_for(code, hexversion=None):
    """A blob in the cache's format, made by the sandbox's Python."""
    prog = ("import marshal, sys\n"
            "v = %s\n"
            "sys.stdout.buffer.write(b'TERPCODE' + v.to_bytes(8, 'little') + "
            "marshal.dumps(compile(%r, 'x', 'exec')))\n"
            % ("sys.hexversion" if hexversion is None else hexversion, code))
    return subprocess.run([PY, "-I", "-c", prog], capture_output=True, check=True).stdout


def test_first_cell_imports_nothing_it_does_not_need(terp, cache):
    r = run(terp, cache, "import sys; print(sorted(m for m in ('ast', 'traceback', "
            "'linecache', 'tokenize', 're', 'signal', 'base64') if m in sys.modules))",
            extra_env={"TERP_NO_PRELOAD": "1"})
    assert r.rc == 0, r
    # re comes with json (the channel's codec); the rest is deferred.
    assert r.stdout_of(1) in ("['re']\n", "[]\n"), r


def test_cells_behave_as_before_without_the_eager_imports(terp, cache):
    r = run(terp, cache, "def f():\n    return 1", "(y := 6 * 7)",
            "import inspect; print(inspect.getsource(f), end='')",
            "import warnings; warnings.warn('careful')", "1 +", "# only a comment",
            "y")
    assert r.rc == 1, r
    res = r.results()
    assert res[1]["value"] == "42"
    assert r.stdout_of(3) == "def f():\n    return 1"
    warn = "".join(e["text"] for e in r.events if e["type"] == "stderr" and e["cell"] == 4)
    assert "UserWarning: careful" in warn and "warnings.warn('careful')" in warn, warn
    assert res[4]["status"] == "error" and res[4]["error"]["ename"] == "SyntaxError"
    assert res[5]["status"] == "ok" and res[5]["value"] is None
    assert res[6]["value"] == "42"
