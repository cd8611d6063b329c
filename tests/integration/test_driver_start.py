"""The driver's start (issue 14): what a trivial first cell waits for.
The driver imports only cheap modules at start, and from the second
sandbox on an interpreter it starts from its compiled code, cached by
terp in the user's cache folder (kernel_code.h) as a file the sandbox
can never write; a cache file anyone else could have written, a symlink
or a blob for another interpreter version is never run."""
import glob
import os
import stat
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
            "'linecache', 'tokenize', 're', 'enum', 'json', 'threading', 'signal', "
            "'base64') if m in sys.modules))", extra_env={"TERP_NO_PRELOAD": "1"})
    assert r.rc == 0, r
    assert r.stdout_of(1) == "[]\n", r


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


def test_second_sandbox_starts_from_the_cached_code(terp, cache):
    r = run(terp, cache, CMDLINE)
    assert r.rc == 0, r
    assert r.stdout_of(1) == "/run/terp/driver.py\n"
    files = code_files(cache)
    assert len(files) == 1, files
    st = os.lstat(files[0])
    assert stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()
    assert st.st_mode & 0o077 == 0
    r = run(terp, cache, CMDLINE, "import sys; print(sys.argv[0])",
            "def g():\n    return 1/0\ng()")
    assert r.rc == 1, r
    assert r.stdout_of(1) == "-c\n"          # the loader ran, not driver.py
    assert r.stdout_of(2) == "/run/terp/driver.py\n"
    tb = r.results()[2]["error"]["traceback"]
    assert '<cell 3>", line 2, in g' in tb and "return 1/0" in tb and "driver" not in tb


@pytest.mark.parametrize("how", ["others-writable", "symlink"])
def test_a_cache_file_others_could_write_is_never_run(terp, cache, tmp_path, how):
    assert run(terp, cache, "1").rc == 0
    [f] = code_files(cache)
    good = open(f, "rb").read()
    poison = blob_for("print('POISONED'); import os; os._exit(0)")
    os.unlink(f)
    if how == "others-writable":
        with open(f, "wb") as fh:
            fh.write(poison)
        os.chmod(f, 0o666)
    else:
        elsewhere = tmp_path / "poison.code"
        elsewhere.write_bytes(poison)
        os.chmod(elsewhere, 0o600)
        os.symlink(elsewhere, f)
    r = run(terp, cache, CMDLINE)
    assert r.rc == 0, r
    assert "POISONED" not in r.out
    assert r.stdout_of(1) == "/run/terp/driver.py\n"
    # ...and replaced by a good one of terp's own.
    st = os.lstat(f)
    assert stat.S_ISREG(st.st_mode) and st.st_mode & 0o077 == 0
    assert open(f, "rb").read() == good


def test_a_blob_for_another_version_compiles_the_source(terp, cache):
    assert run(terp, cache, "1").rc == 0
    [f] = code_files(cache)
    with open(f, "wb") as fh:
        fh.write(blob_for("print('WRONG VERSION RAN')", hexversion="0x0208"))
    r = run(terp, cache, CMDLINE, "6 * 7")
    assert r.rc == 0, r
    assert "WRONG VERSION RAN" not in r.out
    assert r.stdout_of(1) == "-c\n"
    assert r.results()[1]["value"] == "42"


def test_terp_exec_does_not_load_libcurl(tmp_path, env):
    # libcurl and its thirty libraries are loaded at the first request
    # (curl_lazy.c), libcrypto at the first WebSocket handshake
    # (crypto_lazy.c); a session without a model or a Jupyter server
    # never pays for them. The cell holds the session open while its
    # maps are read.
    from conftest import GATE, TERP, release
    e = dict(env, XDG_CACHE_HOME=str(tmp_path / "cache"))
    p = subprocess.Popen([str(TERP), "exec", "--json", "--python", PY, "-c",
                          "print('up', flush=True)\n" + GATE],
                         stdout=subprocess.PIPE, text=True, env=e, cwd=tmp_path)
    try:
        for line in p.stdout:
            if '"up' in line:
                break
        maps = open("/proc/%d/maps" % p.pid).read()
        release(e)
        assert p.wait(timeout=120) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert "libcurl" not in maps and "libgnutls" not in maps
    assert "libcrypto" not in maps and "libssl" not in maps
    assert "libc.so" in maps or "libc-" in maps
