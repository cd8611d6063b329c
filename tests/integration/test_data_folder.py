"""A folder as a data file (issue 25 item 13): a folder of monthly CSVs or
a partitioned Parquet dataset was refused ("data file ... is a folder").
Now it is staged read-only as a folder (bound by its descriptor, as files
are; as root a read-only mount where the sandbox's uid could not read
it), its size bounded like the workspace's (the sum of its regular files
within --disk; entries and depth bounded), symlinks inside left as they
are, so they resolve in the sandbox's own view and expose nothing of the
host outside the folder; the model is told it is a folder and what it
holds.
"""
import os
from pathlib import Path

from test_headless import flags, reply

SAFETY_S = 90
MARKER = "HOST-SECRET-7f3a9c"


def monthly(tmp_path, name="monthly"):
    d = tmp_path / name
    d.mkdir()
    for i, m in enumerate(["jan", "feb", "mar"]):
        (d / ("%s.csv" % m)).write_text("day,sales\n1,%d\n2,%d\n" % (10 * (i + 1), 5))
    return d


def test_folder_of_csvs_is_read_by_a_cell_and_is_read_only(terp, tmp_path):
    d = monthly(tmp_path)
    res = terp("exec", "--json", d, "-c",
               "import glob, os, pandas as pd\n"
               "fs = sorted(glob.glob('/workspace/data/monthly/*.csv'))\n"
               "print([os.path.basename(f) for f in fs])\n"
               "print(int(pd.concat(pd.read_csv(f) for f in fs).sales.sum()))\n"
               "for f in ['/workspace/data/monthly/new.csv', fs[0]]:\n"
               "    try:\n"
               "        open(f, 'a').write('EVIL')\n"
               "        print('wrote', f)\n"
               "    except OSError as e:\n"
               "        print(e.strerror)\n"
               "try:\n"
               "    os.remove(fs[1])\n"
               "    print('removed')\n"
               "except OSError as e:\n"
               "    print(e.strerror)\n", timeout=SAFETY_S)
    assert res.rc == 0, res
    out = res.stdout_of(1).splitlines()
    assert out[0] == "['feb.csv', 'jan.csv', 'mar.csv']", res
    assert out[1] == str(10 + 20 + 30 + 3 * 5), res
    # a new file: the folder is a read-only mount; an existing one: refused
    # by its mode first, or by the mount
    assert out[2] == "Read-only file system", res
    assert all(o in ("Read-only file system", "Permission denied") for o in out[3:]), res
    assert len(out) == 5, res
    assert sorted(os.listdir(d)) == ["feb.csv", "jan.csv", "mar.csv"]
    assert (d / "jan.csv").read_text() == "day,sales\n1,10\n2,5\n"


def test_folder_over_the_disk_limit_is_refused_in_one_line(terp, tmp_path):
    d = tmp_path / "big"
    d.mkdir()
    for n in "abc":
        (d / ("%s.bin" % n)).write_bytes(b"\1" * (1 << 20))
    res = terp("exec", "--disk", "2M", d, "-c", "print(1)", timeout=SAFETY_S)
    assert res.rc != 0, res
    lines = res.err.strip().splitlines()
    assert len(lines) == 1, res
    assert "data folder" in lines[0] and str(d) in lines[0] and "3 MiB" in lines[0] \
        and "--disk" in lines[0], res


def test_folder_with_too_many_entries_is_refused_in_one_line(terp, tmp_path):
    d = tmp_path / "many"
    d.mkdir()
    for i in range(10001):
        (d / ("f%05d" % i)).touch()
    res = terp("exec", d, "-c", "print(1)", timeout=SAFETY_S)
    assert res.rc == 2, res
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and "more than 10000 entries" in lines[0], res


def escaping_folder(tmp_path):
    d = monthly(tmp_path, "leaky")
    secret = tmp_path / "secret.txt"
    secret.write_text(MARKER + "\n")
    secret.chmod(0o644)
    (d / "abs.csv").symlink_to(secret)              # absolute, outside the folder
    (d / "rel.csv").symlink_to("../secret.txt")     # relative, out of it
    (d / "passwd").symlink_to("/etc/passwd")
    return d


def test_symlink_out_of_the_folder_exposes_no_host_file(terp, tmp_path):
    d = escaping_folder(tmp_path)
    host_passwd = Path("/etc/passwd").read_text()
    res = terp("exec", "--json", d, "-c",
               "import os\n"
               "for n in ['abs.csv', 'rel.csv', 'passwd']:\n"
               "    p = '/workspace/data/leaky/' + n\n"
               "    try:\n"
               "        print(n, repr(open(p).read()))\n"
               "    except OSError as e:\n"
               "        print(n, e.strerror)\n", timeout=SAFETY_S)
    assert res.rc == 0, res
    out = res.stdout_of(1)
    assert MARKER not in out, out
    lines = dict(line.split(" ", 1) for line in out.splitlines())
    assert lines["abs.csv"] == "No such file or directory", out
    assert lines["rel.csv"] == "No such file or directory", out
    # /etc/passwd inside is the sandbox's own, not the host's
    assert "root:" not in lines["passwd"] and host_passwd not in out, out


def test_model_is_told_it_is_a_folder_and_what_it_holds(terp, fake, tmp_path):
    d = escaping_folder(tmp_path)
    srv = fake([reply("openai", "Done.")])
    f, e = flags("openai", srv)
    r = terp("-p", "Describe the data.", "--json", *f, str(d), extra_env=e)
    assert r.rc == 0, r
    system = srv.requests()[0]["body"]["messages"][0]["content"]
    assert "- /workspace/data/leaky (a folder), the user's %s" % d.resolve() in system, system
    assert "a folder (read-only): 3 files, 57 B in all (symlinks not followed)" in system, system
    assert "files: feb.csv, jan.csv, mar.csv" in system, system
    # the first file's columns, as for a CSV of its own
    first = system.split("the first, feb.csv:", 1)[1]
    assert "day" in first.split("\n\n")[0] and "sales" in first.split("\n\n")[0], system
    assert MARKER not in system
    assert "/load" in system


def test_welcome_screen_shows_a_folder_and_what_it_holds(fake_model, tmux, tmp_path):
    from tui_tmux import TERP, model_args, model_env
    monthly(tmp_path)
    port = fake_model({"turns": [{"openai": {"text": "Noted."}, "repeat": True}]})
    cmd = " ".join([TERP, *model_args(port, tmp_path / "out"), str(tmp_path / "monthly")])
    t = tmux(cmd, model_env(tmp_path), tmp_path, 160, 40, ready=r"│ ready", timeout=30)
    s = t.wait(r"folder · 3 files")
    line = [l for l in s.splitlines() if "folder · 3 files" in l][0]
    assert " monthly  " in line and "· from monthly" in line, s
    assert "feb.csv, jan.csv, mar.csv" in s, s


def test_folder_loaded_into_a_running_session_is_copied_read_only(fake_model, tmux, tmp_path):
    """A running sandbox cannot get a new mount: /load of a folder copies it
    (bounded as above), read-only in the sandbox, its symlinks as they are."""
    from tui_tmux import TERP, model_args, model_env
    d = escaping_folder(tmp_path)
    port = fake_model({"turns": [{"openai": {"text": "Noted."}, "repeat": True}]})
    cmd = " ".join([TERP, *model_args(port, tmp_path / "out")])
    t = tmux(cmd, model_env(tmp_path), tmp_path, 160, 40, ready=r"│ ready", timeout=30)
    t.text("/py print(1)")
    t.keys("Enter")
    t.wait(r"\[1\] you · ok", timeout=30)
    t.text("/load %s" % d)
    t.keys("Enter")
    t.wait(r"loaded .*leaky as /workspace/data/leaky", timeout=30)
    t.text("/py import os, pandas as pd; p = '/workspace/data/leaky/'; "
           "print('SUM', int(sum(pd.read_csv(p + m + '.csv').sales.sum() for m in "
           "['jan', 'feb', 'mar'])), os.path.exists(p + 'abs.csv'), "
           "os.access(p + 'jan.csv', os.W_OK), os.access(p, os.W_OK))")
    t.keys("Enter")
    s = t.wait(r"\[2\] you · ok", timeout=30)
    assert "SUM 75 False False False" in s, s
    assert MARKER not in s


def test_private_folder_as_root_is_mounted_readable(terp, tmp_path):
    """As root, a folder the sandbox's uid cannot read, or one holding 0600
    files, is mounted read-only and idmapped (as a 0600 file is): its
    files read in the cell, nothing copied, nothing writable."""
    import os
    if os.geteuid() != 0:
        import pytest
        pytest.fail("this checks terp running as root; run the tests as root",
                    pytrace=False)
    from test_data_files import idmap_or_fail
    idmap_or_fail(tmp_path)
    for mode in (0o700, 0o755):
        d = monthly(tmp_path, "private-%o" % mode)
        for f in d.iterdir():
            f.chmod(0o600)
        d.chmod(mode)
        res = terp("exec", "--json", d, "-c",
                   "import pandas as pd\n"
                   "p = '/workspace/data/%s/'\n"
                   "print(int(sum(pd.read_csv(p + m + '.csv').sales.sum() for m in "
                   "['jan', 'feb', 'mar'])))\n"
                   "try:\n"
                   "    open(p + 'jan.csv', 'a')\n"
                   "except OSError as e:\n"
                   "    print(e.strerror)\n" % d.name, timeout=SAFETY_S)
        assert res.rc == 0, res
        assert res.stdout_of(1) == "75\nRead-only file system\n", (mode, res)
        assert (d / "jan.csv").read_text() == "day,sales\n1,10\n2,5\n"
