"""What terp writes from text the sandbox chose, read by a terminal, a
script or a Markdown renderer (issue 8, 2.7 and 2.8): --json lines carry
C1, DEL and bidi controls as \\u escapes and decode to the same text; the
text printer shows them as escapes; a Markdown export of a real session
keeps a 70-backtick output line inside its block and an artifact name
with newlines and HTML as plain text."""
import json
import re
import subprocess

from conftest import TERP

# U+009D (OSC on terminals that read C1) ... BEL, U+202E, DEL, U+2066,
# U+200F, U+061C, U+0085
TEXT = "\u009d]0;x\u0007 \u202e \x7f \u2066\u200f\u061c\u0085"
CONTROLS = [0x7f] + list(range(0x80, 0xa0)) + [0x61c, 0x200e, 0x200f] + \
    list(range(0x202a, 0x202f)) + list(range(0x2066, 0x206a))


def run(env, cwd, *args):
    return subprocess.run([str(TERP), *args], capture_output=True, env=env,
                          cwd=cwd, timeout=120)


def raw_controls(data):
    """The DEL, C1 and bidi controls in bytes, as UTF-8 (and raw C1
    bytes, which are not UTF-8 but some terminals still read)."""
    text = data.decode("utf-8", errors="surrogateescape")
    return sorted({hex(ord(ch)) for ch in text if ord(ch) in CONTROLS or
                   0xdc80 <= ord(ch) <= 0xdc9f})


def test_json_lines_escape_c1_del_and_bidi(env, tmp_path):
    p = run(env, tmp_path, "exec", "--json", "-c", "print(%r)" % TEXT)
    assert p.returncode == 0, p.stderr
    assert raw_controls(p.stdout) == [], p.stdout
    assert b"\\u009d]0;x\\u0007 \\u202e \\u007f \\u2066\\u200f\\u061c\\u0085" in p.stdout
    events = [json.loads(line) for line in p.stdout.decode().splitlines()]
    out = "".join(e["text"] for e in events if e["type"] == "stdout")
    assert out == TEXT + "\n"
    # the code, echoed in the cell event, too
    assert [e["code"] for e in events if e["type"] == "cell"] == ["print(%r)" % TEXT]


def test_text_printer_shows_controls_as_escapes(env, tmp_path):
    p = run(env, tmp_path, "exec", "-c", "print(%r)" % TEXT)
    assert p.returncode == 0, p.stderr
    assert raw_controls(p.stdout) == [] and raw_controls(p.stderr) == []
    assert p.stdout == (b"\\u009d]0;x\\u0007 \\u202e \\u007f "
                        b"\\u2066\\u200f\\u061c\\u0085\n")


def fenced_lines(md):
    """Indexes of the lines inside fenced code blocks (CommonMark: a
    run of >= 3 backticks opens; a line of at least as many closes)."""
    inside, fence = set(), 0
    for i, line in enumerate(md.split("\n")):
        run = len(line) - len(line.lstrip("`"))
        if fence == 0 and run >= 3:
            fence = run
        elif fence and run >= fence and line[run:].strip(" ") == "":
            fence = 0
        elif fence:
            inside.add(i)
    return inside


def test_markdown_export_of_a_hostile_session(env, tmp_path):
    # One name with markup (copied under a name terp chooses) and one with
    # newlines (refused, and said so): neither reaches the Markdown raw.
    name = "<img src=x onerror=alert(1)>](javascript:alert(2)).png"
    bad = "x\n<img src=y>\n.png"
    code = ("print('`' * 70)\nprint('<b>after</b>')\n"
            "open('/workspace/out/' + %r, 'wb').write(b'png')\n"
            "open('/workspace/out/' + %r, 'wb').write(b'png')" % (name, bad))
    p = run(env, tmp_path, "exec", "--json", "-c", code)
    assert p.returncode == 0, p.stderr
    events = [json.loads(line) for line in p.stdout.decode().splitlines()]
    sid = [e["id"] for e in events if e["type"] == "session"][0]
    names = [e["name"] for e in events if e["type"] == "artifact"]
    assert len(names) == 1 and "<" not in names[0] and "/" not in names[0], names
    stderr = "".join(e["text"] for e in events if e["type"] == "stderr")
    assert "not copied" in stderr, stderr
    p = run(env, tmp_path, "--export", sid, "s.md")
    assert p.returncode == 0, p.stderr
    md = (tmp_path / "s.md").read_text()
    lines = md.split("\n")
    inside = fenced_lines(md)
    # the output, 70 backticks and all, stays in its block
    assert lines.index("`" * 70) in inside, md
    assert lines.index("<b>after</b>") in inside, md
    # outside the code blocks: no HTML tag and no link the sandbox wrote
    outside = "\n".join(l for i, l in enumerate(lines) if i not in inside)
    assert not re.search(r"<[a-zA-Z/]", outside), outside
    assert "](javascript" not in outside
    links = [l for l in lines if l.startswith(("[", "!["))]
    assert len(links) == 1, md
    assert re.fullmatch(r"!?\[[^\n<>]*\]\(out/[A-Za-z0-9._%-]+\)", links[0]), links[0]
