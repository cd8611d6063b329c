"""What the model is told about data files (issue 23 item 8, issue 25
item 13): each file as a data person would describe it, in the system
prompt: the columns (count, names, types guessed from a sample) and rows
of a CSV or TSV (tabs as tabs, not the text \\u0009), a header wider than
what is read cut visibly, a gzip's inner format, the sheets of an .xlsx
workbook, a Parquet file's schema and row count from its footer; where
each file came from (two sales.csv from two folders); and that the user
can /load a file the model needs.
"""
import gzip
import struct
import zipfile

from test_headless import flags, reply


def varint(n):
    out = b""
    while True:
        b, n = n & 0x7f, n >> 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def zz(n):
    return varint((n << 1) ^ (n >> 63))


def fld(delta, typ):
    return bytes([(delta << 4) | typ])


def tstr(s):
    s = s.encode()
    return varint(len(s)) + s


def element(name, typ=None, children=None, conv=None):
    """A Parquet SchemaElement in Thrift's compact protocol."""
    out, last = b"", 0
    if typ is not None:
        out, last = out + fld(1, 5) + zz(typ), 1
    out, last = out + fld(4 - last, 8) + tstr(name), 4
    if children is not None:
        out, last = out + fld(5 - last, 5) + zz(children), 5
    if conv is not None:
        out += fld(6 - last, 5) + zz(conv)
    return out + b"\0"


def write_parquet(path, rows):
    schema = [element("schema", children=3), element("id", 2),
              element("city", 6, conv=0), element("amount", 5)]
    meta = (fld(1, 5) + zz(1) + fld(1, 9) + bytes([(len(schema) << 4) | 12]) +
            b"".join(schema) + fld(1, 6) + zz(rows) + fld(1, 9) + bytes([12]) + b"\0")
    path.write_bytes(b"PAR1" + b"\0" * 64 + meta + struct.pack("<I", len(meta)) + b"PAR1")


def write_xlsx(path):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("xl/workbook.xml", '<?xml version="1.0"?><workbook><sheets>'
                   '<sheet name="Q1 sales" sheetId="1" r:id="rId1"/>'
                   '<sheet name="Regions" sheetId="2" r:id="rId2"/></sheets></workbook>')
        z.writestr("xl/worksheets/sheet1.xml",
                   '<worksheet><dimension ref="A1:F120"/><sheetData/></worksheet>')
        z.writestr("xl/worksheets/sheet2.xml",
                   '<worksheet><dimension ref="A1:B5"/><sheetData/></worksheet>')


def system_of(terp, fake, tmp_path, *files):
    srv = fake([reply("openai", "Done.")])
    f, e = flags("openai", srv)
    r = terp("-p", "Describe the data.", "--json", *f, *map(str, files), extra_env=e)
    assert r.rc == 0, r
    return srv.requests()[0]["body"]["messages"][0]["content"]


def test_files_described_as_a_data_person_would(terp, fake, tmp_path):
    tsv = tmp_path / "m.tsv"
    tsv.write_text("region\tprice\tqty\tday\nnorth\t1.5\t3\t2024-01-02\n"
                   "south\t2\t4\t2024-01-03\n")
    wide = tmp_path / "wide.csv"
    wide.write_text(",".join("c%d" % i for i in range(20000)) + "\n" +
                    ",".join("1" for _ in range(20000)) + "\n")
    gz = tmp_path / "big.csv.gz"
    with gzip.open(gz, "wt") as g:
        g.write("a,b,c\n")
        for i in range(50000):
            g.write("%d,%f,x%d\n" % (i, i / 3, i))
    pq = tmp_path / "t.parquet"
    write_parquet(pq, 12345)
    xl = tmp_path / "book.xlsx"
    write_xlsx(xl)
    system = system_of(terp, fake, tmp_path, tsv, wide, gz, pq, xl)
    # TSV: columns, types, rows; its tabs are tabs
    assert "columns: 4, separated by tabs" in system, system
    assert "region (text), price (float), qty (int), day (date)" in system, system
    assert "rows: 2 (after the header)" in system, system
    assert "north\t1.5\t3\t2024-01-02" in system and "\\u0009" not in system, system
    # a 20,000-column header: cut visibly, the columns not all listed
    assert "header: longer than the 64 KiB read" in system, system
    assert "more columns]" in system, system
    # gzip: its inner format described, rows estimated
    assert "gzip-compressed text" in system, system
    assert "a (int), b (float), c (text)" in system, system
    assert "rows: about" in system, system
    # Parquet: schema and row count from the footer
    assert "Parquet: 12,345 rows (from its footer), 3 columns" in system, system
    assert "id (int64), city (string), amount (double)" in system, system
    # a workbook's sheets
    assert "Q1 sales (cells A1:F120)" in system and "Regions (cells A1:B5)" in system, system
    # bounded
    assert len(system) < 40000, len(system)


def test_each_files_origin_and_load_told(terp, fake, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "sales.csv").write_text("x\n1\n")
    (tmp_path / "b" / "sales.csv").write_text("y\n2\n")
    system = system_of(terp, fake, tmp_path, tmp_path / "a" / "sales.csv",
                       tmp_path / "b" / "sales.csv")
    a = str((tmp_path / "a" / "sales.csv").resolve())
    b = str((tmp_path / "b" / "sales.csv").resolve())
    assert "/workspace/data/sales.csv (4 B), the user's %s" % a in system, system
    assert "/workspace/data/sales-2.csv (4 B), the user's %s" % b in system, system
    assert "/load PATH" in system, system


def test_a_huge_outputs_cut_line_says_its_real_size(terp, fake, tmp_path):
    """A cell that printed 8 MiB: the notebook keeps 320 KiB of it, the
    model 4 KiB. Its cut line counts every byte not sent (not only
    those of the 320 KiB kept), and does not say the rest is in the
    notebook; a 20 KiB output's line still does."""
    srv = fake([reply("openai", "", [("c1", "import sys\nfor i in range(8 * 1024):\n"
                                             "    sys.stdout.write('x' * 1023 + '\\n')")]),
                reply("openai", "", [("c2", "print('y' * 20000)")]),
                reply("openai", "Done.")])
    f, e = flags("openai", srv)
    r = terp("-p", "Print a lot.", "--json", *f, extra_env=e)
    assert r.rc == 0, r
    reqs = srv.requests()
    tools = [m["content"] for m in reqs[2]["body"]["messages"] if m["role"] == "tool"]
    big, small = tools
    mark = big[big.index("[... "):][:300] if "[... " in big else big[:300]
    assert "the cell printed 8 MiB in all" in big, mark
    assert "full output is in the notebook" not in big, big[-600:]
    cut = int(big.split("[... ")[-1].split(" bytes cut")[0])
    assert cut > 8 * 1024 * 1024 - 8192, cut
    assert len(big) <= 4096, len(big)
    assert "bytes cut; the full output is in the notebook" in small, small


def test_welcome_screen_names_each_file_as_the_code_sees_it_and_its_origin(
        fake_model, tmux, tmp_path):
    """Two sales.csv from two folders: the welcome screen shows
    sales.csv and sales-2.csv (the names the code uses), each with the
    path it came from (it showed sales.csv twice)."""
    from tui_tmux import TERP, model_args, model_env
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "sales.csv").write_text("x,y\n1,2\n")
    port = fake_model(NOTED)
    cmd = " ".join([TERP, *model_args(port, tmp_path / "out"),
                    str(tmp_path / "a" / "sales.csv"), str(tmp_path / "b" / "sales.csv")])
    t = tmux(cmd, model_env(tmp_path), tmp_path, 160, 40, ready=r"│ ready", timeout=30)
    s = t.wait(r"sales-2\.csv")
    lines = [l for l in s.splitlines() if "sales" in l and "from" in l]
    # relative to the folder terp runs in (tmp_path)
    assert any(" sales.csv  " in l and "· from a/sales.csv" in l for l in lines), s
    assert any(" sales-2.csv  " in l and "· from b/sales.csv" in l for l in lines), s


NOTED = {"turns": [{"openai": {"text": "Noted."}, "repeat": True}]}
