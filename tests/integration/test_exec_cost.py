"""What a `terp exec` cell costs beyond running it (issue 23 items 4-6):
the journal keeps no running/back-to-ready records around every cell,
a big out/ is watched instead of listed after every cell (and nothing is
missed for it), and the preload waits for a sign of need. Figures:
bench/exec_cost.py."""
import json
import os
import signal
import subprocess
import time


MANY = 300  # over the driver's WATCH_MIN (256)


def journal(env):
    base = os.path.join(env["XDG_STATE_HOME"], "terp", "sessions")
    [sid] = os.listdir(base)
    with open(os.path.join(base, sid, "notebook.jsonl")) as f:
        return [json.loads(l) for l in f if l.endswith("\n")]


def test_the_journal_has_no_kernel_records_around_each_cell(terp, env):
    r = terp("exec", "--json", "-c", "x = 1", "-c", "x += 1", "-c", "x", "-c", "x")
    assert r.rc == 0, r.err
    assert r.results()[-1]["value"] == "2"
    lines = journal(env)
    states = [l["state"] for l in lines if l["t"] == "kernel"]
    assert "busy" not in states, states
    assert states[0] == "starting" and len(states) <= 3, states
    assert [l["c"] for l in lines if l["t"] == "result"] == [1, 2, 3, 4]


def test_a_big_out_folder_is_watched_and_misses_nothing(terp, tmp_path):
    cells = [
        # MANY files, beyond the per-cell artifact cap (the rest: skipped)
        "import os, sys\nm = sys.modules['__main__']\n"
        "os.makedirs('/workspace/out/many')\n"
        "for i in range(%d): open('/workspace/out/many/f%%03d' %% i, 'w').close()" % MANY,
        "print(type(m._watch).__name__)",
        "open('/workspace/out/new.txt', 'w').write('one')",
        "open('/workspace/out/new.txt', 'a').write(' two')",      # in place
        "os.makedirs('/workspace/out/sub'); open('/workspace/out/sub/a.txt', 'w').write('a')",
        "open('/workspace/out/sub/b.txt', 'w').write('b')",       # the new folder's
        "x = 1",                                                  # nothing
        "open('/workspace/moved.txt', 'w').write('m')\n"
        "os.rename('/workspace/moved.txt', '/workspace/out/moved.txt')",
        "print(type(m._watch).__name__)",
        # the watch's fd closed by the cell: a scan, then a new watch
        "os.closerange(3, 1000)\nopen('/workspace/out/c.txt', 'w').write('c')",
        "open('/workspace/out/many/f007', 'w').write('changed')",
        "print(type(m._watch).__name__)",
    ]
    args = ["exec", "--json"]
    for c in cells:
        args += ["-c", c]
    r = terp(*args, timeout=120)
    assert r.rc == 0, r.err
    assert [e["status"] for e in r.results()] == ["ok"] * len(cells), r.results()
    assert r.stdout_of(2) == "_OutWatch\n"
    assert r.stdout_of(9) == "_OutWatch\n"
    assert r.stdout_of(12) == "_OutWatch\n"
    by = {}
    for a in r.of("artifact"):
        by.setdefault(a["cell"], []).append(a["name"])
    assert by.get(3) == ["new.txt"], by
    assert by.get(4) == ["new.txt"], by
    assert by.get(5) == ["sub_a.txt"], by
    assert by.get(6) == ["sub_b.txt"], by
    assert 7 not in by and 2 not in by and 9 not in by, by
    assert by.get(8) == ["moved.txt"], by
    assert by.get(10) == ["c.txt"], by
    assert by.get(11) == ["many_f007"], by
    assert (tmp_path / "out" / "new.txt").read_text() == "one two"


def test_exec_preloads_only_on_need(terp, tmp_path):
    show = "import os; print(os.environ.get('TERP_PRELOAD'))"
    r = terp("exec", "--json", "-c", show)
    assert r.rc == 0, r.err
    assert r.stdout_of(1) == "need\n"
    data = tmp_path / "d.csv"
    data.write_text("a,b\n1,2\n")
    r = terp("exec", "--json", data, "-c", show)
    assert r.rc == 0, r.err
    assert r.stdout_of(1) == "1\n"


def test_exec_says_loading_only_when_it_loads(terp, tmp_path):
    """Without data the libraries wait for a cell that names one: "loading
    pandas, numpy, matplotlib" would be a claim about work not started.
    With a data file the preload starts at the first idle gap, and says so."""
    def states(r):
        return [e["state"] for e in r.events if e["type"] == "kernel"]
    r = terp("exec", "--json", "-c", "x = 1", "-c", "import numpy")
    assert r.rc == 0, r.err
    assert "loading libraries" not in states(r), states(r)
    data = tmp_path / "d.csv"
    data.write_text("a,b\n1,2\n")
    r = terp("exec", "--json", data, "-c", "x = 1")
    assert r.rc == 0, r.err
    assert "loading libraries" in states(r), states(r)


def test_a_long_session_watches_out_and_misses_nothing(terp, tmp_path):
    """From the WATCH_CELLS-th cell, out/ is watched whatever it holds (a
    listing costs 10 system calls a cell, the watch's look 1), and what
    the cells write there still arrives: a new file, the same file
    changed in place, a file in a new folder and the cell after it."""
    probe = "import sys\nm = sys.modules['__main__']\nprint(type(m._watch).__name__)"
    cells = [probe, "x = 0"] + ["x += 1"] * 500 + [
        probe,
        "open('/workspace/out/late.txt', 'w').write('one')",
        "x += 1",
        "open('/workspace/out/late.txt', 'a').write(' two')",     # in place
        "import os; os.makedirs('/workspace/out/d'); open('/workspace/out/d/a.txt', 'w').write('a')",
        "open('/workspace/out/d/b.txt', 'w').write('b')",         # the new folder's
        "x",
    ]
    args = ["exec", "--json"]
    for c in cells:
        args += ["-c", c]
    r = terp(*args, timeout=180)
    assert r.rc == 0, r.err
    res = r.results()
    assert [e["status"] for e in res] == ["ok"] * len(cells), [e for e in res if e["status"] != "ok"][:1]
    n = len(cells)
    assert r.stdout_of(1) == "NoneType\n"          # a short session lists out/
    assert r.stdout_of(n - 6) == "_OutWatch\n"      # a long one watches it
    by = {}
    for a in r.of("artifact"):
        by.setdefault(a["cell"], []).append(a["name"])
    assert by == {n - 5: ["late.txt"], n - 3: ["late.txt"], n - 2: ["d_a.txt"],
                  n - 1: ["d_b.txt"]}, by
    assert (tmp_path / "out" / "late.txt").read_text() == "one two"
    assert res[-1]["value"] == "501"


def test_where_ctypes_is_loaded_out_is_watched_at_once(terp):
    probe = "import sys\nm = sys.modules['__main__']\nprint(type(m._watch).__name__)"
    r = terp("exec", "--json", "-c", "import ctypes", "-c", probe,
             "-c", "open('/workspace/out/w.txt', 'w').write('w')")
    assert r.rc == 0, r.err
    assert r.stdout_of(2) == "_OutWatch\n"
    assert [(a["cell"], a["name"]) for a in r.of("artifact")] == [(3, "w.txt")]


def _io(pid):
    """(read calls, write calls) of a live process, from /proc/PID/io."""
    with open("/proc/%d/io" % pid) as f:
        kv = dict(l.split(": ") for l in f.read().splitlines())
    return int(kv["syscr"]), int(kv["syscw"])


def _host_calls(env, tmp_path, n):
    """terp's own read and write calls over n trivial cells and the rest
    of a run, counted while its last cell sleeps (terp is alive then)."""
    from conftest import TERP
    args = [str(TERP), "exec", "--json", "-c", "x = 0"]
    for _ in range(n):
        args += ["-c", "x += 1"]
    args += ["-c", "print('end', flush=True)\nimport time\ntime.sleep(60)"]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env, cwd=tmp_path, text=True)
    try:
        for line in p.stdout:
            ev = json.loads(line)
            if ev["type"] == "stdout" and ev["text"] == "end\n":
                time.sleep(0.3)  # the idle edge's deferred work is done
                return _io(p.pid)
        raise AssertionError("terp exec ended before its last cell: %s" % p.stderr.read())
    finally:
        p.kill()
        p.wait()
        p.stdout.close()
        p.stderr.close()


def test_a_trivial_cell_costs_terp_at_most_three_writes(env, tmp_path):
    """A script's cell is one write of the command to the sandbox, one of
    the journal (that cell's result and the next cell together) and at
    most one of the --json lines, in that order of journal then screen:
    it was five (two journal lines and two --json events written one by
    one). The --json lines of cells that come back to back go out
    together, at most every 2 ms, so a fast machine writes fewer."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    r0, w0 = _host_calls(env, tmp_path / "a", 20)
    r1, w1 = _host_calls(env, tmp_path / "b", 220)
    writes = (w1 - w0) / 200
    assert 1.95 <= writes <= 3.05, (writes, (r1 - r0) / 200)


def test_what_terp_exec_showed_is_in_the_journal_after_kill_9(env, tmp_path):
    """The journal's lines and the --json events are written in batches
    (before terp waits): still, whatever a script saw is in the journal
    when terp is killed with SIGKILL right after."""
    from conftest import TERP
    args = [str(TERP), "exec", "--json", "-c", "x = 0"]
    for i in range(30):
        args += ["-c", "x += 1\nprint(x)"]
    args += ["-c", "print('end', flush=True)\nimport time\ntime.sleep(60)"]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env, cwd=tmp_path, text=True)
    shown = []
    for line in p.stdout:
        shown.append(json.loads(line))
        if shown[-1]["type"] == "stdout" and shown[-1]["text"] == "end\n":
            break
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    p.stdout.close()
    p.stderr.close()
    lines = journal(env)
    cells = [(e["cell"], e["code"]) for e in shown if e["type"] == "cell"]
    results = [(e["cell"], e["status"]) for e in shown if e["type"] == "result"]
    out = [(e["cell"], e["text"]) for e in shown if e["type"] == "stdout"]
    assert len(cells) == 32 and len(results) == 31, shown[-3:]
    assert [(l["n"], l["code"]) for l in lines if l["t"] == "cell"] == cells
    assert [(l["c"], l["status"]) for l in lines if l["t"] == "result"] == results
    got = {}
    for l in lines:
        if l["t"] == "out":
            got[l["c"]] = got.get(l["c"], "") + l.get("d", "")
    want = {}
    for c, t in out:
        want[c] = want.get(c, "") + t
    assert got == want, (got, want)


def test_what_a_cell_adds_to_the_site_folder_is_seen_at_its_end(terp):
    """The driver looks at the session's site folder after a cell only
    when the cell may have changed it (a process, a file written: audit
    events) or every 50 ms, not a stat a cell: still, a package a cell
    adds is said at that cell's end, by a process or by Python itself."""
    site = ("import sys\nsite = '/workspace/.terp/site/python%d.%d/' % sys.version_info[:2]\n")
    r = terp("exec", "--json",
             "-c", site + "import os\nos.makedirs(site + 'made_here-1.0.dist-info')",
             "-c", "x = 1", "-c", "x += 1",
             "-c", site + "import subprocess\n"
             "subprocess.run(['mkdir', site + 'by_a_process-2.0.dist-info'], check=True)",
             "-c", "x += 1",
             "-c", site + "open(site + 'f.txt', 'w').close()\n"
             "import os\nos.rename(site + 'f.txt', site + 'renamed-3.0.dist-info')")
    assert r.rc == 0, r.err
    got = [(e["cell"], e["name"], e["version"]) for e in r.of("installed")]
    assert got == [(1, "made_here", "1.0"), (4, "by_a_process", "2.0"),
                   (6, "renamed", "3.0")], got


def test_the_watch_sits_beside_the_channel_and_survives_its_loss(terp):
    """The watch's fd goes high, beside the channel's (one read a look, no
    fstat): a cell's closerange over the low fds leaves it, and a cell
    that closes it anyway gets a scan, so nothing is missed."""
    probe = "import sys\nm = sys.modules['__main__']\nprint(type(m._watch).__name__)"
    r = terp("exec", "--json", "-c", "import ctypes", "-c", probe,
             "-c", "print(m._watch.fd > 1000, m._watch.high)",
             "-c", "import os\nos.closerange(3, 1000)\nopen('/workspace/out/a.txt', 'w').write('a')",
             "-c", "os.close(m._watch.fd)\nopen('/workspace/out/b.txt', 'w').write('b')",
             "-c", "open('/workspace/out/c.txt', 'w').write('c')",
             "-c", probe)
    assert r.rc == 0, r.err
    assert [e["status"] for e in r.results()] == ["ok"] * 7, r.results()
    assert r.stdout_of(2) == "_OutWatch\n"
    assert r.stdout_of(3) == "True True\n"
    assert [(a["cell"], a["name"]) for a in r.of("artifact")] == [
        (4, "a.txt"), (5, "b.txt"), (6, "c.txt")], r.of("artifact")
    assert r.stdout_of(7) == "_OutWatch\n"


def test_one_line_assignments_compile_from_their_text_and_show_no_value(terp):
    """A one-line assignment skips the syntax tree (compiled from its text:
    5 us, not 9.5): values, errors and line numbers are as before, and
    what only looks like one (a comparison, a keyword argument, a
    lambda's default) still shows its value."""
    cells = ["x = 1", "x += 1", "x == 2", "d = {}", "d['k'] = 2", "d['k'] == 2",
             "f = lambda a=1: a", "f(a=3)", "x = y = 5", "x", "x <= 5", "x != 5",
             "  x = 1", "x = ", "x = 1 / 0"]
    args = ["exec", "--json"]
    for c in cells:
        args += ["-c", c]
    r = terp(*args)
    res = r.results()
    assert [e.get("value") for e in res[:12]] == [
        None, None, "True", None, None, "True", None, "3", None, "5", "True", "False"], res
    assert [e["status"] for e in res[:12]] == ["ok"] * 12, res
    errs = [(e["status"], e.get("error", {}).get("ename")) for e in res[12:]]
    assert errs == [("error", "IndentationError"), ("error", "SyntaxError"),
                    ("error", "ZeroDivisionError")], res[12:]
    assert "<cell 15>" in res[14]["error"]["traceback"] and "line 1" in res[14]["error"]["traceback"], res[14]
