# terp's in-sandbox driver: runs cells in one persistent namespace and
# talks to terp over a private channel, one JSON object per line. It is
# shipped inside the terp binary and started as `python3 -I -u driver.py`
# with fd 3 = commands from terp, fd 4 = events to terp, fd 1/2 = the
# cell's stdout/stderr pipes. Everything here treats user code as able to
# do anything Python can: the channel is moved to high fds, stdout/stderr
# are restored for every cell (at the end of the one before), and the
# host validates every frame.
# Only what the first cell needs is imported here, and cheap modules at
# that (C ones where Python's own modules pull in re, enum or the ast
# machinery): the start of this file is on every session's path to its
# first result. traceback, linecache, threading and the ast module come
# when a cell needs them (an error, a statement cell, the preload); json
# only where _json's C codec cannot be set up (_codec).
import _json
import _signal
import _thread
import binascii
import builtins
import io
import os
import select
import stat
import sys
import time

# This module's code, which terp caches (kernel_code.h) when it asks.
_MODULE_CODE = sys._getframe(0).f_code

OUT_DIR = os.environ.get("TERP_OUT_DIR", "/workspace/out")
ARTIFACT_MAX = int(os.environ.get("TERP_ARTIFACT_MAX", str(64 << 20)))
CHUNK = 192 * 1024
MAX_ARTIFACTS = 64     # per cell: the host's default cap (it counts too)
MAX_SKIPS = 100        # "not copied" frames per cell; then one with the count
TEXT_MAX = 64 * 1024   # each of value, exception text and traceback
NAME_MAX = 256         # an exception's type name

_wlock = _thread.allocate_lock()
_default_switch = sys.getswitchinterval()
_running = False  # a cell is executing: SIGINT raises KeyboardInterrupt


def _move_high(fd, target):
    os.dup2(fd, target)
    os.close(fd)
    os.set_inheritable(target, False)
    return target


def _setup_fds():
    # Channel fds go as high as RLIMIT_NOFILE allows, so a casual
    # os.close(3) or a subprocess does not see them.
    import resource
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    top = min(soft, 4096) - 1
    cin = _move_high(3, top - 3)
    cout = _move_high(4, top - 2)
    out_saved = os.dup(1)
    err_saved = os.dup(2)
    out_saved = _move_high(out_saved, top - 1)
    err_saved = _move_high(err_saved, top)
    # Whatever else leaked in (bwrap's fds) is closed.
    os.closerange(3, top - 3)
    return cin, cout, out_saved, err_saved


CIN, COUT, OUT_SAVED, ERR_SAVED = _setup_fds()


def _stdio(fd, like):
    # Like Python's own -u stdio, but closefd=False: a cell's
    # sys.stdout.close() closes this object only, never fd 1, and
    # _restore_stdio makes a new one.
    f = io.TextIOWrapper(io.FileIO(fd, "w", closefd=False),
                         encoding=like.encoding, errors=like.errors,
                         line_buffering=True, write_through=True)
    f.mode = "w"
    return f


# Python's own stdio objects stay referenced: they own fd 1 and 2 and
# would close them when collected.
_PY_STDIO = (sys.__stdout__, sys.__stderr__)
_STDOUT = sys.stdout = sys.__stdout__ = _stdio(1, _PY_STDIO[0])
_STDERR = sys.stderr = sys.__stderr__ = _stdio(2, _PY_STDIO[1])


class _ScanContext:
    # What _json.make_scanner reads from json.JSONDecoder: the defaults.
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = None
    memo = None


def _constant(name):
    raise ValueError("not JSON: " + name)


def _codec():
    """(dumps, loads) as json's with ensure_ascii and compact separators,
    from _json's C scanner and encoder directly: the json package
    imports re, and with it enum and the regex compiler, at every start.
    Their signatures are private, so the pair is checked on a sample
    and json itself is used when anything differs."""
    sample = {"ev": "x\u00e9\n\"", "n": [1, -2.5, None, True, False], "o": {}}
    want = '{"ev":"x\\u00e9\\n\\"","n":[1,-2.5,null,true,false],"o":{}}'
    try:
        _ScanContext.parse_constant = _constant
        scan = _json.make_scanner(_ScanContext())
        enc = _json.make_encoder(None, None, _json.encode_basestring_ascii, None,
                                 ":", ",", False, False, True)

        def dumps(obj):
            return "".join(enc(obj, 0))

        def loads(text):
            if isinstance(text, (bytes, bytearray)):
                text = text.decode("utf-8")
            text = text.strip(" \t\r\n")
            try:
                obj, end = scan(text, 0)
            except StopIteration:
                raise ValueError("not JSON") from None
            if end != len(text):
                raise ValueError("not JSON: extra data")
            return obj
        if dumps(sample) == want and loads(want) == sample:
            return dumps, loads
    except Exception:
        pass
    import json

    def dumps(obj):
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":"))
    return dumps, json.loads


_dumps, _loads = _codec()


def send(obj):
    data = (_dumps(obj) + "\n").encode()
    with _wlock:
        view = memoryview(data)
        while view:
            n = os.write(COUT, view)
            view = view[n:]


_nint = 0  # SIGINTs seen (terp says in each exec how many it had sent)


def _on_sigint(signum, frame):
    global _nint
    _nint += 1
    if _running:
        raise KeyboardInterrupt
    # Between cells an interrupt has nothing to stop; one that came for a
    # cell before its code ran is counted, and _run delivers it.


_signal.signal(_signal.SIGINT, _on_sigint)


# ---------------------------------------------------------------- input

class StdinNotImplementedError(NotImplementedError):
    """As IPython's: the cell asked for input where nobody can answer."""


_NO_INPUT = ("this cell cannot ask for input here (terp runs it without anyone"
             " to answer: put the value in the code instead)")


def _no_input(*args, **kwargs):
    raise StdinNotImplementedError("input(): " + _NO_INPUT)


class _NoStdin(io.TextIOBase):
    """sys.stdin of a cell: reading raises at once with one clear line
    instead of an EOFError (or a wait until the cell's time limit)."""
    encoding = "utf-8"
    name = "<stdin>"
    mode = "r"

    def readable(self):
        return True

    def fileno(self):
        return 0  # /dev/null: a subprocess reading it gets EOF

    def isatty(self):
        return False

    def read(self, size=-1):
        raise StdinNotImplementedError("sys.stdin: " + _NO_INPUT)

    readline = read

    def readlines(self, hint=-1):
        raise StdinNotImplementedError("sys.stdin: " + _NO_INPUT)

    def __iter__(self):
        raise StdinNotImplementedError("sys.stdin: " + _NO_INPUT)


_STDIN = _NoStdin()


def _no_getpass(prompt="Password: ", stream=None):
    raise StdinNotImplementedError("getpass(): " + _NO_INPUT)


def _patch_getpass(module):
    module.getpass = lambda prompt="Password: ", stream=None: (
        _ask_getpass(prompt) if _asking else _no_getpass())


_getpass_hooked = False


PROMPT_MAX = 1024   # characters of a prompt sent (the host bounds it too)
_asking = False    # the running cell may ask terp's user (exec's "stdin")


def _ask(prompt, password=False):
    """Jupyter's stdin request: the prompt goes to terp, which asks its
    user on the input line; the reply is the line. Ctrl-C there
    interrupts the cell (KeyboardInterrupt out of the read), Ctrl-D is
    EOFError, a refusal (terp cannot ask now) is one line."""
    if not _asking:
        raise StdinNotImplementedError(_NO_INPUT)
    _flush()
    send({"ev": "input", "id": _cur_cell, "prompt": str(prompt)[:PROMPT_MAX],
          "password": bool(password)})
    parts = []
    while True:
        data = os.read(CIN, 1 << 16)
        if not data:
            raise EOFError("terp closed the channel")
        nl = data.find(b"\n")
        if nl < 0:
            parts.append(data)
            continue
        parts.append(data[:nl])
        try:
            reply = _loads(b"".join(parts))
        except Exception:
            reply = None
        if not isinstance(reply, dict) or reply.get("op") != "input_reply":
            parts = [data[nl + 1:]]
            continue
        if reply.get("eof"):
            raise EOFError("EOF when reading a line")
        if isinstance(reply.get("error"), str):
            raise StdinNotImplementedError(reply["error"])
        return str(reply.get("value", ""))


def _ask_input(prompt=""):
    return _ask(prompt)


def _ask_getpass(prompt="Password: ", stream=None):
    return _ask(prompt, True)


class _AskStdin(_NoStdin):
    """sys.stdin of a cell that may ask: a read is one line asked for."""

    def read(self, size=-1):
        return _ask("") + "\n"

    readline = read

    def readlines(self, hint=-1):
        return [self.readline()]

    def __iter__(self):
        return self

    def __next__(self):
        return self.readline()


_ASK_STDIN = _AskStdin()


def _install_input(asking=False):
    """Before every cell (a cell may have replaced them): input(),
    sys.stdin and getpass.getpass ask terp's user when asking (exec's
    "stdin"), else refuse at once."""
    global _getpass_hooked, _asking
    _asking = bool(asking)
    builtins.input = _ask_input if _asking else _no_input
    sys.stdin = sys.__stdin__ = _ASK_STDIN if _asking else _STDIN
    if "getpass" in sys.modules:
        _patch_getpass(sys.modules["getpass"])
    elif not _getpass_hooked:
        _getpass_hooked = True
        sys.meta_path.insert(0, _AfterImport("getpass", _patch_getpass))


# ---------------------------------------------------------------- figures

_patched = False
_patch_lock = _thread.allocate_lock()


def _pyplot():
    """matplotlib.pyplot if it is imported, and not still being imported
    by another thread (the preload)."""
    mod = sys.modules.get("matplotlib.pyplot")
    if mod is None or getattr(getattr(mod, "__spec__", None), "_initializing", False):
        return None
    return mod


def _patch_pyplot():
    """plt.show() saves and closes open figures instead of doing nothing."""
    if _pyplot() is None:
        return
    with _patch_lock:
        try:
            _patch_pyplot_locked()
        except Exception as e:  # a patch is a nicety, never a failure
            print("terp: matplotlib hooks not installed: %s" % e, file=sys.stderr)


def _patch_pyplot_locked():
    global _patched
    if _patched or "matplotlib.pyplot" not in sys.modules:
        return
    plt = sys.modules["matplotlib.pyplot"]
    figure = sys.modules["matplotlib.figure"].Figure
    real_savefig = figure.savefig

    def show(*args, **kwargs):
        _save_figures()

    def savefig(self, *args, **kwargs):
        # A figure the code saved itself is not saved again at the end.
        self._terp_saved = True
        return real_savefig(self, *args, **kwargs)

    plt.show = show
    figure.savefig = savefig
    _patched = True


class _AfterImport:
    """Runs after(module) as soon as anyone imports the module named
    (a cell, the preload, the driver itself), whoever wins the race."""

    def __init__(self, module, after):
        self.module = module
        self.after = after

    def find_spec(self, name, path, target=None):
        if name != self.module:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        else:
            return None
        real_exec = getattr(spec.loader, "exec_module", None)
        if real_exec is None or isinstance(spec.loader, type):
            return spec  # a class (frozen, builtin) is shared: not patched

        after = self.after

        def exec_module(module):
            real_exec(module)
            after(module)
        spec.loader.exec_module = exec_module
        return spec


def _after_pyplot(module):
    """Patches pyplot as soon as it is imported, so a cell that imports
    it and saves a figure gets the patched savefig."""
    with _patch_lock:
        try:
            _patch_pyplot_locked()
        except Exception as e:  # a patch is a nicety, never a failure
            print("terp: matplotlib hooks not installed: %s" % e, file=sys.stderr)


sys.meta_path.insert(0, _AfterImport("matplotlib.pyplot", _after_pyplot))
sys.meta_path.insert(0, _AfterImport("linecache", lambda module: _flush_sources()))

_fig_count = 0
_cur_cell = 0


def _save_figures():
    global _fig_count
    plt = _pyplot()
    if plt is None:
        return
    for num in list(plt.get_fignums()):
        fig = plt.figure(num)
        if getattr(fig, "_terp_saved", False):
            plt.close(fig)
            continue
        _fig_count += 1
        label = fig.get_label() or ""
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in label)[:40]
        name = "figure-%d-%d%s.png" % (_cur_cell, _fig_count, ("-" + safe) if safe else "")
        try:
            os.makedirs(OUT_DIR, exist_ok=True)
            fig.savefig(os.path.join(OUT_DIR, name), dpi=100)
        except Exception as e:  # a broken figure must not break the cell
            print("terp: could not save figure %s: %s" % (num, e), file=sys.stderr)
        plt.close(fig)


# ---------------------------------------------------------------- artifacts

_seen = {}
_scan_prefixes = []  # the folders the last scan searched ("" is out/)
_scan_count = 0      # and the entries it saw


def _listdir(dfd):
    """os.listdir(dfd) in 5 system calls rather than 8 (no dup, fcntl
    and rewind of the fd): the same folder, through its /proc link."""
    try:
        return os.listdir("/proc/self/fd/%d" % dfd)
    except OSError:
        return os.listdir(dfd)


def _scan_out():
    """Files under out/ created or changed since the last scan, as
    (dir_fd, name, relative path), every dir fd opened (to close), and
    the new folders not searched, as (relative path, reason)."""
    global _scan_count
    found, dirs, skipped = [], [], []
    _scan_prefixes.clear()
    _scan_count = 0
    try:
        top = os.open(OUT_DIR, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return found, dirs, skipped
    dirs.append(top)
    stack = [(top, "")]
    while stack:
        dfd, prefix = stack.pop()
        try:
            entries = sorted(_listdir(dfd))
        except OSError:
            continue
        _scan_prefixes.append(prefix)
        _scan_count += len(entries)
        for name in entries:
            rel = prefix + name
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except OSError:
                continue
            key = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode)
            if stat.S_ISDIR(st.st_mode):
                if rel.count("/") < 4 and len(dirs) < 64:
                    try:
                        sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW,
                                      dir_fd=dfd)
                        dirs.append(sub)
                        stack.append((sub, rel + "/"))
                    except OSError:
                        pass
                elif _seen.get(rel) != key:
                    # Not silently: the files in it are not copied.
                    _seen[rel] = key
                    skipped.append((rel + "/", "folder not searched (over 4 levels or 64 folders deep)"))
                continue
            if _seen.get(rel) != key:
                _seen[rel] = key
                found.append((dfd, name, rel))
    return found, dirs, skipped


# With WATCH_MIN entries in out/ or more, an inotify watch on its folders
# says what changed, and only those names are looked at after a cell: a
# scan costs microseconds per file (10,000 files: 40 ms a cell). The
# watch is a hint, never trusted more than a scan: anything it cannot
# name (an overflow, a folder created or moved, its fd no longer ours)
# and the cell after folders were added get the full scan.
WATCH_MIN = 256
# ...and in a long session whatever out/ holds: from its WATCH_CELLS-th
# cell, or at once where ctypes is loaded already (numpy imports it):
# the scan of even an empty out/ is 6 system calls a cell, the watch's
# look 1 (2 where its fd could not go high), and ctypes' import (4-12 ms) is paid where it pays off.
WATCH_CELLS = 500
_cells_seen = 0
_IN_MASK = (0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800
            | 0x1000000 | 0x2000000)  # changes, self events, ONLYDIR, DONT_FOLLOW
_IN_RESCAN = 0x400 | 0x800 | 0x2000 | 0x4000 | 0x8000 | 0x40000000
_watch = None
_watch_failed = False


class _OutWatch:
    def __init__(self):
        import ctypes
        self._libc = ctypes.CDLL(None, use_errno=True)
        fd = self._libc.inotify_init1(0o4000 | 0o2000000)  # NONBLOCK, CLOEXEC
        if fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        st = os.fstat(fd)
        self.ident = (st.st_dev, st.st_ino)
        # Beside the channel, out of a cell's way (a cell's closerange or
        # open() does not reach it), where that number is free: then
        # each look is one read, no fstat to check the fd is still ours.
        self.high = False
        try:
            os.fstat(CIN - 1)
        except OSError:
            try:
                fd = _move_high(fd, CIN - 1)
                self.high = True
            except OSError:
                pass
        self.fd = fd
        self.wd = {}      # watch descriptor -> folder prefix
        self.dirty = True  # the next cell scans in full

    def add(self, prefixes):
        """Watches these folders (the same folder keeps its descriptor);
        whether any was new. A folder that cannot be watched (the user's
        watch limit) ends the watch: OSError."""
        new = False
        for prefix in prefixes:
            path = os.fsencode(os.path.join(OUT_DIR, prefix))
            wd = self._libc.inotify_add_watch(self.fd, path, _IN_MASK)
            if wd < 0:
                raise OSError("inotify_add_watch")
            if self.wd.get(wd) != prefix:
                self.wd[wd] = prefix
                new = True
        return new

    def _read(self):
        if not self.high:
            st = os.fstat(self.fd)
            if (st.st_dev, st.st_ino) != self.ident:
                raise OSError("the watch's fd was replaced")
        out = b""
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return out
            if not data:
                return out
            out += data

    def changes(self):
        """The relative paths named since the last call; None: scan all."""
        data = self._read()
        names, rescan = set(), False
        off = 0
        while off + 16 <= len(data):
            wd = int.from_bytes(data[off:off + 4], "little", signed=True)
            mask = int.from_bytes(data[off + 4:off + 8], "little")
            n = int.from_bytes(data[off + 12:off + 16], "little")
            name = data[off + 16:off + 16 + n].rstrip(b"\0")
            off += 16 + n
            prefix = self.wd.get(wd)
            if mask & 0x8000:  # IN_IGNORED: that folder's watch is gone
                self.wd.pop(wd, None)
            if mask & _IN_RESCAN or prefix is None:
                rescan = True
            elif name:
                names.add(prefix + os.fsdecode(name))
        return None if rescan else names

    def close(self):
        try:
            os.close(self.fd)
        except OSError:
            pass


def _stat_names(names):
    """_scan_out's answer for the named paths only."""
    found, dirs = [], []
    by_dir = {}
    for rel in sorted(names):
        head, _, name = rel.rpartition("/")
        by_dir.setdefault(head, []).append(name)
    try:
        top = os.open(OUT_DIR, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return found, dirs, []
    dirs.append(top)
    for head, entries in by_dir.items():
        dfd = top
        try:
            for part in head.split("/") if head else ():
                dfd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dfd)
                dirs.append(dfd)
        except OSError:
            continue
        prefix = head + "/" if head else ""
        for name in entries:
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                continue
            rel = prefix + name
            key = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode)
            if _seen.get(rel) != key:
                _seen[rel] = key
                found.append((dfd, name, rel))
    return found, dirs, []


def _changed_out():
    """What _scan_out answers, from the watch where there is one."""
    global _watch, _watch_failed, _cells_seen
    _cells_seen += 1
    w = _watch
    if w is not None and not w.dirty:
        try:
            names = w.changes()
        except OSError:
            names = None
            w.close()
            _watch = w = None
        if names is not None:
            return _stat_names(names) if names else ([], [], [])
    if w is not None:
        try:
            w._read()  # what is queued: the scan sees it all
        except OSError:
            w.close()
            _watch = w = None
        else:
            w.dirty = False
    r = _scan_out()
    try:
        if w is not None:
            w.dirty = w.add(_scan_prefixes)  # new folders: watched from now on
        elif (_scan_count >= WATCH_MIN or _cells_seen >= WATCH_CELLS
              or "ctypes" in sys.modules) and not _watch_failed:
            _watch = w = _OutWatch()
            w.add(_scan_prefixes)
    except Exception:  # no ctypes, no inotify, its limit: the scan it is
        if w is not None:
            w.close()
        _watch = None
        _watch_failed = True
    return r


def _close_all(fds):
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _send_artifacts(cell):
    found, dirs, skipped = _changed_out()
    if not (found or dirs or skipped):
        return  # the usual cell: nothing new, no fd to close
    try:
        for rel, why in skipped[:MAX_SKIPS]:
            send({"ev": "artifact_skip", "id": cell, "name": rel, "reason": why})
        for dfd, name, rel in found[:MAX_ARTIFACTS]:
            _send_one(cell, dfd, name, rel)
        over = found[MAX_ARTIFACTS:]
        why = "cap reached (%d artifacts per cell)" % MAX_ARTIFACTS
        for _, _, rel in over[:MAX_SKIPS]:
            send({"ev": "artifact_skip", "id": cell, "name": rel, "reason": why})
        if len(over) > MAX_SKIPS:
            send({"ev": "artifact_skip", "id": cell,
                  "name": "(%d more files)" % (len(over) - MAX_SKIPS), "reason": why})
    finally:
        _close_all(dirs)


def _send_one(cell, dfd, name, rel):
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=dfd)
    except OSError as e:
        send({"ev": "artifact_skip", "id": cell, "name": rel, "reason": e.strerror or str(e)})
        return
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            send({"ev": "artifact_skip", "id": cell, "name": rel, "reason": "not a regular file"})
            return
        if st.st_size > ARTIFACT_MAX:
            send({"ev": "artifact_skip", "id": cell, "name": rel,
                  "reason": "too large (%d bytes)" % st.st_size})
            return
        send({"ev": "artifact", "id": cell, "name": rel, "size": st.st_size})
        total, reason = 0, None
        while True:
            data = os.read(fd, CHUNK)
            if not data:
                break
            total += len(data)
            if total > ARTIFACT_MAX:
                reason = "grew past the size cap"
                break
            send({"ev": "chunk", "data": binascii.b2a_base64(data, newline=False).decode()})
        end = {"ev": "artifact_end", "size": total}
        if reason:
            end["reason"] = reason
        send(end)
    except OSError as e:
        send({"ev": "artifact_end", "size": -1, "reason": e.strerror or str(e)})
    finally:
        os.close(fd)


# ---------------------------------------------------------------- environment

# The common data packages (import name, distribution name), as terp's
# pyenv.c lists them: the host checks the answer against its own list.
_PROBE_PKGS = [("pandas", "pandas"), ("numpy", "numpy"), ("polars", "polars"),
               ("pyarrow", "pyarrow"), ("duckdb", "duckdb"), ("scipy", "scipy"),
               ("sklearn", "scikit_learn"), ("statsmodels", "statsmodels"),
               ("matplotlib", "matplotlib"), ("seaborn", "seaborn"),
               ("openpyxl", "openpyxl")]


def _probe():
    """What this interpreter has, as pyenv_probe_script answers: found,
    not imported (find_spec), versions from the *.dist-info names, first
    on sys.path wins. Before the session's site directory joins sys.path:
    the answer describes the user's environment and is cached for it."""
    dists = {}
    for p in sys.path:
        try:
            names = os.listdir(p or ".")
        except OSError:
            continue
        for e in names:
            for suf in (".dist-info", ".egg-info"):
                if e.endswith(suf):
                    n, _, v = e[:-len(suf)].partition("-")
                    n = n.lower().replace("-", "_").replace(".", "_")
                    dists.setdefault(n, v.split("-")[0])
    found = {}
    for mod, dist in _PROBE_PKGS:
        found[mod] = dists.get(dist, "") if _have(mod) else None
    return {"terp_pyenv_probe": 1, "version": sys.version.split()[0], "packages": found}


# The session's own site directory: pip installs there (PIP_TARGET, which
# also gets past PEP 668's "externally managed" marker, and works inside
# a venv), never into the user's environment (bound read-only). It goes
# last on sys.path: what the environment has wins, so a dependency pip
# fetched again (--target installs every one) cannot shadow the numpy
# that pandas was built against.
SITE = None
_site_stamp = None
_site_dists = set()
EGRESS = os.environ.get("TERP_EGRESS") == "1"


def _site_state():
    try:
        st = os.stat(SITE)
        return (st.st_mtime_ns, st.st_ino)
    except (OSError, TypeError):
        return None


def _dists_in(d):
    try:
        return {e for e in os.listdir(d) if e.endswith(".dist-info")}
    except OSError:
        return set()


def _setup_site():
    global SITE, _site_stamp, _site_dists
    base = os.environ.get("TERP_SITE_DIR")
    if not base:
        return
    d = os.path.join(base, "python%d.%d" % sys.version_info[:2])
    try:
        os.makedirs(d, exist_ok=True)
    except OSError:
        return
    SITE = d
    if d not in sys.path:
        sys.path.append(d)
    os.environ["PIP_TARGET"] = d
    _site_stamp = _site_state()
    _site_dists = _dists_in(d)


# What can change the site folder from a cell, as audit events: a
# process (pip, and the host kills a cell's processes at its end), a
# file written or moved, ctypes. Without one, the folder is looked at
# (a stat) only every SITE_MS: the stat was one of a trivial cell's
# seven system calls. Without the audit hook (egress on), every cell.
_SITE_EVENTS = frozenset((
    "subprocess.Popen", "os.system", "os.posix_spawn", "os.exec", "os.spawn",
    "os.fork", "os.forkpty", "pty.spawn", "os.rename", "os.mkdir", "os.remove",
    "os.rmdir", "os.symlink", "os.link", "os.truncate", "os.chmod", "os.utime",
    "os.chown", "shutil.copyfile", "shutil.copytree", "shutil.move", "shutil.rmtree",
    "shutil.unpack_archive", "sqlite3.connect"))
_O_WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
SITE_MS = 0.05
_site_touched = True   # an audit event that may have changed it, since the look
_site_looked = 0.0     # time.monotonic() of the last look


def _site_event(event, args):
    """Whether an audited event may change a folder (the audit hook's)."""
    if event in _SITE_EVENTS or event.startswith("ctypes."):
        return True
    if event == "open" and len(args) >= 3:
        mode, flags = args[1], args[2]
        return ((isinstance(flags, int) and bool(flags & _O_WRITES))
                or (isinstance(mode, str) and any(c in mode for c in "wax+")))
    return False


def _site_after_cell(cell):
    """Tells terp what the cell installed (new *.dist-info entries), and
    drops the import system's cached listings of the folder, so that the
    next cell imports it (one stat when something may have changed it,
    or SITE_MS passed)."""
    global _site_dists, _site_stamp, _site_touched, _site_looked
    if SITE is None:
        return
    now = time.monotonic()
    if not _site_touched and not EGRESS and now - _site_looked < SITE_MS:
        return
    _site_touched = False
    _site_looked = now
    stamp = _site_state()
    if stamp == _site_stamp:
        return
    _site_stamp = stamp
    import importlib
    importlib.invalidate_caches()
    now = _dists_in(SITE)
    new = sorted(now - _site_dists)
    _site_dists = now
    pkgs = []
    for e in new[:256]:
        name, _, ver = e[:-len(".dist-info")].partition("-")
        pkgs.append([name, ver])
    if pkgs:
        send({"ev": "installed", "id": cell, "packages": pkgs})


def _set_env(env):
    """The user's pip index, from terp's exec command (never on bwrap's
    command line, which any local user can read with ps)."""
    if not isinstance(env, dict):
        return
    for k in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"):
        v = env.get(k)
        if isinstance(v, str) and "\0" not in v:
            os.environ[k] = v


def _start_forwarder():
    """The in-sandbox end of egress: egress_fwd.py relays every
    connection to 127.0.0.1:PORT to terp's proxy through the socket
    bound in. The listening socket is made here, before any cell runs,
    and handed over: a first cell's request cannot come too early."""
    if not EGRESS:
        return
    import socket
    port = int(os.environ.get("TERP_EGRESS_PORT", "3128"))
    try:
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.bind(("127.0.0.1", port))
        ls.listen(128)
    except OSError as e:
        print("terp: egress is not available: %s" % e, file=sys.stderr)
        return
    pid = os.fork()
    if pid == 0:
        try:
            # Its own process group (a cell's killpg does not reach it),
            # no Ctrl-C, nothing on the cell's output pipes.
            os.setpgid(0, 0)
            _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
            nul = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(nul, fd)
            os.dup2(ls.fileno(), 3)
            os.set_inheritable(3, True)
            os.execv(sys.executable, [sys.executable, "-I", "-S",
                                      "/run/terp/egress_fwd.py",
                                      "/run/terp/egress.sock", "--fd", "3"])
        finally:
            os._exit(127)
    ls.close()


# With no egress, a cell that starts pip or looks up a name is told why
# it cannot work and which setting changes that, once per cell, on its
# stderr (pip itself fails at once: PIP_NO_INDEX).
_NO_NET = ("terp: this sandbox has no network access, so %s; the user can "
           "allow hosts with --allow-host HOST (or /allow HOST in the notebook)\n")
_told = set()


def _tell(what):
    if what in _told:
        return
    _told.add(what)
    try:
        os.write(ERR_SAVED, (_NO_NET % what).encode())
    except OSError:
        pass


def _words(args):
    out = []
    for a in args:
        if isinstance(a, (list, tuple)):
            out += _words(a)
        elif isinstance(a, (str, bytes, os.PathLike)):
            a = os.fsdecode(a)
            out += a.replace("/", " ").split()
    return out


def _audit(event, args):
    # Runs for every audited event of every thread: cheap, and never
    # raises (an exception here would be the caller's).
    global _site_touched
    try:
        # any thread's, between cells too
        if not _site_touched and _site_event(event, args):
            _site_touched = True
    except Exception:
        _site_touched = True
    if not _running:
        return
    try:
        if event in ("subprocess.Popen", "os.system", "os.posix_spawn", "os.exec",
                     "os.spawn"):
            w = _words(args[:2])
            if "install" in w and any(x == "pip" or x.startswith("pip3") for x in w):
                _tell("pip cannot download packages")
        elif event == "socket.getaddrinfo":
            host = args[0]
            if isinstance(host, bytes):
                host = host.decode("ascii", "replace")
            if host and host not in ("localhost", "127.0.0.1", "::1", "0.0.0.0"):
                _tell("%s cannot be reached" % host[:100])
    except Exception:
        pass


# ---------------------------------------------------------------- IPython syntax
#
# Cells are written for IPython: `%magic` and `!cmd` lines, `%%magic`
# cells, display(), get_ipython(). IPython itself costs ~0.3 s to import
# and a bare venv lacks it, so the driver carries a compatible subset of
# its own, always on: _ipy_transform rewrites a cell as IPython's
# inputtransformer2 does (statement-start lines only, indented ones
# inside blocks too) into calls to get_ipython().run_line_magic() and
# friends, and _MAGICS below is the table those calls use. The rewrite
# keeps line numbers, so tracebacks point at the cell as written. A cell
# with neither '%' nor '!' is not scanned at all.

IPY_MACHINERY = "terp's built-in IPython subset"


class UsageError(Exception):
    """As IPython's: a magic used wrongly, shown as one line."""


def _ipy_scan_state(line, st):
    """Advances the scanner over one physical line: st = [quote, depth,
    continued], quote the open triple quote or None."""
    i, n = 0, len(line)
    quote, depth = st[0], st[1]
    while i < n:
        c = line[i]
        if quote is not None:
            if c == "\\":
                i += 2
                continue
            if line.startswith(quote, i):
                i += len(quote)
                quote = None
                continue
            i += 1
            continue
        if c == "#":
            break
        if c in "\"'":
            q3 = c * 3
            if line.startswith(q3, i):
                quote = q3
                i += 3
                continue
            # a one-line string: to its end (or the line's)
            j = i + 1
            while j < n and line[j] != c:
                j += 2 if line[j] == "\\" else 1
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        i += 1
    st[0], st[1] = quote, depth
    st[2] = quote is None and line.rstrip("\r\n").endswith("\\")


def _ipy_line(line):
    """The Python for one statement-start line, or None if it is Python."""
    body = line.lstrip(" \t")
    indent = line[:len(line) - len(body)]
    body = body.rstrip("\r\n")
    if not body:
        return None
    target = ""
    c = body[0]
    if c not in "%!":
        # x = !cmd, x = %magic
        eq = body.find("=")
        if eq <= 0 or eq + 1 >= len(body):
            return None
        rhs = body[eq + 1:].lstrip()
        lhs = body[:eq].rstrip()
        if not rhs or rhs[0] not in "%!" or rhs.startswith("%%") or not lhs:
            return None
        # an assignment target only, as IPython's rule (no string: in
        # print('N=%d' % n) the "=" is inside one)
        if lhs[-1] in "=!<>+-*/%&|^@:" or not all(ch.isalnum() or ch in "_ ,.[]()" for ch in lhs):
            return None
        try:
            compile(lhs + " = None", "<target>", "exec")
        except SyntaxError:
            return None
        target, body = lhs + " = ", rhs
        c = body[0]
    if c == "!":
        if body.startswith("!!"):
            call = "get_ipython().getoutput(%r)" % body[2:]
        elif target:
            call = "get_ipython().getoutput(%r)" % body[1:]
        else:
            call = "get_ipython().system(%r)" % body[1:]
    else:
        if body.startswith("%%"):
            return None
        rest = body[1:]
        name, _, args = rest.partition(" ")
        if not name or not (name[0].isalpha() or name[0] == "_"):
            return None
        call = "get_ipython().run_line_magic(%r, %r)" % (name, args.strip())
    return indent + target + call + "\n"


def _ipy_automagic(code):
    """A one-line cell `pip install x` / `pwd` / `cd dir`: a magic when
    the word names one and nothing in the namespace shadows it, as
    IPython's automagic (single-line cells only, as there)."""
    line = code.strip()
    name, _, rest = line.partition(" ")
    if "\n" in line or name not in _AUTOMAGIC or name in ns or hasattr(builtins, name):
        return None
    r = rest.lstrip()
    if r[:1] in ("=", "(", ".", "[", ",", ";") or r[:2] in ("+=", "-=", "*=", "/=", "==", "!="):
        return None
    return "get_ipython().run_line_magic(%r, %r)\n" % (name, rest.strip())


def _ipy_transform(code):
    """The cell as Python: IPython's syntax rewritten, else unchanged."""
    if "%" not in code and "!" not in code:
        if " " in code.strip() or code.strip() in _AUTOMAGIC:
            auto = _ipy_automagic(code)
            if auto is not None:
                return auto
        return code
    lines = code.splitlines(True)
    first = 0
    while first < len(lines) and not lines[first].strip():
        first += 1
    if first < len(lines) and lines[first].startswith("%%"):
        head = lines[first].rstrip("\r\n")[2:]
        name, _, args = head.partition(" ")
        body = "".join(lines[first + 1:])
        if body and not body.endswith("\n"):
            body += "\n"
        # The body keeps its line numbers in the cell (for tracebacks).
        return "\n" * first + "get_ipython().run_cell_magic(%r, %r, %r, %d)\n" % (
            name, args.strip(), body, first + 1)
    auto = _ipy_automagic(code)
    if auto is not None:
        return auto
    st = [None, 0, False]
    out = []
    changed = False
    for line in lines:
        if st[0] is None and st[1] == 0 and not st[2]:
            py = _ipy_line(line)
            if py is not None:
                out.append(py)
                changed = True
                continue
        _ipy_scan_state(line, st)
        out.append(line)
    return "".join(out) if changed else code


def _ipy_expand(cmd, depth=1):
    """IPython's var_expand on a shell line or magic argument: {expr}
    and $name from the user's namespace; what fails stays as written."""
    if "{" not in cmd and "$" not in cmd:
        return cmd
    out, i, n = [], 0, len(cmd)
    while i < n:
        c = cmd[i]
        if c == "$" and i + 1 < n and cmd[i + 1] == "$":
            out.append("$")
            i += 2
            continue
        if c == "$" and i + 1 < n and (cmd[i + 1].isalpha() or cmd[i + 1] == "_"):
            j = i + 1
            while j < n and (cmd[j].isalnum() or cmd[j] == "_"):
                j += 1
            name = cmd[i + 1:j]
            if name in ns:
                out.append(str(ns[name]))
            else:
                out.append(cmd[i:j])
            i = j
            continue
        if c == "{":
            if cmd.startswith("{{", i):
                out.append("{{")
                i += 2
                continue
            j = cmd.find("}", i)
            if j > i:
                try:
                    out.append(str(eval(cmd[i + 1:j], ns)))
                    i = j + 1
                    continue
                except Exception:
                    pass
        out.append(c)
        i += 1
    return "".join(out)


class SList(list):
    """IPython's list of output lines (x = !cmd): .s .n .l .grep .fields."""

    @property
    def s(self):
        return " ".join(self)

    @property
    def n(self):
        return "\n".join(self)

    @property
    def l(self):  # noqa: E743 - IPython's name
        return list(self)

    def grep(self, pattern, prune=False, field=None):
        import re
        rx = re.compile(pattern) if isinstance(pattern, str) else None
        test = (lambda s: rx.search(s)) if rx else pattern
        pick = [s for s in self if (test(s.split()[field] if field is not None and s.split() else s))]
        if prune:
            pick = [s for s in self if s not in pick]
        return SList(pick)

    def fields(self, *idx):
        rows = [ln.split() for ln in self]
        if not idx:
            return SList(" ".join(r) for r in rows)
        return SList(" ".join(r[i] for i in idx if -len(r) <= i < len(r)) for r in rows)


def _shell():
    return "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"


def _system(cmd):
    """!cmd: the command's output goes straight to the cell's pipes."""
    import subprocess
    _flush()
    rc = subprocess.call(_ipy_expand(cmd), shell=True, executable=_shell())
    ns["_exit_code"] = rc
    return None


def _getoutput(cmd):
    import subprocess
    _flush()
    p = subprocess.run(_ipy_expand(cmd), shell=True, executable=_shell(),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    ns["_exit_code"] = p.returncode
    return SList(p.stdout.decode("utf-8", "replace").splitlines())


def _cell_code(body, first, fname=None):
    """A magic's cell body compiled with its lines where they are in the
    cell, so tracebacks show them."""
    return _compile_cell("\n" * (first or 0) + _ipy_transform(body),
                         fname or "<cell %d>" % _cur_cell)


def _run_code(body, first=0, fname=None):
    if fname is not None:
        _add_source(fname, body)
    stmts, last = _cell_code(body, first, fname)
    if stmts is not None:
        exec(stmts, ns)
    if last is not None:
        return eval(last, ns)
    return None


def _fmt_time(t):
    # IPython's _format_time: 3 significant digits, s ms µs ns.
    if t >= 60.0:
        m, s = divmod(t, 60.0)
        h, m = divmod(m, 60.0)
        parts = [("h", h), ("min", m), ("s", s)]
        return " ".join("%d%s" % (v, u) for u, v in parts if v) or "0s"
    units = ["s", "ms", "\u00b5s", "ns"]
    scale = [1.0, 1e3, 1e6, 1e9]
    order = 3
    if t > 0.0:
        import math
        order = min(-int(math.floor(math.log10(t)) // 3), 3)
    return "%.*g %s" % (3, t * scale[order], units[order])


def _opts(args, flags, valued):
    """A magic's options as IPython's getopt-like parser: (opts, rest)."""
    import shlex
    try:
        words = shlex.split(args, posix=True)
    except ValueError:
        words = args.split()
    opts = {}
    i = 0
    while i < len(words) and words[i].startswith("-") and len(words[i]) > 1:
        w = words[i].lstrip("-")
        if w in valued and i + 1 < len(words):
            opts[w] = words[i + 1]
            i += 2
        elif w[:1] in valued and len(w) > 1:
            opts[w[:1]] = w[1:]
            i += 1
        elif w in flags:
            opts[w] = True
            i += 1
        else:
            break
    # what follows is code: the rest of the original text, not re-split
    rest = args
    for w in words[:i]:
        k = rest.find(w)
        rest = rest[k + len(w):] if k >= 0 else rest
    return opts, rest.strip()


def _m_time(args, cell=None, first=0):
    code = cell if cell is not None else args
    import resource
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    try:
        # A line's code is IPython's "<timed exec>"; a cell's keeps its lines.
        value = _run_code(code, first) if cell is not None else _run_code(code, 0, "<timed exec>")
    finally:
        c1, t1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        u, s = c1.ru_utime - c0.ru_utime, c1.ru_stime - c0.ru_stime
        print("CPU times: user %s, sys: %s, total: %s" % (_fmt_time(u), _fmt_time(s), _fmt_time(u + s)))
        print("Wall time: %s" % _fmt_time(t1 - t0))
    return value


class TimeitResult:
    def __init__(self, loops, repeat, timings):
        self.loops, self.repeat, self.all_runs = loops, repeat, timings
        self.timings = [t / loops for t in timings]
        self.best, self.worst = min(self.timings), max(self.timings)
        self.average = sum(self.timings) / len(self.timings)
        self.stdev = (sum((t - self.average) ** 2 for t in self.timings) / len(self.timings)) ** 0.5

    def __str__(self):
        return "%s \u00b1 %s per loop (mean \u00b1 std. dev. of %d run%s, %d loop%s each)" % (
            _fmt_time(self.average), _fmt_time(self.stdev), self.repeat,
            "" if self.repeat == 1 else "s", self.loops, "" if self.loops == 1 else "s")

    __repr__ = __str__


def _m_timeit(args, cell=None, first=0):
    import timeit
    opts, stmt = _opts(args, ("q", "o", "p"), ("n", "r"))
    setup = "pass"
    if cell is not None:
        setup, stmt = (stmt or "pass"), cell
    t = timeit.Timer(stmt, setup, globals=ns)
    repeat = int(opts.get("r", 7))
    if "n" in opts:
        number = int(opts["n"])
    else:
        number = 1
        for index in range(0, 10):
            number = 10 ** index
            if t.timeit(number) >= 0.2:
                break
    runs = t.repeat(repeat, number)
    res = TimeitResult(number, repeat, runs)
    if "q" not in opts:
        if res.worst > 4 * res.best and res.best > 0 and res.worst > 1e-6:
            print("The slowest run took %0.2f times longer than the fastest. This could mean "
                  "that an intermediate result is being cached." % (res.worst / res.best))
        print(res)
    return res if "o" in opts else None


def _m_cd(args):
    d = args.strip().strip("'\"") or os.path.expanduser("~")
    if d == "-":
        d = ns.get("_dh", [os.getcwd()])[-2] if len(ns.get("_dh", [])) > 1 else os.getcwd()
    d = os.path.expanduser(_ipy_expand(d))
    try:
        os.chdir(d)
    except OSError as e:
        print("[Errno %d] %s: %r" % (e.errno, e.strerror, d))
        return None
    ns.setdefault("_dh", []).append(os.getcwd())
    print(os.getcwd())


def _m_env(args):
    a = args.strip()
    if not a:
        return dict(os.environ)
    if "=" in a or " " in a:
        sep = "=" if "=" in a else " "
        k, _, v = a.partition(sep)
        k, v = k.strip(), _ipy_expand(v.strip())
        os.environ[k] = v
        print("env: %s=%s" % (k, v))
        return None
    if a not in os.environ:
        raise UsageError("Environment does not have key: %s" % a)
    return os.environ[a]


def _user_names(kinds=()):
    names = []
    for k, v in ns.items():
        if k.startswith("_") or k in ("In", "Out", "exit", "quit", "get_ipython"):
            continue
        if kinds and type(v).__name__ not in kinds:
            continue
        names.append(k)
    return sorted(names)


def _m_who(args):
    names = _user_names(tuple(args.split()))
    if not names:
        print("Interactive namespace is empty." if not args.split() else "No variables match your requested type.")
        return
    print("".join(n + "\t " for n in names))


def _m_who_ls(args):
    return _user_names(tuple(args.split()))


def _m_whos(args):
    names = _user_names(tuple(args.split()))
    if not names:
        print("Interactive namespace is empty." if not args.split() else "No variables match your requested type.")
        return
    types_ = [type(ns[n]).__name__ for n in names]
    vw = max(len("Variable"), max(len(n) for n in names)) + 3
    tw = max(len("Type"), max(len(t) for t in types_)) + 3
    print("Variable".ljust(vw) + "Type".ljust(tw) + "Data/Info")
    print("-" * (vw + tw + len("Data/Info")))
    for n, t in zip(names, types_):
        v = ns[n]
        try:
            s = str(v).replace("\n", "\\n")
        except Exception:
            s = "<unprintable>"
        if len(s) > 50:
            s = s[:25] + "<...>" + s[-25:]
        print(n.ljust(vw) + t.ljust(tw) + s)


def _m_matplotlib(args):
    # Any backend name: figures are captured as PNG files either way.
    os.environ["MPLBACKEND"] = "Agg"
    if "matplotlib" in sys.modules:
        try:
            sys.modules["matplotlib"].use("Agg")
        except Exception:
            pass


def _m_pip(args, prog="pip"):
    import shlex
    import subprocess
    _flush()
    try:
        words = shlex.split(_ipy_expand(args))
    except ValueError:
        words = args.split()
    subprocess.call([sys.executable, "-m", "pip"] + words)
    print("Note: you may need to restart the kernel to use updated packages.")


def _m_load_ext(args):
    name = args.strip()
    if name in ("autoreload", "storemagic", "memory_profiler", "line_profiler", "watermark"):
        return None  # accepted: terp's namespace does not reload modules
    import importlib
    mod = importlib.import_module(name)
    load = getattr(mod, "load_ipython_extension", None)
    if load is not None:
        load(get_ipython())


def _m_precision(args):
    a = args.strip()
    fmt = "%r" if not a else ("%." + a + "f" if a.isdigit() else a)
    _float_fmt[0] = None if fmt == "%r" else fmt
    if "numpy" in sys.modules:
        try:
            sys.modules["numpy"].set_printoptions(precision=int(a) if a.isdigit() else 8)
        except Exception:
            pass
    return fmt


def _m_accept(args):
    return None


def _m_reset(args):
    keep = {k: ns[k] for k in ("__name__", "__builtins__", "__doc__") if k in ns}
    ns.clear()
    ns.update(keep)


def _m_alias(prog):
    def run(args):
        return _system(prog + (" " + args if args else ""))
    return run


def _c_writefile(args, cell, first):
    opts, name = _opts(args, ("a", "append"), ())
    name = os.path.expanduser(_ipy_expand(name.strip().strip("'\"")))
    append = "a" in opts or "append" in opts
    exists = os.path.exists(name)
    if append:
        print("Appending to %s" % name)
    else:
        print("%s %s" % ("Overwriting" if exists else "Writing", name))
    with open(name, "a" if append else "w", encoding="utf-8") as f:
        f.write(cell)


class CapturedIO:
    """%%capture's result: .stdout, .stderr, .outputs, .show()."""

    def __init__(self, out, err, outputs):
        self._out, self._err, self.outputs = out, err, outputs

    @property
    def stdout(self):
        return self._out.getvalue() if self._out is not None else ""

    @property
    def stderr(self):
        return self._err.getvalue() if self._err is not None else ""

    def show(self):
        sys.stdout.write(self.stdout)
        sys.stderr.write(self.stderr)
        for o in self.outputs:
            display(o)

    __call__ = show


def _c_capture(args, cell, first):
    opts, name = _opts(args, ("no-stdout", "no-stderr", "no-display"), ())
    out = None if "no-stdout" in opts else io.StringIO()
    err = None if "no-stderr" in opts else io.StringIO()
    cap = CapturedIO(out, err, [])
    saved = sys.stdout, sys.stderr, _display_sink[0]
    if out is not None:
        sys.stdout = out
    if err is not None:
        sys.stderr = err
    if "no-display" not in opts:
        _display_sink[0] = cap.outputs
    try:
        _run_code(cell, first)
    finally:
        sys.stdout, sys.stderr, _display_sink[0] = saved
        if name.strip():
            ns[name.strip()] = cap


def _c_shell(prog):
    def run(args, cell, first):
        import subprocess
        _flush()
        p = subprocess.run([prog], input=cell.encode())
        if p.returncode:
            raise subprocess.CalledProcessError(p.returncode, cell.encode())
    return run


def _c_display(mime):
    def run(args, cell, first):
        display({mime: cell}, raw=True)
    return run


def _c_time(args, cell, first):
    return _m_time(args, cell, first)


def _c_timeit(args, cell, first):
    return _m_timeit(args, cell, first)


_MAGICS = {
    "matplotlib": _m_matplotlib, "pip": _m_pip, "conda": _m_pip,
    "time": _m_time, "timeit": _m_timeit, "cd": _m_cd,
    "pwd": lambda a: os.getcwd(), "env": _m_env, "set_env": _m_env,
    "who": _m_who, "whos": _m_whos, "who_ls": _m_who_ls,
    "load_ext": _m_load_ext, "reload_ext": _m_accept, "unload_ext": _m_accept,
    "autoreload": _m_accept, "aimport": _m_accept, "config": _m_accept,
    "xmode": _m_accept, "colors": _m_accept, "autosave": _m_accept,
    "precision": _m_precision, "reset": _m_reset, "pylab": _m_matplotlib,
    "ls": _m_alias("ls -F --color=never"), "ll": _m_alias("ls -F -l --color=never"),
    "cat": _m_alias("cat"), "mkdir": _m_alias("mkdir"), "rm": _m_alias("rm"),
    "cp": _m_alias("cp"), "mv": _m_alias("mv"), "rmdir": _m_alias("rmdir"),
    "system": lambda a: _getoutput(a), "sx": lambda a: _getoutput(a),
}
_CELL_MAGICS = {
    "time": _c_time, "timeit": _c_timeit, "writefile": _c_writefile,
    "file": _c_writefile, "capture": _c_capture, "bash": _c_shell("bash"),
    "sh": _c_shell("sh"), "script": None, "html": _c_display("text/html"),
    "HTML": _c_display("text/html"), "markdown": _c_display("text/markdown"),
    "latex": _c_display("text/latex"), "svg": _c_display("image/svg+xml"),
}
del _CELL_MAGICS["script"]
# Automagic (a one-line cell, no '%'), as IPython's default: the magics
# that read as commands.
_AUTOMAGIC = ("pip", "cd", "pwd", "ls", "ll", "env", "who", "whos", "timeit",
              "time", "matplotlib", "load_ext", "autoreload", "precision", "conda")


class _Shell:
    """What get_ipython() returns: the calls the rewritten cells make,
    and the few attributes libraries look for (pandas checks .kernel to
    print for a notebook rather than a terminal)."""

    kernel = True  # pandas' is_terminal(): "a Jupyter kernel"
    terp = IPY_MACHINERY
    config = {}    # what libraries read of an IPython shell's configuration

    @property
    def user_ns(self):
        return ns

    def run_line_magic(self, name, line, _stack_depth=1):
        fn = _MAGICS.get(name)
        if fn is None:
            raise UsageError("Line magic function `%%%s` not found." % name)
        return fn(line)

    def run_cell_magic(self, name, line, cell, first=0):
        fn = _CELL_MAGICS.get(name)
        if fn is None:
            if name in _MAGICS:
                raise UsageError("Cell magic `%%%%%s` not found (But line magic `%%%s` exists, "
                                 "did you mean that instead?)." % (name, name))
            raise UsageError("Cell magic `%%%%%s` not found." % name)
        return fn(line, cell, first)

    def system(self, cmd):
        return _system(cmd)

    def getoutput(self, cmd, split=True):
        out = _getoutput(cmd)
        return out if split else out.n

    def run_cell(self, code, *a, **k):
        return _run_code(code)

    def register_magic_function(self, func, magic_kind="line", magic_name=None):
        name = magic_name or func.__name__
        if magic_kind in ("line", "line_cell"):
            _MAGICS[name] = func
        if magic_kind in ("cell", "line_cell"):
            _CELL_MAGICS[name] = lambda a, c, f: func(a, c)

    def __repr__(self):
        return "<terp shell: %s>" % IPY_MACHINERY


_SHELL = _Shell()


def get_ipython():
    return _SHELL


# ---------------------------------------------------------------- display
#
# display() and a cell's last value go through the objects' rich
# representations in Jupyter's order. Images become PNG/JPEG files in
# out/, so they travel as artifacts with a thumbnail like a saved chart;
# the rest becomes text on stdout (display) or the result's value (a
# last expression): Markdown as written, HTML without a text form as a
# readable text (tags stripped, tables as rows). No new frame: the host
# validates what it already validates.

_REPR_METHODS = (("text/html", "_repr_html_"), ("text/markdown", "_repr_markdown_"),
                 ("image/svg+xml", "_repr_svg_"), ("image/png", "_repr_png_"),
                 ("image/jpeg", "_repr_jpeg_"), ("text/latex", "_repr_latex_"),
                 ("application/json", "_repr_json_"))
_display_sink = [None]   # %%capture's list of displayed objects, or None
_display_count = [0]
DISPLAY_TEXT_MAX = 1 << 20


def _is_default_repr(text):
    """object's repr (or IPython's form of it): says nothing to a reader."""
    return (text.startswith("<") and text.endswith(">")
            and (" object" in text[:200] or " at 0x" in text[:200]))


def _figure_png(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return buf.getvalue()


def _mime_bundle(obj, include=None, exclude=None):
    data = {}
    mb = getattr(obj, "_repr_mimebundle_", None)
    if callable(mb) and not isinstance(obj, type):
        try:
            r = mb(include=include, exclude=exclude)
        except TypeError:
            r = mb()
        if isinstance(r, tuple):
            r = r[0]
        if isinstance(r, dict):
            data.update(r)
    fig_cls = getattr(sys.modules.get("matplotlib.figure"), "Figure", None)
    if fig_cls is not None and isinstance(obj, fig_cls):
        data.setdefault("image/png", _figure_png(obj))
        obj._terp_saved = True  # shown: not saved again at the cell's end
    if not isinstance(obj, type):
        for mime, meth in _REPR_METHODS:
            f = getattr(obj, meth, None)
            if mime in data or not callable(f):
                continue
            try:
                r = f()
            except Exception:
                continue
            if isinstance(r, tuple):
                r = r[0]
            if r is not None:
                data[mime] = r
    if "text/plain" not in data:
        data["text/plain"] = _plain(obj)
    if include:
        data = {k: v for k, v in data.items() if k in include}
    if exclude:
        data = {k: v for k, v in data.items() if k not in exclude}
    return data


def _html_text(html):
    """A readable text for HTML: tables as aligned rows, tags dropped."""
    from html.parser import HTMLParser

    class P(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.out, self.rows, self.row, self.cell = [], None, None, None
            self.skip = 0

        def handle_starttag(self, tag, attrs):
            if tag in ("style", "script"):
                self.skip += 1
            elif tag == "table":
                self.rows = []
            elif tag == "tr" and self.rows is not None:
                self.row = []
            elif tag in ("td", "th") and self.row is not None:
                self.cell = []
            elif tag in ("br", "p", "div", "li", "h1", "h2", "h3", "h4", "tr"):
                self.out.append("\n")

        def handle_endtag(self, tag):
            if tag in ("style", "script"):
                self.skip = max(0, self.skip - 1)
            elif tag in ("td", "th") and self.cell is not None and self.row is not None:
                self.row.append(" ".join("".join(self.cell).split()))
                self.cell = None
            elif tag == "tr" and self.row is not None and self.rows is not None:
                self.rows.append(self.row)
                self.row = None
            elif tag == "table" and self.rows is not None:
                self.out.append("\n" + _table_text(self.rows) + "\n")
                self.rows = None

        def handle_data(self, d):
            if self.skip:
                return
            if self.cell is not None:
                self.cell.append(d)
            elif self.rows is None:
                self.out.append(d)

    p = P()
    p.feed(html)
    p.close()
    lines = [ln.rstrip() for ln in "".join(p.out).splitlines()]
    text = "\n".join(ln for i, ln in enumerate(lines) if ln or (i and lines[i - 1]))
    return text.strip("\n")


def _table_text(rows):
    width = max((len(r) for r in rows), default=0)
    rows = [r + [""] * (width - len(r)) for r in rows]
    cols = [max(len(r[i]) for r in rows) for i in range(width)]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, cols)).rstrip() for r in rows)


def _save_image(data, ext, did=None):
    if isinstance(data, str):
        data = binascii.a2b_base64(data)
    if not isinstance(data, (bytes, bytearray)) or len(data) > ARTIFACT_MAX:
        return
    _display_count[0] += 1
    name = ("display-%s.%s" % (did, ext)) if did else (
        "display-%d-%d.%s" % (_cur_cell, _display_count[0], ext))
    os.makedirs(OUT_DIR, exist_ok=True)
    with open(os.path.join(OUT_DIR, name), "wb") as f:
        f.write(data)


def _text_form(data):
    """(text or None, image shown, text is Markdown): what the model and
    the pane read."""
    for mime, ext in (("image/png", "png"), ("image/jpeg", "jpg")):
        if mime in data and data[mime]:
            return None, (mime, ext), False
    plain = data.get("text/plain")
    if isinstance(plain, str) and not _is_default_repr(plain):
        return plain, None, False
    if isinstance(data.get("text/markdown"), str):
        return data["text/markdown"], None, True
    if isinstance(data.get("text/latex"), str):
        return data["text/latex"], None, False
    if isinstance(data.get("text/html"), str):
        return _html_text(data["text/html"]), None, False
    if isinstance(data.get("image/svg+xml"), str):
        return "[SVG image, %d characters]" % len(data["image/svg+xml"]), None, False
    if "application/json" in data:
        import json
        return json.dumps(data["application/json"], indent=1, default=str), None, False
    return plain if isinstance(plain, str) else None, None, False


def _show_bundle(data, did=None, update=False):
    text, img, md = _text_form(data)
    if img is not None:
        _save_image(data[img[0]], img[1], did)
    if text is not None:
        _show_text(text, md, did, update)


# A display the notebook must know as one (Markdown to render, an id to
# update in place) travels in stdout as a marked region, so that it
# keeps its place among the prints (the host's outdisp.h has the format).
_MARK = "\x1b]7701;"


def _show_text(text, markdown=False, did=None, update=False):
    if len(text) > DISPLAY_TEXT_MAX:
        text = text[:DISPLAY_TEXT_MAX] + "... [display cut at 1 MiB]"
    text = text.rstrip("\n") + "\n"
    if markdown or did or update:
        text = "\n%s%s;%s;%s\a\n%s%send\a\n" % (
            _MARK, "update" if update else "show",
            "text/markdown" if markdown else "text/plain", did or "", text, _MARK)
    sys.stdout.write(text)


class DisplayHandle:
    def __init__(self, display_id=None):
        if display_id is None or display_id is True:
            display_id = binascii.hexlify(os.urandom(16)).decode()
        self.display_id = display_id

    def __repr__(self):
        return "<DisplayHandle display_id=%s>" % self.display_id

    def display(self, obj, **kw):
        display(obj, display_id=self.display_id, **kw)

    def update(self, obj, **kw):
        update_display(obj, display_id=self.display_id, **kw)


def display(*objs, include=None, exclude=None, metadata=None, transient=None,
            display_id=None, raw=False, clear=False, update=False, **kwargs):
    """IPython's display(): each object through its richest form."""
    # clear=True: a text stream cannot clear; the next output follows
    handle = DisplayHandle(display_id) if display_id is not None else None
    did = _safe_id(handle.display_id) if handle else None
    for obj in objs:
        if _display_sink[0] is not None:
            _display_sink[0].append(obj)
            continue
        if raw and isinstance(obj, dict):
            _show_bundle(obj, did, update)
        elif include or exclude or did:
            _show_bundle(_mime_bundle(obj, include, exclude), did, update)
        else:
            # as a last value: a DataFrame's HTML is not computed for nothing
            text, md = _value_form(obj)
            if text is not None:
                _show_text(text, md)
    return handle


def update_display(obj, *, display_id, **kwargs):
    """Every display with this id shows obj now: an image keeps its file
    name (out/display-ID.png, the artifact updated), text is replaced
    where it was shown."""
    kwargs.pop("update", None)
    display(obj, display_id=display_id, update=True, **kwargs)


def clear_output(wait=False):
    """The cell's output so far goes (both streams), as in Jupyter; wait
    (clear when the next output comes) reads the same once it has come."""
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
            f.write("\n" + _MARK + "clear\a\n")
            f.flush()
        except Exception:
            pass


def _safe_id(did):
    s = "".join(c if c.isalnum() or c in "-_" else "_" for c in str(did))[:64]
    return s or "id"


def _rich(v):
    """Whether v has a form richer than its repr (images, a bundle)."""
    fig_cls = getattr(sys.modules.get("matplotlib.figure"), "Figure", None)
    return (hasattr(v, "_repr_mimebundle_") or hasattr(v, "_repr_png_")
            or hasattr(v, "_repr_jpeg_") or (fig_cls is not None and isinstance(v, fig_cls)))


PRETTY_WIDTH = 79     # IPython's pretty printer's line width
PRETTY_MAX_ITEMS = 1000
_float_fmt = [None]   # %precision's format for floats


def _type_name(t):
    mod = getattr(t, "__module__", None)
    name = getattr(t, "__qualname__", None) or getattr(t, "__name__", "?")
    return name if mod in (None, "builtins") else "%s.%s" % (mod, name)


def _pretty(v, indent=0, col=0, depth=0):
    """repr(v) as IPython's pretty printer shows it: objects without a
    repr of their own as <module.Class at 0x...>, containers wider than
    79 columns one item a line (indented by nesting, as IPython does),
    floats in %precision. indent: the nesting's indentation; col: the
    column v starts at."""
    t = type(v)
    if t is float and _float_fmt[0] is not None:
        try:
            return _float_fmt[0] % v
        except Exception:
            return repr(v)
    if t in (list, tuple, set, frozenset, dict) and depth < 20 and len(v) <= PRETTY_MAX_ITEMS:
        if not v:
            return repr(v)
        opn, cls = {list: ("[", "]"), tuple: ("(", ")"), set: ("{", "}"), dict: ("{", "}"),
                    frozenset: ("frozenset({", "})")}[t]
        inner = indent + (1 if t is not frozenset else len(opn))
        if t is dict:
            items = []
            for k, x in v.items():
                ks = _pretty(k, inner, inner, depth + 1)
                items.append(ks + ": " + _pretty(x, inner, inner + len(ks) + 2, depth + 1))
        else:
            seq = v
            if t in (set, frozenset):
                try:
                    seq = sorted(v)
                except Exception:
                    seq = list(v)
            items = [_pretty(x, inner, inner, depth + 1) for x in seq]
            if t is tuple and len(items) == 1:
                cls = ",)"
        one = opn + ", ".join(items) + cls
        if "\n" not in one and col + len(one) <= PRETTY_WIDTH:
            return one
        return opn + (",\n" + " " * inner).join(items) + cls
    try:
        if t.__repr__ is object.__repr__:
            return "<%s at 0x%x>" % (_type_name(t), id(v))
    except Exception:
        pass
    return repr(v)


def _plain(v):
    """The text/plain of a value: its repr, pretty where IPython's is."""
    t = type(v)
    if t in (list, tuple, set, frozenset, dict, float) or t.__repr__ is object.__repr__:
        return _pretty(v)
    return repr(v)


def _value_text(v):
    """A cell's last value as the result's text (None: shown as an image
    file). The repr comes first when it is a real one (a DataFrame's),
    so its HTML is never computed for nothing."""
    return _value_form(v)[0]


def _value_form(v):
    """(_value_text's text, whether it is Markdown)."""
    if isinstance(v, type) or not _rich(v):
        r = _plain(v)
        if isinstance(v, type) or not _is_default_repr(r) or not any(
                hasattr(v, m) for _, m in _REPR_METHODS):
            return r, False
    data = _mime_bundle(v)
    text, img, md = _text_form(data)
    if img is not None:
        _save_image(data[img[0]], img[1])
        return None, False
    return text, md


def _hides_value(code):
    """A trailing ';' on the cell's last line hides its value (IPython)."""
    for line in reversed(code.splitlines()):
        s = line.split("#", 1)[0].rstrip() if "#" in line and "'" not in line and '"' not in line else line.rstrip()
        if s:
            return s.endswith(";")
    return False


# Tables for the reader: pandas prints as in Jupyter's text view (the
# tool result and the pane alike): up to 20 columns, wrapped at 80
# characters, up to 60 rows. This is the one place they are set; the
# system prompt states them (agent.c, describe_python).
PANDAS_OPTIONS = (("display.max_columns", 20), ("display.width", 80),
                  ("display.max_rows", 60), ("display.expand_frame_repr", True))


def _after_pandas(module):
    try:
        for k, v in PANDAS_OPTIONS:
            module.set_option(k, v)
    except Exception as e:  # options are a nicety, never a failure
        print("terp: pandas display options not set: %s" % e, file=sys.stderr)


def _after_ipython_display(module):
    """IPython's display() prints str() when no IPython shell runs (a
    plain interpreter): the driver's takes its place, so
    IPython.display.display(Image(...)) shows the image."""
    module.display = display
    module.update_display = update_display
    module.clear_output = clear_output


def _install_builtins():
    # The working directory on sys.path, as in IPython: a module the
    # notebook wrote (%%writefile helper.py) imports.
    if "" not in sys.path:
        sys.path.insert(0, "")
    builtins.display = display
    builtins.get_ipython = get_ipython
    sys.meta_path.insert(0, _AfterImport("pandas", _after_pandas))
    sys.meta_path.insert(0, _AfterImport("IPython.core.display_functions",
                                         _after_ipython_display))


_install_builtins()


# ---------------------------------------------------------------- cells

def _fresh_namespace():
    return {"__name__": "__main__", "__builtins__": builtins, "__doc__": None}


ns = _fresh_namespace()


_stdio_dirty = False  # a cell ran since stdout/stderr were restored


def _restore_stdio():
    # User code may have replaced sys.stdout, closed it or fd 1, or
    # redirected it: every cell starts with the real pipes again.
    global _STDOUT, _STDERR
    try:
        os.dup2(OUT_SAVED, 1)
        os.dup2(ERR_SAVED, 2)
    except OSError:
        pass
    if _STDOUT.closed:
        _STDOUT = _stdio(1, _STDOUT)
    if _STDERR.closed:
        _STDERR = _stdio(2, _STDERR)
    sys.stdout = sys.__stdout__ = _STDOUT
    sys.stderr = sys.__stderr__ = _STDERR


def _stdio_is_ours():
    try:
        for fd, saved in ((1, OUT_SAVED), (2, ERR_SAVED)):
            a, b = os.fstat(fd), os.fstat(saved)
            if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino):
                return False
    except OSError:
        return False
    return True


def _reclaim_stdio():
    # A cell that closed fd 1 or 2 while the preload thread imports lets
    # the preload's next open() take that number; dup2 over it would
    # pull the file from under the import, and the import's close()
    # would then close the restored pipe. So wait for the preload first.
    # Only while it runs: the check costs four fstat calls a cell.
    t = _preload_thread
    if t is not None and t.ident != _thread.get_ident() and t.is_alive() \
            and not _stdio_is_ours():
        t.join()
    _restore_stdio()


def _flush():
    out, err = sys.stdout, sys.stderr
    for s in (out, err) if out is _STDOUT and err is _STDERR else (out, err, _STDOUT, _STDERR):
        try:
            s.flush()
        except Exception:
            pass


def _user_traceback(exc):
    import traceback
    _flush_sources()
    tb = exc.__traceback__
    # Skip the driver's own frames: the traceback starts in the cell.
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<cell"):
        tb = tb.tb_next
    if tb is None and isinstance(exc, SyntaxError):
        return "".join(traceback.format_exception_only(type(exc), exc))
    top = traceback.TracebackException(type(exc), exc, tb)
    # ...and none of ours inside it either (the SIGINT handler's frame,
    # a magic's), nor in the exceptions it chains; long ones are cut.
    te, seen = top, set()
    while te is not None and id(te) not in seen and len(seen) < 32:
        seen.add(id(te))
        st = _stack_class()()
        st.extend(_cut_frames([f for f in te.stack if f.filename != _DRIVER_FILE]))
        te.stack = st
        te = te.__cause__ if te.__cause__ is not None else te.__context__
    return "".join(top.format())


_DRIVER_FILE = _MODULE_CODE.co_filename
FRAMES_HEAD = 20   # a traceback's first frames kept, the cell's own among them
FRAMES_TAIL = 10   # and its last ones (where it failed)


def _cut_frames(frames):
    """A long traceback's middle cut out, the count said, as the model
    reads it: the cell's frames come first and stay in full (up to the
    last one of them among the first FRAMES_HEAD), then the end."""
    if len(frames) <= FRAMES_HEAD + FRAMES_TAIL:
        return frames
    head = FRAMES_HEAD
    cut = len(frames) - head - FRAMES_TAIL
    import traceback
    mark = traceback.FrameSummary(_OMITTED, cut, "", line="", lookup_line=False)
    return frames[:head] + [mark] + frames[len(frames) - FRAMES_TAIL:]


_OMITTED = "<terp: frames left out>"
_stack_cls = None


def _stack_class():
    """traceback.StackSummary that prints _cut_frames' mark as one line
    (Python 3.11's format_frame_summary; before it, as a frame)."""
    global _stack_cls
    if _stack_cls is None:
        import traceback

        class Stack(traceback.StackSummary):
            def format_frame_summary(self, f):
                if f.filename == _OMITTED:
                    return "  ... %d frames left out ...\n" % f.lineno
                return super().format_frame_summary(f)
        _stack_cls = Stack
    return _stack_cls


def _cut(s, what):
    if len(s) <= TEXT_MAX:
        return s
    return s[:TEXT_MAX] + "... [%s cut at 64 KiB]" % what


def _cut_tail(s, what):
    # A traceback's end (the failing line and the error) matters most.
    if len(s) <= TEXT_MAX:
        return s
    head = TEXT_MAX // 8
    return (s[:head] + "\n... [%s cut: %d characters left out] ...\n" % (what, len(s) - TEXT_MAX)
            + s[len(s) - (TEXT_MAX - head):])


def _error(e):
    # An exception's text can be anything: huge (the frame cap is 8 MiB
    # and the host kills a session that passes it), or raise itself.
    try:
        evalue = str(e)
    except BaseException:  # noqa: B036
        evalue = "<str() of the exception failed>"
    try:
        tb = _user_traceback(e)
    except BaseException:  # noqa: B036
        tb = ""
    ename = type(e).__name__
    if isinstance(e, UsageError):
        tb = "UsageError: %s\n" % evalue  # IPython shows no frames for it
    if len(ename) > NAME_MAX:
        ename = ename[:NAME_MAX] + "..."
    return {"ename": ename,
            "evalue": _cut(evalue, "exception text"),
            "traceback": _cut_tail(tb, "traceback")}


# The cells' sources, for tracebacks, warnings and inspect (linecache).
# linecache costs tokenize and re at start, so until someone imports it
# (a cell, the preload, a traceback) they wait here; _LinecacheHook
# moves them in as its import ends, and later ones go straight in.
_pending_sources = {}

def _drop_figures():
    plt = _pyplot()
    if plt is not None:
        plt.close("all")


def _add_source(fname, code):
    # the lines are split when linecache takes them (most cells never
    # raise, and linecache is imported only for a traceback)
    _pending_sources[fname] = code
    _flush_sources()


def _flush_sources():
    lc = sys.modules.get("linecache")
    if lc is None:
        return
    cache = getattr(lc, "cache", None)
    if not isinstance(cache, dict):
        return  # still being imported (the hook flushes)
    while _pending_sources:
        try:
            name, code = _pending_sources.popitem()  # atomic: threads may race
        except KeyError:
            break
        cache[name] = (len(code), None, code.splitlines(True), name)


_PyCF_ONLY_AST = 0x400  # ast.PyCF_ONLY_AST, without importing ast


_AUG_OPS = frozenset(("", "+", "-", "*", "/", "//", "%", "**", ">>", "<<", "&", "^", "|", "@"))


def _is_assignment(line):
    """Whether one line is certainly an assignment statement (`x = 1`,
    `x += 1`, `d['k'] = v`, `a.b = c`): a target of name characters,
    dots, brackets and quotes, then `=` or an augmented one, not `==`.
    False says nothing (the syntax tree decides)."""
    i, n = 0, len(line)
    while i < n and line[i] in " \t":
        i += 1
    if i == n or not (line[i].isalpha() or line[i] == "_"):
        return False
    while i < n and (line[i].isalnum() or line[i] in "_.[]'\""):
        i += 1
    while i < n and line[i] in " \t":
        i += 1
    j = i
    while j < n and line[j] in "+-*/%><&^|@":
        j += 1
    return (line[i:j] in _AUG_OPS and j < n and line[j] == "="
            and (j + 1 == n or line[j + 1] != "="))


def _compile_cell(code, fname):
    """(statements, last expression) as code objects, either None: the
    value of a cell's last expression is shown. A cell that is one
    expression compiles as such; only the others need the syntax tree
    (and the _ast types, which cost ms to set up at the first use)."""
    # A one-line assignment has no value to show: compiled from its
    # text (5 us here) rather than through the syntax tree (9.5 us).
    if "\n" not in code and ";" not in code and _is_assignment(code):
        return compile(code, fname, "exec"), None
    # Once _ast is loaded, one parse for every cell: the "eval" try
    # first parsed a statement twice and raised a SyntaxError for it.
    _ast = sys.modules.get("_ast")
    if _ast is None:
        try:
            return None, compile(code, fname, "eval")
        except SyntaxError:
            pass
        import _ast
    tree = compile(code, fname, "exec", _PyCF_ONLY_AST)
    last = None
    if tree.body and isinstance(tree.body[-1], _ast.Expr):
        last = compile(_ast.Expression(tree.body.pop().value), fname, "eval")
        if not tree.body:
            return None, last
    return compile(tree, fname, "exec"), last


def _wide_text(v, width):
    """A pandas value's text at the user's pane width (the model's stays
    Jupyter's 80-column view), or None when it would be the same."""
    pd = sys.modules.get("pandas")
    if pd is None or not isinstance(v, (pd.DataFrame, pd.Series)):
        return None
    try:
        with pd.option_context("display.width", width):
            return _value_text(v)
    except Exception:
        return None


def _run(cell, code, asking=False, ints=None, width=None):
    global _running, _cur_cell, _stdio_dirty
    _cur_cell = cell
    _preload_if_needed(code)
    fname = "<cell %d>" % cell
    _add_source(fname, code)
    value = wide = None
    status = "ok"
    err = None
    # The last cell's end restored them (two dup2 calls a cell, not
    # four), unless it did not get there (an interrupt raced its end).
    if _stdio_dirty:
        _restore_stdio()
    _stdio_dirty = True
    _install_input(asking)
    _patch_pyplot()
    _told.clear()
    _running = True
    try:
        # more SIGINTs than terp had sent when it wrote this cell: one
        # came for it before it ran (the sandbox still loading)
        if ints is not None and _nint > ints:
            raise KeyboardInterrupt
        body, last = _compile_cell(_ipy_transform(code), fname)
        if body is not None:
            exec(body, ns)
        if last is not None:
            v = eval(last, ns)
            if v is not None and not _hides_value(code):
                ns["_"] = v
                value = _value_text(v)
                if width is not None and width != 80 and value is not None:
                    wide = _wide_text(v, width)
    except BaseException as e:  # noqa: B036 - everything is the user's error
        _running = False
        status = "error"
        if isinstance(e, SystemExit):
            pass
        err = _error(e)
    finally:
        _running = False
    _flush()
    _reclaim_stdio()
    _stdio_dirty = False
    _flush_sources()  # in case the hook could not run
    try:
        _patch_pyplot()
        if status == "ok":
            _save_figures()
        else:
            # A cell that raised has not finished its figure (often an
            # empty one, the plot call being what failed): saved, it
            # would be an artifact of a chart that does not exist.
            _drop_figures()
    except BaseException as e:
        print("terp: saving figures failed: %s" % e, file=sys.stderr)
        _flush()
    _send_artifacts(cell)
    try:
        _site_after_cell(cell)
    except Exception:  # a record, never a failure
        pass
    msg = {"ev": "result", "id": cell, "status": status}
    if value is not None:
        msg["value"] = _cut(value, "repr")
        if wide is not None and wide != value:
            msg["value_wide"] = _cut(wide, "repr")
    if err is not None:
        msg["error"] = err
    send(msg)


# While the preload thread imports, a cell's thread waits for the GIL at
# every blocking call it makes (read, dup2, write): up to the switch
# interval (5 ms) each time. A short interval while preloading keeps a
# trivial first cell fast; it costs nothing when only one thread runs.
PRELOAD_SWITCH = 0.0001
PRELOAD_IDLE = 0.01


def _have(mod):
    """Whether a top-level module is there, without importing it."""
    try:
        import importlib.util
        spec = importlib.util.find_spec(mod)
        return spec is not None and spec.origin is not None
    except Exception:
        return False


def _preload():
    # The user's environment may lack any of these: what is missing is
    # not imported (the model was told, see _probe), never an error.
    sys.setswitchinterval(PRELOAD_SWITCH)
    t0 = time.monotonic()
    try:
        if _have("numpy"):
            import numpy  # noqa: F401
        if _have("pandas"):
            import pandas  # noqa: F401
        if _have("matplotlib"):
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot  # noqa: F401  (builds the font cache too)
            _patch_pyplot()
        send({"ev": "loaded", "ms": int((time.monotonic() - t0) * 1000)})
    except BaseException as e:
        send({"ev": "loaded", "error": "%s: %s" % (type(e).__name__, e)})
    finally:
        if sys.getswitchinterval() == PRELOAD_SWITCH:  # unless a cell changed it
            sys.setswitchinterval(_default_switch)


_preload_pending = False
_preload_thread = None
# TERP_PRELOAD=need (terp exec, no model, no data file): the preload waits
# for a sign that the session wants those libraries, a cell naming one:
# 8 scripts of trivial cells side by side each imported ~1 s of CPU
# they never used.
_preload_on_need = False
_PRELOAD_SIGNS = ("numpy", "pandas", "matplotlib", "seaborn", "np.", "pd.", "plt.")


def _data_staged():
    try:
        return bool(os.listdir("/workspace/data"))
    except OSError:
        return False


def _preload_if_needed(code):
    global _preload_on_need, _preload_pending
    if _preload_on_need and any(w in code for w in _PRELOAD_SIGNS):
        _preload_on_need = False
        _preload_pending = True


def _start_preload_when_idle():
    """Starts the preload once no command comes for PRELOAD_IDLE seconds:
    cells that arrive back to back (terp exec) run before it, not against
    it for the GIL (numpy's import holds the GIL for ms at a time)."""
    global _preload_pending, _preload_thread
    if not _preload_pending:
        return
    try:
        ready, _, _ = select.select([CIN], [], [], PRELOAD_IDLE)
    except (InterruptedError, KeyboardInterrupt):
        return
    if ready:
        return
    _preload_pending = False
    import threading  # here, in the main thread, as threading wants
    _preload_thread = threading.Thread(target=_preload, name="terp-preload", daemon=True)
    _preload_thread.start()


def _lines(read):
    """The lines (without their newline) of what read() returns until it
    returns b""; None means "nothing this time". Linear in the bytes: a
    line's pieces are joined once, and each chunk is searched once."""
    parts = []
    while True:
        data = read()
        if data is None:
            continue
        if not data:
            return
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            parts.append(data[start:nl])
            yield b"".join(parts)
            parts = []
            start = nl + 1
        if start < len(data):
            parts.append(data[start:])


# A command is read READ_MIN bytes at a time, more while reads fill the
# buffer (a big cell), up to READ_MAX: a 1 MiB read allocated (mmap,
# mremap, munmap) a 1 MiB object for every 40-byte command.
READ_MIN = 64 * 1024
READ_MAX = 1 << 20
_read_size = READ_MIN


def _read_command():
    global _read_size
    _start_preload_when_idle()
    try:
        data = os.read(CIN, _read_size)
    except (InterruptedError, KeyboardInterrupt):
        return None
    if len(data) == _read_size:
        _read_size = min(_read_size * 4, READ_MAX)
    else:
        _read_size = READ_MIN
    return data


def _format_exc():
    import traceback
    return traceback.format_exc()


def main():
    global ns, _preload_pending, _preload_on_need
    os.makedirs(OUT_DIR, exist_ok=True)
    _close_all(_scan_out()[1])  # what is already there is not new
    ready = {"ev": "ready", "pid": os.getpid(), "python": sys.version.split()[0]}
    if os.environ.get("TERP_CODE") == "1":
        # Before any cell ran: terp keeps this for the next sandboxes,
        # which then skip compiling this file.
        try:
            import marshal
            blob = (b"TERPCODE" + sys.hexversion.to_bytes(8, "little")
                    + marshal.dumps(_MODULE_CODE))
            ready["code"] = binascii.b2a_base64(blob, newline=False).decode()
        except Exception:
            pass
    # The probe after the code: its find_spec calls leave closures of the
    # import hooks (pandas') behind, which would change the blob's bytes.
    if os.environ.get("TERP_PROBE") == "1":
        try:
            ready["probe"] = _probe()
        except Exception:
            pass
    _setup_site()
    _start_forwarder()
    if not EGRESS:
        sys.addaudithook(_audit)
    send(ready)
    mode = os.environ.get("TERP_PRELOAD", "1")
    _preload_pending = mode == "1" or (mode == "need" and _data_staged())
    _preload_on_need = mode == "need" and not _preload_pending
    for line in _lines(_read_command):
        try:
            cmd = _loads(line)
        except Exception:  # not JSON, or nested past the recursion limit
            continue
        if not isinstance(cmd, dict):
            continue  # terp sends objects; anything else is not a command
        op = cmd.get("op")
        cid = cmd.get("id")
        cid = cid if type(cid) is int else 0
        try:
            if op == "exec":
                _set_env(cmd.get("env"))
                ints, width = cmd.get("ints"), cmd.get("width")
                _run(cid, str(cmd.get("code", "")), cmd.get("stdin") is True,
                     ints if type(ints) is int else None,
                     width if type(width) is int and 20 <= width <= 1000 else None)
            elif op == "reset":
                ns = _fresh_namespace()
                plt = _pyplot()
                if plt is not None:
                    plt.close("all")
                send({"ev": "reset"})
            elif op == "ping":
                send({"ev": "pong"})
        except KeyboardInterrupt:
            # An interrupt that raced the end of a cell: the result (or
            # its absence) is for terp to sort out; keep serving.
            send({"ev": "result", "id": cid, "status": "error",
                  "error": {"ename": "KeyboardInterrupt", "evalue": "", "traceback": ""}})
        except Exception as e:
            # A bug of the driver's own must not take the session down.
            send({"ev": "result", "id": cid, "status": "error",
                  "error": {"ename": "TerpDriverError", "evalue": _cut(repr(e), "text"),
                            "traceback": _cut_tail(_format_exc(), "traceback")}})


main()
