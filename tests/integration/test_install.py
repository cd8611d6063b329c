"""`make install PREFIX=...` after a build for another prefix (issue 25,
item 7): the installed terp finds its own data (the demo's recording),
and where none is found the error names every path looked at."""
import os
import shutil
import subprocess

from conftest import ROOT, TERP

Q1 = "What month had the highest revenue per dollar of marketing spend, per channel?"


def make(*args):
    p = subprocess.run(["make", "-s", *args], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return p


def test_install_into_another_prefix_finds_its_demo(env, tmp_path):
    prefix = tmp_path / "prefix"
    make("terp")                         # built for the default prefix
    try:
        make("install", "PREFIX=%s" % prefix)
        installed = prefix / "bin" / "terp"
        assert (prefix / "share" / "terp" / "demo.json").exists()
        # baked in: the new DATADIR, not /usr/local/share/terp
        assert str(prefix / "share" / "terp").encode() in installed.read_bytes()
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        shutil.copy(os.path.join(ROOT, "examples", "sales.csv"), elsewhere)
        p = subprocess.run([str(installed), "--python", "/usr/bin/python3", "--provider",
                            "demo", "-p", Q1, "sales.csv"], cwd=elsewhere, env=env,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        assert "email" in p.stdout and "10.05" in p.stdout, p.stdout
        # moved as a tree (a relocated prefix), it still finds its own
        moved = tmp_path / "moved"
        shutil.move(str(prefix), str(moved))
        p = subprocess.run([str(moved / "bin" / "terp"), "--python", "/usr/bin/python3",
                            "--provider", "demo", "-p", Q1, "sales.csv"], cwd=elsewhere,
                           env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
    finally:
        make("terp")                     # the checkout's binary as it was


def test_no_recording_names_every_path_looked_at(env, tmp_path):
    lone = tmp_path / "bin"
    lone.mkdir()
    shutil.copy(TERP, lone / "terp")
    p = subprocess.run([str(lone / "terp"), "--provider", "demo", "-p", "hi"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("terp: demo: no recording found; looked for %s/examples/demo.json, "
                               "%s/../share/terp/demo.json, " % (lone, lone)), lines[0]
    assert "examples/demo.json (make install puts it in PREFIX/share/terp)" in lines[0]


# ---- item 14 (part): the options as the shells and SDKs have them ------

def test_V_and_did_you_mean(terp):
    r = terp("-V")
    assert r.rc == 0 and r.out.startswith("terp "), r
    r = terp("--modle", "x", "-p", "hi")
    assert r.rc == 2, r
    assert r.err.strip() == ("terp: unknown option --modle; did you mean --model? "
                             "(try terp --help)"), r.err
    r = terp("--zzzzzz")
    assert r.err.strip() == "terp: unknown option --zzzzzz (try terp --help)", r.err


def test_requests_name_terp_as_their_user_agent(terp, fake):
    from test_headless import KEY
    srv = fake([{"openai": {"text": "Done."}}])
    r = terp("-p", "hi", "--provider", "openai", "--base-url", srv.url,
             extra_env={"OPENAI_API_KEY": KEY})
    assert r.rc == 0, r
    v = subprocess.run([str(TERP), "--version"], capture_output=True, text=True).stdout
    version = v.split()[1]
    assert [q["headers"].get("user-agent") for q in srv.requests()] == ["terp/" + version]


def test_ollama_host_is_where_ollama_is(terp, fake):
    srv = fake([{"openai": {"text": "Done."}}])
    hostport = srv.root.split("://", 1)[1].rstrip("/")
    r = terp("-p", "hi", "--provider", "ollama", "--model", "m",
             extra_env={"OLLAMA_HOST": hostport})
    assert r.rc == 0, r
    assert "/v1/chat/completions" in [q["path"] for q in srv.requests()], srv.requests()
