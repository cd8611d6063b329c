# terp's in-sandbox driver: runs cells in one persistent namespace and
# talks to terp over a private channel, one JSON object per line. It is
# shipped inside the terp binary and started as `python3 -I -u driver.py`
# with fd 3 = commands from terp, fd 4 = events to terp, fd 1/2 = the
# cell's stdout/stderr pipes. Everything here treats user code as able to
# do anything Python can: the channel is moved to high fds, stdout/stderr
# are restored before every cell, and the host validates every frame.
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


def _on_sigint(signum, frame):
    if _running:
        raise KeyboardInterrupt
    # Between cells an interrupt has nothing to stop.


_signal.signal(_signal.SIGINT, _on_sigint)


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


def _scan_out():
    """Files under out/ created or changed since the last scan, as
    (dir_fd, name, relative path), every dir fd opened (to close), and
    the new folders not searched, as (relative path, reason)."""
    found, dirs, skipped = [], [], []
    try:
        top = os.open(OUT_DIR, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return found, dirs, skipped
    dirs.append(top)
    stack = [(top, "")]
    while stack:
        dfd, prefix = stack.pop()
        try:
            entries = sorted(os.listdir(dfd))
        except OSError:
            continue
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


def _close_all(fds):
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _send_artifacts(cell):
    found, dirs, skipped = _scan_out()
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


def _site_before_cell():
    """A package the last cell installed imports now: the import system's
    cached directory listings are dropped when the folder changed."""
    global _site_stamp
    if SITE is None:
        return
    now = _site_state()
    if now != _site_stamp:
        _site_stamp = now
        import importlib
        importlib.invalidate_caches()


def _site_after_cell(cell):
    """Tells terp what the cell installed (new *.dist-info entries)."""
    global _site_dists
    if SITE is None or _site_state() == _site_stamp:
        return
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


# ---------------------------------------------------------------- cells

def _fresh_namespace():
    return {"__name__": "__main__", "__builtins__": builtins, "__doc__": None}


ns = _fresh_namespace()


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
    if not _stdio_is_ours():
        t = _preload_thread
        if t is not None and t.ident != _thread.get_ident():
            t.join()
    _restore_stdio()


def _flush():
    for s in (sys.stdout, sys.stderr, _STDOUT, _STDERR):
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
    te = traceback.TracebackException(type(exc), exc, tb)
    # ...and none of ours inside it either (the SIGINT handler's frame).
    te.stack = traceback.StackSummary.from_list(
        [f for f in te.stack if f.filename != __file__])
    return "".join(te.format())


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
    _pending_sources[fname] = (len(code), None, code.splitlines(True), fname)
    _flush_sources()


def _flush_sources():
    lc = sys.modules.get("linecache")
    cache = getattr(lc, "cache", None)
    if not isinstance(cache, dict):
        return  # not imported, or still being imported (the hook flushes)
    while _pending_sources:
        try:
            name, entry = _pending_sources.popitem()  # atomic: threads may race
        except KeyError:
            break
        cache[name] = entry


_PyCF_ONLY_AST = 0x400  # ast.PyCF_ONLY_AST, without importing ast


def _compile_cell(code, fname):
    """(statements, last expression) as code objects, either None: the
    value of a cell's last expression is shown. A cell that is one
    expression compiles as such; only the others need the syntax tree
    (and the _ast types, which cost ms to set up at the first use)."""
    try:
        return None, compile(code, fname, "eval")
    except SyntaxError:
        pass
    import _ast
    tree = compile(code, fname, "exec", _PyCF_ONLY_AST)
    last = None
    if tree.body and isinstance(tree.body[-1], _ast.Expr):
        last = compile(_ast.Expression(tree.body.pop().value), fname, "eval")
    return compile(tree, fname, "exec"), last


def _run(cell, code):
    global _running, _cur_cell
    _cur_cell = cell
    fname = "<cell %d>" % cell
    _add_source(fname, code)
    value = None
    status = "ok"
    err = None
    _restore_stdio()
    _patch_pyplot()
    _site_before_cell()
    _told.clear()
    _running = True
    try:
        body, last = _compile_cell(code, fname)
        if body is not None:
            exec(body, ns)
        if last is not None:
            v = eval(last, ns)
            if v is not None:
                ns["_"] = v
                value = repr(v)
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


def _read_command():
    _start_preload_when_idle()
    try:
        return os.read(CIN, 1 << 20)
    except (InterruptedError, KeyboardInterrupt):
        return None


def _format_exc():
    import traceback
    return traceback.format_exc()


def main():
    global ns, _preload_pending
    os.makedirs(OUT_DIR, exist_ok=True)
    _close_all(_scan_out()[1])  # what is already there is not new
    ready = {"ev": "ready", "pid": os.getpid(), "python": sys.version.split()[0]}
    if os.environ.get("TERP_PROBE") == "1":
        try:
            ready["probe"] = _probe()
        except Exception:
            pass
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
    _setup_site()
    _start_forwarder()
    if not EGRESS:
        sys.addaudithook(_audit)
    send(ready)
    _preload_pending = os.environ.get("TERP_PRELOAD", "1") == "1"
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
                _run(cid, str(cmd.get("code", "")))
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
