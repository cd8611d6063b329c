"""The TUI's shape (issue 20): no file of src/tui above 1,200 lines (the
status bar left tui_draw.c, 1,417 lines, for tui_status.c), and one door
to the core: what the UI changes goes through the session, never through
a `t->o.session ? session_x() : agent_x()` choice between it and the
agent (the harness, tests/tui/fake_agent.c, brings a session of its own)."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
TUI = ROOT / "src" / "tui"


def test_tui_files_at_most_1200_lines():
    big = ["%s: %d lines" % (f.name, n)
           for f in sorted(TUI.glob("*.[ch]"))
           for n in [len(f.read_text(errors="replace").splitlines())]
           if n > 1200]
    assert not big, "src/tui files above 1,200 lines: %s" % big


def test_tui_reaches_the_core_through_the_session_only():
    two = ["%s:%d: %s" % (f.name, i + 1, line.strip())
           for f in sorted(TUI.glob("*.c"))
           for i, line in enumerate(f.read_text(errors="replace").splitlines())
           if re.search(r"o\.session\s*\?", line)]
    assert not two, "a second door beside the session: %s" % two


def _code(path):
    """The file's text without its comments (a comment may name the
    agent's call a session call stands for)."""
    text = path.read_text(errors="replace")
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"),
                  text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def test_tui_never_sees_the_agent():
    """The session is the TUI's only door (issue 20): no file of src/tui
    includes agent.h, names struct agent or calls an agent_* function;
    questions, cells, Ctrl-C, /model, /ask... are session calls."""
    found = []
    for f in sorted(TUI.glob("*.[ch]")):
        for i, line in enumerate(_code(f).splitlines()):
            if (re.search(r'#\s*include\s*[<"](terp/)?agent\.h[>"]', line)
                    or re.search(r"\bstruct\s+agent\b(?!_)", line)
                    or re.search(r"\bagent_\w+\s*\(", line)):
                found.append("%s:%d: %s" % (f.name, i + 1, line.strip()))
    assert not found, "src/tui reaches the agent past the session: %s" % found
