"""Shell completions (issue 25, item 14): bash's completes options,
--sandbox forms, the saved sessions' ids (from the hidden
`terp --list --ids`) and files; zsh's and fish's name every option of
--help; `make install` puts the three where the shells look."""
import os
import re
import shlex
import subprocess

from conftest import ROOT, TERP

BASH = os.path.join(ROOT, "completions", "terp.bash")
FILES = [BASH, os.path.join(ROOT, "completions", "_terp"),
         os.path.join(ROOT, "completions", "terp.fish")]


def complete(words, env, cwd):
    """COMPREPLY for the command line `words` (the last one being
    completed), from the bash completion function."""
    arr = " ".join(shlex.quote(w) for w in words)
    script = ("source %s; COMP_WORDS=(%s); COMP_CWORD=%d; _terp; "
              "printf '%%s\\n' \"${COMPREPLY[@]}\"" % (shlex.quote(BASH), arr,
                                                       len(words) - 1))
    p = subprocess.run(["bash", "-c", script], env=env, cwd=cwd, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stderr == "", p.stderr
    return [l for l in p.stdout.splitlines() if l]


def path_env(env):
    # `terp` on PATH is this checkout's
    return dict(env, PATH="%s:%s" % (ROOT, env.get("PATH", "/usr/bin:/bin")))


def test_bash_completes_options_and_their_values(env, tmp_path):
    e = path_env(env)
    assert complete(["terp", "--res"], e, tmp_path) == ["--resume"]
    assert set(complete(["terp", "--max-t"], e, tmp_path)) == {"--max-turns"}
    forms = complete(["terp", "--sandbox", ""], e, tmp_path)
    assert set(forms) == {"local", "ssh://", "jupyter+http://", "jupyter+https://",
                          "aca:"}, forms
    assert complete(["terp", "--sandbox", "jup"], e, tmp_path) == [
        "jupyter+http://", "jupyter+https://"]
    assert complete(["terp", "--provider", "an"], e, tmp_path) == ["anthropic"]
    assert complete(["terp", "--theme", "l"], e, tmp_path) == ["light"]
    # a value of the user's own: nothing offered
    assert complete(["terp", "--model", ""], e, tmp_path) == []


def test_bash_completes_data_files_and_subcommands(env, tmp_path):
    (tmp_path / "sales.csv").write_text("a\n1\n")
    (tmp_path / "sales-2023.parquet").write_text("")
    e = path_env(env)
    got = complete(["terp", "sal"], e, tmp_path)
    assert set(got) == {"sales.csv", "sales-2023.parquet"}, got
    assert "exec" in complete(["terp", "ex"], e, tmp_path)
    assert complete(["terp", "-p", "q", "sales.c"], e, tmp_path) == ["sales.csv"]


def test_bash_completes_session_ids_from_list_ids(env, tmp_path):
    e = path_env(env)
    for code in ("print(1)", "print(2)"):
        r = subprocess.run([TERP, "exec", "-c", code], env=env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL)
        assert r.returncode == 0, r.stderr
    r = subprocess.run([TERP, "--list", "--ids"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and r.stderr == "", r
    ids = r.stdout.split()
    assert len(ids) == 2 and all(re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{4}", i) for i in ids), ids
    for opt in ("--resume", "--delete", "--export"):
        assert sorted(complete(["terp", opt, ""], e, tmp_path)) == sorted(ids), opt
    assert complete(["terp", "--resume", ids[0][:17]], e, tmp_path)[0] == ids[0]


def test_every_option_of_help_is_in_each_completion():
    h = subprocess.run([TERP, "--help"], capture_output=True, text=True).stdout
    opts = set(re.findall(r"(?:^|\s)(--[a-z][a-z-]+)", h))
    assert len(opts) > 40, opts
    for f in FILES:
        text = open(f).read()
        if f.endswith(".fish"):
            have = {"--" + o for o in re.findall(r"-l ([a-z-]+)", text)}
        else:
            have = set(re.findall(r"--[a-z][a-z-]+", text))
        assert opts <= have, (f, sorted(opts - have))


def test_make_install_puts_the_completions_where_the_shells_look(tmp_path):
    dest = tmp_path / "dest"
    p = subprocess.run(["make", "-s", "install", "DESTDIR=%s" % dest], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    share = dest / "usr" / "local" / "share"
    want = {share / "bash-completion" / "completions" / "terp": FILES[0],
            share / "zsh" / "site-functions" / "_terp": FILES[1],
            share / "fish" / "vendor_completions.d" / "terp.fish": FILES[2]}
    for installed, src in want.items():
        assert installed.read_text() == open(src).read(), installed
    p = subprocess.run(["make", "-s", "uninstall", "DESTDIR=%s" % dest], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert not any(f.exists() for f in want), list(want)
