"""Notebook parity (issue 19): the cells of tests/fixtures/notebooks/*.ipynb
run in order through `terp exec` and through a real Jupyter kernel
(jupyter_client + ipykernel) on the same Python, compared cell by cell.

A cell behaves the same when, after normalising addresses (0x...),
timings (%time, %timeit), the working directory and whitespace, both
agree on: ok or error (and the exception's name), the text the cell
showed (stdout, with display()'s text forms in order), the text of its
last value, and how many images it showed. stderr (warnings, shell
noise) is not compared. Run standalone it prints the figure and every
difference:  /usr/bin/python3 tests/integration/parity.py
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "tests" / "fixtures" / "notebooks"
PY = "/usr/bin/python3"


def notebooks():
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def cells_of(path):
    nb = json.loads(path.read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def workdir(base, name):
    d = Path(base) / name
    d.mkdir(parents=True)
    shutil.copytree(NOTEBOOKS / "data", d / "data")
    return d


# ---------------------------------------------------------------- normalising

_TIMING = [
    (re.compile(r"The slowest run took \S+ times longer than the fastest\. This could mean "
                r"that an intermediate result is being cached\.\n"), ""),
    (re.compile(r"CPU times: .*"), "CPU times: T"),
    (re.compile(r"Wall time: .*"), "Wall time: T"),
    (re.compile(r"\S+ \S+ \u00b1 \S+ \S+ per loop"), "T \u00b1 T per loop"),
    (re.compile(r"0x[0-9a-fA-F]+"), "0xADDR"),
    (re.compile(r"display_id=[0-9a-f]+"), "display_id=ID"),
]


def norm(text, cwd=None):
    if text is None:
        return None
    text = text.replace("\r\n", "\n")
    if cwd:
        text = text.replace(str(cwd), "/workspace")
    for rx, sub in _TIMING:
        text = rx.sub(sub, text)
    return " ".join(text.split())


def _is_default(plain):
    return plain.startswith("<") and plain.endswith(">") and " object" in plain


def _strip_html(html):
    html = re.sub(r"(?is)<(style|script)\b.*?</\1>", " ", html)
    html = re.sub(r"<[^>]+>", " ", html)
    import html as h
    return h.unescape(html)


def bundle_text(data):
    """(text, images) of a Jupyter output bundle as a reader sees it."""
    if "image/png" in data or "image/jpeg" in data:
        return "", 1
    plain = data.get("text/plain", "")
    if plain and not _is_default(plain):
        return plain, 0
    for mime in ("text/markdown", "text/latex"):
        if mime in data:
            return data[mime], 0
    if "text/html" in data:
        return _strip_html(data["text/html"]), 0
    return plain, 0


class Outcome:
    def __init__(self):
        self.status, self.ename, self.text, self.value, self.images = "ok", None, "", None, 0

    def key(self, cwd):
        return (self.status, self.ename, norm(self.text, cwd), norm(self.value, cwd), self.images)


# ---------------------------------------------------------------- Jupyter

def run_jupyter(cells, cwd):
    from jupyter_client.manager import start_new_kernel
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(cwd),
                              env=dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1"))
    outs = []
    try:
        for code in cells:
            o = Outcome()
            msg_id = kc.execute(code)
            while True:
                m = kc.get_iopub_msg(timeout=120)
                if m["parent_header"].get("msg_id") != msg_id:
                    continue
                t, c = m["msg_type"], m["content"]
                if t == "stream" and c["name"] == "stdout":
                    o.text += c["text"]
                elif t == "display_data" or t == "update_display_data":
                    text, img = bundle_text(c["data"])
                    o.text += text + ("\n" if text else "")
                    o.images += img
                elif t == "execute_result":
                    text, img = bundle_text(c["data"])
                    o.value = text if not img else None
                    o.images += img
                elif t == "error":
                    o.status, o.ename = "error", c["ename"]
                elif t == "status" and c["execution_state"] == "idle":
                    break
            reply = kc.get_shell_msg(timeout=120)
            while reply["parent_header"].get("msg_id") != msg_id:
                reply = kc.get_shell_msg(timeout=120)
            if reply["content"].get("status") == "error":
                o.status = "error"
                o.ename = o.ename or reply["content"].get("ename")
            outs.append(o)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return outs


# ---------------------------------------------------------------- terp

def run_terp(terp_bin, cells, cwd, env=None):
    args = [str(terp_bin), "exec", "--json", "--python", PY, "--out", str(cwd / "out")]
    for c in cells:
        args += ["-c", c]
    args += ["data/" + p.name for p in sorted((cwd / "data").iterdir())]
    p = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env, timeout=600,
                       errors="replace")
    outs = [Outcome() for _ in cells]
    for line in p.stdout.splitlines():
        if not line.startswith("{"):
            continue
        e = json.loads(line)
        n = e.get("cell")
        if not isinstance(n, int) or not 1 <= n <= len(cells):
            continue
        o = outs[n - 1]
        if e["type"] == "stdout":
            o.text += e["text"]
        elif e["type"] == "artifact":
            o.images += 1
        elif e["type"] == "result":
            o.status = e["status"]
            o.value = e.get("value")
            if e.get("error"):
                o.ename = e["error"].get("ename")
    return outs, p


# ---------------------------------------------------------------- comparing

def compare(terp_bin, base, env=None):
    """[(notebook, cell index, code, jupyter key, terp key)] for every cell."""
    rows = []
    for nbp in notebooks():
        cells = cells_of(nbp)
        jd = workdir(base, "j-" + nbp.stem)
        td = workdir(base, "t-" + nbp.stem)
        jo = run_jupyter(cells, jd)
        to, _ = run_terp(terp_bin, cells, td, env)
        for i, code in enumerate(cells):
            rows.append((nbp.name, i + 1, code, jo[i].key(jd), to[i].key(td)))
    return rows


def report(rows):
    same = sum(1 for r in rows if r[3] == r[4])
    lines = ["notebook parity: %d of %d cells behave the same (%.1f %%)"
             % (same, len(rows), 100.0 * same / max(1, len(rows)))]
    for nb, i, code, j, t in rows:
        if j != t:
            lines.append("- %s cell %d: %r" % (nb, i, code[:80]))
            lines.append("    jupyter: %r" % (j,))
            lines.append("    terp:    %r" % (t,))
    return same / max(1, len(rows)), "\n".join(lines)


if __name__ == "__main__":
    terp_bin = os.environ.get("TERP_BIN", str(ROOT / "terp"))
    with tempfile.TemporaryDirectory() as base:
        frac, text = report(compare(terp_bin, base))
    print(text)
