"""Data files and the session's folders (issue 8, items 4 and 10).

Item 4: as root, a 0600 data file was staged as a 0444 copy under 0711
folders; any local user could read it, and a cell could chmod /workspace
0777 for everyone. Now the session folders are closed to other users and a
copy is readable by the sandbox's uid only; checked from the host as user
nobody (a forked child that drops to uid 65534).

Item 10: a symlinked data file arrived as a dangling link, a FIFO hung
terp, and staging copied big files. Now data files are opened without
blocking, followed to the real file, refused in one line unless regular
(or a folder: test_data_folder.py),
and bound into the sandbox by their fd (no copy) when the sandbox uid can
read them.
"""
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import TERP

SAFETY_S = 60      # a hang fails the test instead of stalling the run


def as_nobody(fn):
    """Runs fn() in a forked child as uid/gid 65534 and returns what it
    returned (JSON-able)."""
    if os.geteuid() != 0:
        pytest.fail("acting as another user needs root; run the tests as root "
                    "(the sandbox's uid drop is what this checks)", pytrace=False)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            out = json.dumps(fn()).encode()
        except BaseException as e:           # report, never return into pytest
            out = json.dumps({"child-error": repr(e)}).encode()
        os.write(w, out)
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    res = json.loads(data)
    assert not (isinstance(res, dict) and "child-error" in res), res
    return res


def session_dir(res):
    (ev,) = res.of("session")
    return Path(ev["workspace"])


def try_all(paths):
    """For each path: "OK" when nobody can list it (a folder) or read it
    (a file), else the errno name."""
    import errno
    out = {}
    for p in paths:
        try:
            if os.path.isdir(p):
                os.listdir(p)
            else:
                with open(p, "rb") as f:
                    f.read(1)
            out[p] = "OK"
        except OSError as e:
            out[p] = errno.errorcode.get(e.errno, str(e.errno))
    return out


def test_private_data_and_workspace_stay_private(terp, tmp_path):
    secret = tmp_path / "secret.csv"
    secret.write_text("k,v\nsecret,42\n")
    secret.chmod(0o600)
    res = terp("exec", "--json", secret, "-c",
               "import os\n"
               "print(open('/workspace/data/secret.csv').read().split()[1])\n"
               "open('/workspace/mine.txt', 'w').write('cell data')\n"
               "os.chmod('/workspace/mine.txt', 0o666)\n"
               "os.chmod('/workspace', 0o777)\n", timeout=SAFETY_S)
    assert res.rc == 0, res
    assert res.stdout_of(1) == "secret,42\n", res
    sd = session_dir(res)
    # Every path of the session, found as root: none may be listed or read
    # by another user.
    paths = [str(sd)]
    for dirpath, dirs, files in os.walk(sd):
        paths += [os.path.join(dirpath, n) for n in dirs + files]
    # (the workspace's data folder holds a link to the staged copy, which
    # points into the sandbox's /run/terp/data: the copy is the file)
    staged = [p for p in paths if p.endswith("secret.csv") and not os.path.islink(p)]
    assert staged, paths
    ws = [p for p in paths if p.endswith("/workspace")]
    assert ws and stat.S_IMODE(os.stat(ws[0]).st_mode) == 0o777, "the cell's chmod did not happen"
    got = as_nobody(lambda: try_all(paths))
    readable = {p: v for p, v in got.items() if v == "OK"}
    assert readable == {}, readable
    # The staged copy itself: readable by the sandbox's uid (its group), by no
    # one else.
    st = os.stat(staged[0])
    assert stat.S_IMODE(st.st_mode) & 0o007 == 0, oct(st.st_mode)


def test_symlinked_data_file_is_read_through(terp, tmp_path):
    real = tmp_path / "real.csv"
    real.write_text("a,b\n1,2\n")
    real.chmod(0o644)
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    res = terp("exec", "--json", link, "-c",
               "print(repr(open('/workspace/data/link.csv').read()))", timeout=SAFETY_S)
    assert res.rc == 0, res
    assert res.stdout_of(1) == "'a,b\\n1,2\\n'\n", res


def test_fifo_is_refused_at_once_in_one_line(terp, tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    res = terp("exec", fifo, "-c", "print(1)", timeout=SAFETY_S)
    assert res.rc == 2, res
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and "FIFO" in lines[0] and str(fifo) in lines[0], res


def blocks_under(path):
    total = 0
    for dirpath, dirs, files in os.walk(path):
        for n in dirs + files:
            total += os.lstat(os.path.join(dirpath, n)).st_blocks * 512
    return total


def test_big_file_on_another_file_system_is_bound_not_copied(terp, tmp_path):
    shm = Path("/dev/shm")
    big = shm / ("terp-test-big-%d.bin" % os.getpid())
    size = 10 << 30
    try:
        with open(big, "wb") as f:
            f.truncate(size)
            # 10 MiB of real data spread over the file: a copy would cost
            # at least that much disk, holes kept or not.
            for i in range(10):
                f.seek(i * (size // 10))
                f.write(bytes([65 + i]) * (1 << 20))
        big.chmod(0o644)
        assert os.stat(big).st_dev != os.stat(tmp_path).st_dev, \
            "/dev/shm and the test folder are the same file system"
        res = terp("exec", "--json", big, "-c",
                   "import os\n"
                   "p = '/workspace/data/%s'\n"
                   "f = open(p, 'rb'); f.seek(%d); print(os.stat(p).st_size, f.read(3))"
                   % (big.name, 7 * (size // 10)), timeout=SAFETY_S)
        assert res.rc == 0, res
        assert res.stdout_of(1) == "%d b'HHH'\n" % size, res
        used = blocks_under(session_dir(res))
        assert used < (1 << 20), "the session folder holds %d bytes" % used
    finally:
        big.unlink(missing_ok=True)


def session_blocks(res):
    """Bytes the session's folders hold: the session folder and, as root,
    its sandbox folder under /var/lib/terp/sessions when it went there."""
    (ev,) = res.of("session")
    sd = Path(ev["workspace"])
    total = blocks_under(sd)
    var = Path("/var/lib/terp/sessions") / ev["id"]
    if var.exists():
        total += blocks_under(var)
    return total


# File systems the kernel cannot idmap (mount_setattr(2): EINVAL): an
# overlay (a container's root), network and FUSE mounts.
NO_IDMAP_FS = {"overlayfs", "nfs", "fuseblk", "fuse", "v9fs", "smb2", "cifs"}


def idmap_or_fail(path):
    """A private data file reaches the sandbox as an idmapped mount, which
    needs a user namespace (the kernel refuses one to a chrooted process:
    unshare(2) EPERM) and a file system that can be idmapped (an overlay
    cannot); elsewhere terp copies the file, correctly. Such a machine
    cannot run these tests: one line says why."""
    r = subprocess.run(["unshare", "--user", "true"], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail("this machine refuses user namespaces (unshare --user: %s; a chroot "
                    "does), so terp cannot idmap a private data file: run the tests "
                    "outside a chroot" % (r.stderr.strip() or r.returncode), pytrace=False)
    fs = subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True,
                        text=True).stdout.strip()
    old_tmpfs = fs == "tmpfs" and tuple(map(int, os.uname().release.split(".")[:2])) < (6, 3)
    if fs in NO_IDMAP_FS or old_tmpfs:
        pytest.fail("%s is on %s, which this kernel cannot idmap, so terp copies a private "
                    "data file there: run the tests with a --basetemp on a disk's file "
                    "system" % (path, fs), pytrace=False)


def test_private_file_as_root_is_mounted_not_copied(terp, tmp_path):
    """Issue 23 item 9: as root, a 0600 data file was copied into every
    session (4 GB: 10.7 s and its disk). Now it is given to the sandbox as
    a read-only mount idmapped to the sandbox's uid: readable in the cell,
    not writable, not copied."""
    if os.geteuid() != 0:
        pytest.fail("this checks terp running as root; run the tests as root",
                    pytrace=False)
    idmap_or_fail(tmp_path)
    secret = tmp_path / "private.csv"
    size = 32 << 20
    with open(secret, "wb") as f:
        f.write(b"k,v\n")
        f.write(b"x,1\n" * ((size - 4) // 4))
    secret.chmod(0o600)
    mounts_before = Path("/proc/self/mountinfo").read_text()
    res = terp("exec", "--json", secret, "-c",
               "import os, stat\n"
               "p = '/workspace/data/private.csv'\n"
               "print(os.stat(p).st_size, open(p).readline().strip())\n"
               "def tryop(f, *a):\n"
               "    try:\n"
               "        f(*a)\n"
               "        return 'OK'\n"
               "    except OSError as e:\n"
               "        return e.strerror\n"
               "import fcntl\n"
               "f = open(p)\n"
               "print(tryop(lambda: open(p, 'a').write('EVIL')),\n"
               "      tryop(os.truncate, p, 0), tryop(os.chmod, p, 0o666),\n"
               "      tryop(os.utime, p, (0, 0)), tryop(os.remove, p))\n"
               "# its owner, through the idmap, may not hold the host's openers\n"
               "print(tryop(fcntl.fcntl, f.fileno(), fcntl.F_SETLEASE, fcntl.F_RDLCK))\n",
               timeout=SAFETY_S)
    assert res.rc == 0, res
    out = res.stdout_of(1).splitlines()
    assert out[0] == "%d k,v" % size, res
    assert "OK" not in out[1].split(" "), out
    assert "Read-only file system" in out[1], out
    assert out[2] == "Operation not permitted", out
    used = session_blocks(res)
    assert used < (1 << 20), "the session's folders hold %d bytes: a copy" % used
    # the host file is as it was, and the host's mount table never changed
    st = os.stat(secret)
    assert (stat.S_IMODE(st.st_mode), st.st_size, st.st_uid) == (0o600, size, 0)
    assert Path("/proc/self/mountinfo").read_text() == mounts_before


def test_private_file_under_closed_folder_as_root_is_mounted(terp, tmp_path):
    """A readable file under a folder the sandbox's uid cannot search (a
    0700 home) was copied too: it is mounted the same way, no idmap."""
    if os.geteuid() != 0:
        pytest.fail("this checks terp running as root; run the tests as root",
                    pytrace=False)
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    closed.chmod(0o700)
    f = closed / "open.csv"
    f.write_bytes(b"a,b\n" + b"1,2\n" * (4 << 20))
    f.chmod(0o644)
    res = terp("exec", "--json", f, "-c",
               "print(open('/workspace/data/open.csv').readline().strip())",
               timeout=SAFETY_S)
    assert res.rc == 0, res
    assert res.stdout_of(1) == "a,b\n", res
    used = session_blocks(res)
    assert used < (1 << 20), "the session's folders hold %d bytes: a copy" % used
