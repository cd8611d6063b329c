"""Hostile cells against the session's resource bounds (issue 8, items 5,
6 and 11): memory no rlimit counts (memfd, SysV IPC, tmpfs, socket
buffers) under --memory 256M, the disk through the workspace under
--disk 64M, and processes a cell leaves running.

The hostile code runs only through terp's sandbox, behind the isolation
check of test_hostile.py: the `sbx` fixture imported from there proves
the sandbox isolates first, and fails every test here when it does not.
"""
import json
import os
import subprocess
import textwrap

import pytest

from conftest import TERP, Result
# The isolation gate (and what it needs): a test that takes `sbx` runs
# only once the sandbox is proven to isolate.
from test_hostile import PRELUDE, TerpBackend, base, plant, sbx, sbx_raw  # noqa: F401

MEMORY = 256 << 20
DISK = 64 << 20
SAFETY_S = 300


@pytest.fixture
def cells(sbx, env, tmp_path):
    """cells(*code, args=()) -> Result of `terp exec --json ARGS -c ...`."""
    if not isinstance(sbx, TerpBackend):
        pytest.fail("these tests drive terp itself; unset TERP_HOSTILE_BACKEND", pytrace=False)

    def run(*code, args=()):
        argv = [str(TERP), "exec", "--json", *args]
        for c in code:
            argv += ["-c", PRELUDE + textwrap.dedent(c)]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=SAFETY_S,
                           cwd=tmp_path, env=env, errors="replace")
        r = Result(p)
        r.reports = {}
        for n in range(1, len(code) + 1):
            lines = [l for l in r.stdout_of(n).splitlines() if l.startswith("RESULT ")]
            r.reports[n] = json.loads(lines[-1][7:]) if lines else None
        return r
    return run


def host_int(path, field=0):
    return int(open(path).read().split()[field])


# ---------------------------------------------------------------- memory (item 5)

def test_memfd_and_sysv_ipc_are_refused(cells):
    r = cells(r'''
        def memfd():
            try:
                fd = os.memfd_create("x"); os.close(fd); return "OK"
            except OSError as e:
                return E(e.errno)
        report(memfd=memfd(), memfd_raw=sc(319, b"x", 0),
               shmget=sc(29, 0, 1 << 20, 0o1600), msgget=sc(68, 0, 0o1600),
               semget=sc(64, 0, 1, 0o1600))
    ''', args=("--memory", "256M"))
    assert r.reports[1] == {"memfd": "ENOSYS", "memfd_raw": "ENOSYS", "shmget": "ENOSYS",
                            "msgget": "ENOSYS", "semget": "ENOSYS"}, r


def test_tmpfs_fills_stop_at_caps_that_shrink_with_memory(cells):
    """/dev/shm and /tmp are memory: capped at --memory/8 and --memory/4
    (at most 64 and 256 MiB), so 32 and 64 MiB under 256M."""
    r = cells(r'''
        def fill(d):
            n, chunk = 0, b"x" * (1 << 20)
            try:
                with open(d + "/fill", "wb") as f:
                    while n < (1 << 30):
                        f.write(chunk); f.flush(); n += len(chunk)
            except OSError as e:
                err = E(e.errno)
            os.unlink(d + "/fill")
            return n, err
        report(shm=fill("/dev/shm"), tmp=fill("/tmp"))
    ''', args=("--memory", "256M"))
    rep = r.reports[1]
    assert rep is not None, r
    assert rep["shm"][1] == "ENOSPC" and rep["tmp"][1] == "ENOSPC", rep
    assert rep["shm"][0] <= MEMORY // 8, rep
    assert rep["tmp"][0] <= MEMORY // 4, rep


def test_socket_buffers_stay_at_their_defaults(cells):
    """Socket memory is kernel memory no rlimit counts. A cell may not grow
    a buffer (setsockopt SO_SNDBUF does nothing), so Unix sockets hold at
    most net.core.wmem_default each (plus the one send that crosses it),
    and, as root, TCP sockets at most 256 KiB a direction (terp's own
    network namespace caps tcp_rmem/tcp_wmem). Bound for one process:
    open files x that; measured here with 200 socket pairs and 200
    loopback connections."""
    r = cells(r'''
        import socket
        def fill(s):
            n = 0
            s.setblocking(False)
            try:
                while True:
                    n += s.send(b"x" * 65536)
            except BlockingIOError:
                return n
        big = 16 << 20
        unix, pairs = 0, []
        for i in range(200):
            a, b = socket.socketpair()
            for s in (a, b):
                s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, big)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, big)
                unix += fill(s)
            pairs.append((a, b))
        srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(256)
        tcp, conns = 0, []
        for i in range(200):
            c = socket.create_connection(srv.getsockname())
            c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, big)
            s, _ = srv.accept()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, big)
            tcp += fill(c)
            conns.append((c, s))
        report(unix=unix, tcp=tcp, sndbuf=pairs[0][0].getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF))
    ''', args=("--memory", "256M"))
    rep = r.reports[1]
    assert rep is not None, r
    wmem = host_int("/proc/sys/net/core/wmem_default")
    print("sockets: %r (wmem_default %d)" % (rep, wmem))
    assert rep["sndbuf"] <= wmem, rep
    # one send of 64 KiB may cross the limit
    assert rep["unix"] <= 400 * (wmem + 65536), rep
    if os.geteuid() == 0:
        per_conn = 2 * (256 << 10)
    else:
        per_conn = (host_int("/proc/sys/net/ipv4/tcp_wmem", 2) +
                    host_int("/proc/sys/net/ipv4/tcp_rmem", 2))
    assert rep["tcp"] <= 200 * (per_conn + 65536), rep


# ---------------------------------------------------------------- disk (item 6)

# What a cell may write past --disk before terp's check stops it: it
# checks every 100 ms (longer when a check is costly), so the overshoot is
# the write speed times that; 640 MiB leaves room for about 6 GB/s (a
# CI run on this machine's kind overshot 448 MiB by 2 MiB).
OVERSHOOT = 640 << 20


def workspace_of(r):
    (ev,) = r.of("session")
    return os.path.join(ev["workspace"], "workspace")


@pytest.fixture
def scrub():
    """scrub(path): deletes what a disk test wrote once it is measured, so
    that hundreds of MiB of dirty pages are dropped instead of written back
    while later tests run."""
    paths = []
    yield paths.append
    import shutil
    for p in paths:
        shutil.rmtree(p, ignore_errors=True)


def du(path):
    total = files = 0
    for dirpath, dirs, names in os.walk(path):
        for n in dirs + names:
            total += os.lstat(os.path.join(dirpath, n)).st_blocks * 512
            files += 1
    return total, files


def test_a_cell_filling_the_disk_is_stopped(cells, scrub):
    r = cells(r'''
        os.makedirs("/workspace/junk", exist_ok=True)
        chunk = os.urandom(1 << 20)
        for i in range(100000):
            with open("/workspace/junk/f%d" % i, "wb") as f:
                for j in range(4):
                    f.write(chunk)
        report(wrote_all=True)
    ''', r'''
        import shutil
        shutil.rmtree("/workspace/junk")
        report(after=os.listdir("/workspace"))
    ''', args=("--disk", "64M", "--max-file-size", "16M"))
    res = r.results()
    assert res[0]["status"] == "crashed", res
    assert "disk limit of 64 MiB" in res[0]["reason"], res
    assert r.reports[1] is None, r
    # the session goes on: the next cell can delete
    assert res[1]["status"] == "ok" and r.reports[2] is not None, r
    scrub(workspace_of(r))
    used, _ = du(workspace_of(r))
    assert used < DISK, used


def test_quick_cells_filling_the_disk_are_stopped(cells, scrub):
    """Cells of a millisecond each: a check at every cell's end is skipped
    when one ran less than an interval before (the timer's next one keeps
    the bound), so what they write before one is stopped stays within the
    overshoot, as for one long cell."""
    code = r'''
        chunk = b"x" * (2 << 20)
        n = len(os.listdir("/workspace"))
        with open("/workspace/q%d" % n, "wb") as f:
            f.write(chunk)
    '''
    r = cells(*[code] * 300, args=("--disk", "64M", "--max-file-size", "16M"))
    # The stop falls in a cell (which crashes with the reason) or, from
    # a check just after one, between two (a kernel event says it before
    # the next cell): either way, the cells before it each wrote 2 MiB.
    ok, stop = 0, None
    for e in r.events:
        if e["type"] == "result" and e["status"] == "ok":
            ok += 1
        elif e["type"] == "result" or (e["type"] == "kernel" and
                                       "disk limit" in e.get("message", "")):
            stop = e
            break
    assert stop is not None, r.results()[-3:]
    assert "disk limit" in stop.get("reason", stop.get("message", "")), stop
    scrub(workspace_of(r))
    # not early (the workspace holds a few MiB besides the cells' files:
    # folders, the session's caches), and within the overshoot
    assert DISK - (8 << 20) < ok * (2 << 20) <= DISK + OVERSHOOT, ok


def test_restarts_do_not_grow_the_workspace_past_the_bound(cells, scrub):
    """A session stopped for its disk use restarts and may delete, not
    grow: each sandbox writes until a check stops it, so without a bound
    every restart added one overshoot (300 cells of 2 MiB wrote 600 MiB
    under --disk 64M). The second growth is refused: no sandbox starts,
    the cells fail with the way out, and the workspace stays bounded."""
    code = r'''
        n = len(os.listdir("/workspace"))
        with open("/workspace/r%d" % n, "wb") as f:
            f.write(b"x" * (2 << 20))
    '''
    r = cells(*[code] * 300, args=("--disk", "64M", "--max-file-size", "16M"))
    used, _ = du(workspace_of(r))
    scrub(workspace_of(r))
    assert used <= DISK + 2 * OVERSHOOT, used
    res = r.results()
    refused = [x for x in res if "grew again after the sandbox was stopped" in
               json.dumps(x) + r.err]
    assert refused or "grew again after the sandbox was stopped" in r.out, res[-2:]
    assert "delete files in" in r.out + r.err and "--disk" in r.out + r.err


def test_host_usage_stays_under_the_bound(cells, scrub):
    r = cells(r'''
        chunk = os.urandom(1 << 20)
        with open("/workspace/keep.txt", "w") as f:
            f.write("x")
        for i in range(100000):
            with open("/workspace/f%d" % i, "wb") as f:
                for j in range(8):
                    f.write(chunk)
    ''', args=("--disk", "64M", "--max-file-size", "16M"))
    (res,) = r.results()
    assert res["status"] == "crashed" and "disk limit" in res["reason"], res
    scrub(workspace_of(r))
    used, _ = du(workspace_of(r))
    print("disk: --disk 64M, the workspace holds %d bytes when stopped" % used)
    assert DISK < used <= DISK + OVERSHOOT, used


def test_an_inode_flood_is_stopped(cells, scrub):
    """--disk 64M allows 4096 entries (one per 32 KiB, at least 4096)."""
    r = cells(r'''
        os.makedirs("/workspace/many", exist_ok=True)
        for i in range(10000000):
            os.close(os.open("/workspace/many/%d" % i, os.O_CREAT | os.O_WRONLY, 0o644))
    ''', args=("--disk", "64M"))
    (res,) = r.results()
    assert res["status"] == "crashed" and "files" in res["reason"], res
    scrub(workspace_of(r))
    _, files = du(workspace_of(r))
    print("inodes: 4096 allowed, %d entries when stopped" % files)
    assert 4096 < files <= 4096 + 100000, files


def test_deleted_but_open_files_count(cells, scrub):
    r = cells(r'''
        chunk = os.urandom(1 << 20)
        held = []
        for i in range(1000):
            f = open("/workspace/h%d" % i, "wb")
            os.unlink("/workspace/h%d" % i)
            for j in range(8):
                f.write(chunk)
            f.flush()
            held.append(f)
        report(held=len(held))
    ''', args=("--disk", "64M", "--max-file-size", "16M"))
    (res,) = r.results()
    scrub(workspace_of(r))
    assert res["status"] == "crashed" and "disk limit" in res["reason"], res


# ---------------------------------------------------------------- processes (item 11)

def test_background_processes_do_not_outlive_their_cell(cells):
    r = cells(r'''
        import subprocess, sys
        busy = subprocess.Popen([sys.executable, "-c", "while 1: pass"])
        r, w = os.pipe()
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.write(w, str(os.getpid()).encode()); os.close(w)
                while 1:
                    pass
            os._exit(0)
        os.close(w)
        daemon = int(os.read(r, 64))
        json.dump({"busy": busy.pid, "daemon": daemon}, open("/workspace/pids", "w"))
        report(busy=busy.pid, daemon=daemon)
    ''', r'''
        def state(pid):
            try:
                return open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0]
            except OSError:
                return "gone"
        p = json.load(open("/workspace/pids"))
        report(busy=state(p["busy"]), daemon=state(p["daemon"]),
               me=os.getpid())
    ''')
    res = r.results()
    assert [x["status"] for x in res] == ["ok", "ok"], r
    rep = r.reports[2]
    assert rep is not None, r
    # gone, or a zombie the sandbox's init has not reaped yet: dead either way
    assert rep["busy"] in ("gone", "Z") and rep["daemon"] in ("gone", "Z"), rep
