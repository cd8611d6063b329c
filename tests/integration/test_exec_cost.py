"""What a `terp exec` cell costs beyond running it (issue 23 items 4-6):
the journal keeps no running/back-to-ready records around every cell,
a big out/ is watched instead of listed after every cell (and nothing is
missed for it), and the preload waits for a sign of need. Figures:
bench/exec_cost.py."""
import json
import os


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
