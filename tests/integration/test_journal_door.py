"""The journal's writers have one caller (issue 20): the session runner
(src/core/session.c) hands it the notebook's changes (as the notebook's
observer) and the events that are no change; the agent, the notebook,
the kernels and the frontends never write to it, so no fact reaches the
file by a second road. (That each fact is one record is checked on a real
run by test_resume.py's test_the_journal_records_each_fact_once...)."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
WRITERS = r"\bjournal_(change|event|note|remote)\s*\("


def test_only_the_session_writes_to_the_journal():
    found = []
    for f in sorted((ROOT / "src").rglob("*.c")):
        rel = f.relative_to(ROOT / "src").as_posix()
        if rel in ("core/session.c", "core/journal.c"):
            continue
        text = re.sub(r"/\*.*?\*/", "", f.read_text(errors="replace"), flags=re.S)
        for i, line in enumerate(text.splitlines()):
            if re.search(WRITERS, line):
                found.append("%s: %s" % (rel, line.strip()))
    assert not found, "the journal written past the session: %s" % found
    session = (ROOT / "src" / "core" / "session.c").read_text()
    assert re.search(r"notebook_observe\(s->nb, on_change, s\)", session)
