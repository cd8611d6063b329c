"""`terp -p` and `terp exec` output details (issue 25, item 11): terp's
own lines never glued onto a cell's unfinished line in a combined log;
with 2>&1 the model's words appear once; on a terminal the answer is
light Markdown wrapped at words."""
import fcntl
import re
import struct
import subprocess
import termios

from conftest import TERP
from test_headless_tty import KEY, Pty, cell_turn, flags

ANSWER = ("## Revenue by channel\n\n"
          "**Search** brings the most revenue overall, well ahead of "
          "the others, and `email` is the most efficient channel per dollar.\n\n"
          "- search leads every quarter\n"
          "- email peaks in December\n")

LONG_LINE = "print('x' * 5000, end='')\n"
CHART = ("import matplotlib\nmatplotlib.use('Agg')\n"
         "import matplotlib.pyplot as plt\n"
         "plt.plot([1, 2]); plt.savefig('/workspace/out/a.png')\n")


def run(args, env, cwd, combined=False):
    return subprocess.run("%s %s" % (TERP, " ".join(map(str, args))) +
                          (" 2>&1" if combined else ""), shell=True, env=env,
                          cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)


def test_with_2_and_1_the_answer_appears_once(env, fake, tmp_path):
    srv = fake([cell_turn("print(6 * 7)"), {"openai": {"text": "The answer is 42."}}])
    env = dict(env, OPENAI_API_KEY=KEY)
    r = run(["-p", "q", *flags(srv)], env, tmp_path, combined=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("The answer is 42.") == 1, r.stdout
    assert "model: The answer is 42." not in r.stdout, r.stdout
    # apart, stderr still shows the words as they come, stdout the answer
    srv = fake([cell_turn("print(6 * 7)"), {"openai": {"text": "The answer is 42."}}])
    r = run(["-p", "q", *flags(srv)], env, tmp_path)
    assert "model: The answer is 42." in r.stderr, r.stderr
    assert r.stdout == "The answer is 42.\n", r.stdout


def test_an_artifact_line_is_not_glued_onto_an_unfinished_output_line(env, tmp_path):
    # a line longer than the printer holds goes out unfinished; the
    # artifact's line must start a line of its own in a combined log
    r = run(["exec", "-c", '"$CODE"'], dict(env, CODE=LONG_LINE + CHART), tmp_path,
            combined=True)
    assert r.returncode == 0, r.stdout
    lines = r.stdout.splitlines()
    art = [l for l in lines if "artifact" in l]
    assert art and all(l.startswith("terp: [1] artifact out/a.png") for l in art), lines
    assert sum(l.count("x") for l in lines if set(l) == {"x"}) == 5000, lines
    # with stdout apart, its bytes are the cell's own: no newline added
    r = run(["exec", "-c", '"$CODE"'], dict(env, CODE=LONG_LINE + CHART), tmp_path)
    assert r.stdout == "x" * 5000 + "\n", r.stdout[-40:]


def test_on_a_terminal_the_answer_is_markdown_wrapped_at_words(env, fake, tmp_path):
    srv = fake([{"openai": {"text": ANSWER, "text_split": 7}}])
    env = dict(env, OPENAI_API_KEY=KEY, TERM="xterm")
    t = Pty(["-p", "q", *flags(srv)], env, tmp_path)
    fcntl.ioctl(t.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 40, 0, 0))
    assert t.finish() == 0, t.out.decode(errors="replace")
    text = t.out.decode(errors="replace").replace("\r\n", "\n")
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
    # the heading bold, without its '##'; bold without '**'; code cyan
    assert "\x1b[1mRevenue by channel\x1b[0m" in text, text
    assert "##" not in plain and "**" not in plain and "`" not in plain, plain
    assert "\x1b[1mSearch\x1b[0m" in text, text
    assert "\x1b[36memail\x1b[0m" in text, text
    # wrapped at words within 40 columns: every word of the paragraph
    # is whole on some line
    lines = [l for l in plain.splitlines() if not l.startswith(("terp:", "session "))]
    assert all(len(l) <= 40 for l in lines), [l for l in lines if len(l) > 40]
    para = [l for l in lines if l and not l.startswith(("Revenue", "•", "-", "terp:"))]
    words = "Search brings the most revenue overall, well ahead of the others, and email " \
            "is the most efficient channel per dollar.".split()
    got = " ".join(para).split()
    assert all(w in got for w in words), para
    assert len(para) >= 3, para
    # the list items are lines of their own
    assert any(re.match(r"^\W*\s*search leads every quarter$", l) for l in lines), lines
