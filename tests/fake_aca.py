#!/usr/bin/env python3
"""fake_aca: a fake Azure Container Apps session pool for terp's tests
(stdlib only), following shared/PROTOCOLS.md §7, on 127.0.0.1.

It runs the code for real: one Python child per identifier keeps a
persistent namespace (like the pool's Jupyter kernel), so analyses,
exceptions and charts are real. The code refers to /mnt/data; the fake
rewrites that path to the session's own temporary folder and back in
what it returns (no mount namespace, nothing on the host's /mnt).

Command line:
    fake_aca.py [--token T]... [--base PATH] [--limit-s S] [--upload-max N]
                [--max-sessions N]
prints {"port": N} on the first line of stdout, then one JSON line per
event ({"ev": "exec", "code": ...} when a code execution starts running,
{"ev": "exec_done"} when it ends) and serves until killed.

Pool routes, under BASE (default /subscriptions/sub/resourceGroups/rg/
sessionPools/pool), each with ?api-version=V&identifier=ID:
  2024-02-02-preview (the "properties" shape)
    POST code/execute   {"properties": {"codeInputType", "executionType", "code"}}
    POST files/upload   multipart "file"
    GET  files          {"value": [{"properties": {filename, size, lastModifiedTime}}]}
    GET  files/content/NAME
  2024-10-02-preview, 2025-02-02-preview, 2025-10-02-preview ("executions")
    POST executions     {"codeInputType", "executionType", "code", "timeoutInSeconds"}
    POST files?path=/mnt/data   multipart "file"
    GET  files?path=/mnt/data   {"value": [{name, type, contentType, sizeInBytes, lastModifiedAt}]}
    GET  files/NAME/content

Checks: Authorization must be "Bearer <one of the tokens>" (else 401);
the identifier 4-128 characters of the allowed set (else 400); an
unknown api-version is a 400; a new identifier past max-sessions is a 404
(pool full); a path outside BASE is a 404; an upload over upload-max is
a 413; an execution past the limit (or the request's timeoutInSeconds)
kills the session's child (its state is lost) and answers per
timeout_style: "http408" (408 with an error body) or "status" (200, a
failed status whose error code is ExecutionTimeout).

Control (no auth), for the tests:
  POST /_fake/config   JSON merged into the settings: tokens, limit_s,
                       upload_max, max_sessions, timeout_style, forbid
                       (403 for everything), throttle {count, retry_after}
                       (the next count pool requests get 429), fail
                       {status, count} (the next count pool requests get
                       that status), list_mode ("hostile")
  POST /_fake/recycle  every session is destroyed (the cooldown ended)
  GET  /_fake/log      the requests so far: [{method, path, query, auth, code}]

Hostile answers, chosen by a marker in the cell's code:
  "#hostile:big"      a 200 answer of big_bytes (default 2 MiB) of stdout
  "#hostile:badjson"  a 200 answer that is not JSON
  "#hostile:types"    fields of the wrong types
  "#hostile:image"    a result image that is not base64
  "#hang"             no answer until the fake is killed
list_mode "hostile": listings carry traversal and control-character
names, duplicates, bad sizes and 1500 junk entries, and the file
"liar.png" is listed at 10 bytes but sends 5000."""
import argparse
import base64
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

PROPS = {"2024-02-02-preview"}
EXECS = {"2024-10-02-preview", "2025-02-02-preview", "2025-10-02-preview"}
ID_RE = re.compile(r"^[A-Za-z0-9|\-&^%$#(){}\[\];<>]{4,128}$")
MNT = "/mnt/data"

# The child that runs one session's cells: requests and answers on two
# pipes of its own, named in argv (the cell's stdin/stdout stay out).
RUNNER = r'''
import ast, base64, contextlib, io, json, os, sys, traceback
os.environ["MPLBACKEND"] = "Agg"
rf = os.fdopen(int(sys.argv[1]), "r")
wf = os.fdopen(int(sys.argv[2]), "w")
ns = {"__name__": "__main__"}

def encode(v):
    if v is None:
        return ""
    if isinstance(v, bool) or isinstance(v, int):
        return v
    if isinstance(v, float) and v == v and abs(v) != float("inf"):
        return v
    if hasattr(v, "savefig"):
        b = io.BytesIO()
        v.savefig(b, format="png")
        return {"type": "image", "format": "png",
                "base64_data": base64.b64encode(b.getvalue()).decode()}
    return repr(v)

for line in rf:
    req = json.loads(line)
    out, err = io.StringIO(), io.StringIO()
    ok, value, ename, evalue = True, None, None, None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            tree = ast.parse(req["code"], "<cell>", "exec")
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            exec(compile(tree, "<cell>", "exec"), ns)
            if last is not None:
                value = eval(compile(last, "<cell>", "eval"), ns)
    except BaseException as e:
        ok, ename, evalue = False, type(e).__name__, str(e)
        err.write(traceback.format_exc())
    try:
        res = encode(value)
    except Exception as e:
        res = "<unprintable: %s>" % e
    wf.write(json.dumps({"ok": ok, "stdout": out.getvalue(), "stderr": err.getvalue(),
                         "result": res, "ename": ename, "evalue": evalue}) + "\n")
    wf.flush()
'''


def emit(o):
    sys.stdout.write(json.dumps(o) + "\n")
    sys.stdout.flush()


class Session:
    def __init__(self, pool, ident):
        self.ident = ident
        self.dir = tempfile.mkdtemp(prefix="sess-", dir=pool.root)
        self.lock = threading.Lock()
        self.proc = None
        self.rf = None
        self.wf = None

    def _spawn(self):
        r1, w1 = os.pipe()     # requests: parent writes w1, child reads r1
        r2, w2 = os.pipe()     # answers: child writes w2, parent reads r2
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.dir,
               "MPLBACKEND": "Agg", "MPLCONFIGDIR": os.path.join(self.dir, ".mpl")}
        self.proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(r1), str(w2)],
                                     cwd=self.dir, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     pass_fds=(r1, w2))
        os.close(r1)
        os.close(w2)
        self.wf = os.fdopen(w1, "w")
        self.rf = os.fdopen(r2, "r")

    def kill(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.wf.close()
            self.rf.close()
            self.proc = None

    def execute(self, code, limit):
        """(answer dict or None on timeout, elapsed ms). Holds the lock:
        executions in one session run one at a time."""
        with self.lock:
            if self.proc is None:
                self._spawn()
            emit({"ev": "exec", "code": code})
            t0 = time.monotonic()
            self.wf.write(json.dumps({"code": code.replace(MNT, self.dir)}) + "\n")
            self.wf.flush()
            r, _, _ = select.select([self.rf], [], [], limit)
            ms = int((time.monotonic() - t0) * 1000)
            if not r:
                self.kill()      # the pool stops it; its state is gone
                emit({"ev": "exec_done", "timeout": True})
                return None, ms
            line = self.rf.readline()
            emit({"ev": "exec_done"})
            if not line:
                self.kill()
                return {"ok": False, "stdout": "", "stderr": "the kernel died\n",
                        "result": "", "ename": "KernelDied", "evalue": ""}, ms
            ans = json.loads(line)
            for k in ("stdout", "stderr"):
                ans[k] = ans[k].replace(self.dir, MNT)
            if isinstance(ans["result"], str):
                ans["result"] = ans["result"].replace(self.dir, MNT)
            return ans, ms

    def destroy(self):
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class Pool:
    def __init__(self, args):
        self.root = tempfile.mkdtemp(prefix="fake-aca-")
        self.base = args.base.rstrip("/")
        self.cfg = {"tokens": list(args.token), "limit_s": args.limit_s,
                    "upload_max": args.upload_max, "max_sessions": args.max_sessions,
                    "timeout_style": "http408", "forbid": False, "throttle": None,
                    "fail": None, "list_mode": None, "big_bytes": 2 << 20}
        self.sessions = {}
        self.mu = threading.Lock()
        self.log = []
        self.hang = threading.Event()

    def session(self, ident):
        with self.mu:
            s = self.sessions.get(ident)
            if s is None:
                if len(self.sessions) >= self.cfg["max_sessions"]:
                    return None
                s = self.sessions[ident] = Session(self, ident)
            return s

    def recycle(self):
        with self.mu:
            old = list(self.sessions.values())
            self.sessions = {}
        for s in old:
            s.destroy()

    def cleanup(self):
        self.recycle()
        shutil.rmtree(self.root, ignore_errors=True)


def iso(ns):
    t = datetime.fromtimestamp(ns // 1_000_000_000, timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + ".%07dZ" % ((ns % 1_000_000_000) // 100)


def list_dir(d):
    out = []
    for name in sorted(os.listdir(d)):
        st = os.lstat(os.path.join(d, name))
        if name.startswith("."):
            continue
        out.append((name, st))
    return out


def parse_multipart(ctype, body):
    m = re.search(r'boundary="?([^";]+)"?', ctype or "")
    if not m:
        return None, None
    sep = b"--" + m.group(1).encode()
    for part in body.split(sep):
        head, _, data = part.partition(b"\r\n\r\n")
        if b'name="file"' not in head:
            continue
        fm = re.search(rb'filename="([^"]*)"', head)
        if data.endswith(b"\r\n"):
            data = data[:-2]
        return (fm.group(1).decode("utf-8", "replace") if fm else "upload"), data
    return None, None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    pool = None

    def log_message(self, *a):
        pass

    def send(self, status, obj=None, raw=None, headers=None, ctype="application/json"):
        body = raw if raw is not None else (b"" if obj is None else json.dumps(obj).encode())
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def error(self, status, code, message):
        self.send(status, {"error": {"code": code, "message": message}})

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_GET(self):
        self.route("GET")

    def do_POST(self):
        self.route("POST")

    def do_DELETE(self):
        self.route("DELETE")

    def route(self, method):
        p = self.pool
        u = urlsplit(self.path)
        q = parse_qs(u.query, keep_blank_values=True)
        if u.path.startswith("/_fake/"):
            return self.admin(method, u.path)
        body = self.read_body() if method == "POST" else b""
        code = None
        if method == "POST" and u.path.endswith(("/code/execute", "/executions")):
            try:
                j = json.loads(body)
                code = (j.get("properties") or j).get("code")
            except Exception:
                pass
        p.log.append({"method": method, "path": u.path, "query": u.query,
                      "auth": self.headers.get("Authorization"), "code": code})
        cfg = p.cfg
        if not (u.path + "/").startswith(p.base + "/"):
            return self.error(404, "NotFound", "no such resource")
        rest = u.path[len(p.base):].lstrip("/")
        th = cfg["throttle"]
        if th and th["count"] > 0:
            th["count"] -= 1
            return self.send(429, {"error": {"code": "TooManyRequests",
                                             "message": "slow down"}},
                             headers={"Retry-After": str(th.get("retry_after", "0"))})
        fl = cfg["fail"]
        if fl and fl["count"] > 0:
            fl["count"] -= 1
            return self.error(fl["status"], "Injected", "injected failure")
        auth = self.headers.get("Authorization") or ""
        if not auth.startswith("Bearer ") or auth[7:] not in cfg["tokens"]:
            return self.error(401, "Unauthorized", "the token is missing or invalid")
        if cfg["forbid"]:
            return self.error(403, "Forbidden", "the caller lacks the session executor role")
        ver = (q.get("api-version") or [""])[0]
        if ver in PROPS:
            shape = "props"
        elif ver in EXECS:
            shape = "execs"
        else:
            return self.error(400, "InvalidApiVersion", "unsupported api-version")
        ident = (q.get("identifier") or [""])[0]
        if not ID_RE.match(ident):
            return self.error(400, "InvalidIdentifier", "bad identifier")
        pathq = (q.get("path") or [None])[0]
        if pathq not in (None, "", MNT):
            return self.error(400, "InvalidPath", "only /mnt/data here")
        s = p.session(ident)
        if s is None:
            return self.error(404, "SessionPoolFull", "the pool has no free session")
        if method == "POST" and ((shape == "props" and rest == "code/execute") or
                                 (shape == "execs" and rest == "executions")):
            return self.execute(s, shape, body)
        if method == "POST" and ((shape == "props" and rest == "files/upload") or
                                 (shape == "execs" and rest == "files")):
            return self.upload(s, shape, body)
        if method == "GET" and rest == "files":
            return self.listing(s, shape)
        m = re.fullmatch(r"files/content/([^/]+)", rest) if shape == "props" else \
            re.fullmatch(r"files/([^/]+)/content", rest)
        if method == "GET" and m:
            return self.content(s, unquote(m.group(1)))
        return self.error(404, "NotFound", "no such route")

    def admin(self, method, path):
        p = self.pool
        if path == "/_fake/config" and method == "POST":
            p.cfg.update(json.loads(self.read_body() or b"{}"))
            return self.send(200, {"ok": True})
        if path == "/_fake/recycle" and method == "POST":
            self.read_body()
            p.recycle()
            return self.send(200, {"ok": True})
        if path == "/_fake/log" and method == "GET":
            return self.send(200, p.log)
        return self.send(404, {"error": "no such control"})

    def execute(self, s, shape, body):
        try:
            j = json.loads(body)
        except Exception:
            return self.error(400, "BadRequest", "not JSON")
        props = j.get("properties") if shape == "props" else j
        if not isinstance(props, dict) or not isinstance(props.get("code"), str):
            return self.error(400, "BadRequest", "no code")
        if shape == "props" and (props.get("codeInputType") != "inline" or
                                 props.get("executionType") != "synchronous"):
            return self.error(400, "BadRequest", "codeInputType/executionType")
        if shape == "execs":
            for k in ("codeInputType", "executionType", "code", "timeoutInSeconds"):
                if k not in props:
                    return self.error(400, "BadRequest", "missing " + k)
        code = props["code"]
        if "#hang" in code:
            emit({"ev": "exec", "code": code})
            self.pool.hang.wait()
            return
        m = re.search(r"#hostile:(\w+)", code)
        if m:
            return self.hostile(m.group(1), shape)
        limit = float(self.pool.cfg["limit_s"])
        if shape == "execs":
            limit = min(limit, float(props["timeoutInSeconds"]))
        ans, ms = s.execute(code, limit)
        if ans is None:
            msg = "The code execution exceeded the %g second limit." % limit
            if self.pool.cfg["timeout_style"] == "http408":
                return self.error(408, "ExecutionTimeout", msg)
            ans = {"ok": False, "stdout": "", "stderr": "", "result": "",
                   "ename": None, "evalue": None, "timeout": msg}
        return self.send(200, self.exec_answer(s, shape, ans, ms))

    def exec_answer(self, s, shape, ans, ms):
        err = None
        if ans.get("timeout"):
            err = {"code": "ExecutionTimeout", "message": ans["timeout"]}
        elif not ans["ok"]:
            err = {"code": "ExecutionError", "message": "%s: %s" % (ans["ename"], ans["evalue"])}
        if shape == "props":
            props = {"$id": "2", "status": "Success" if ans["ok"] else "Failure",
                     "stdout": ans["stdout"], "stderr": ans["stderr"],
                     "result": ans["result"], "executionTimeInMilliseconds": ms}
            if err:
                props["error"] = err
            return {"$id": "1", "properties": props}
        out = {"id": str(uuid.uuid4()), "identifier": s.ident,
               "executionType": "Synchronous",
               "status": "Succeeded" if ans["ok"] else "Failed",
               "result": {"stdout": ans["stdout"], "stderr": ans["stderr"],
                          "executionResult": ans["result"],
                          "executionTimeInMilliseconds": ms}}
        if err:
            out["error"] = {"error": err}
        return out

    def hostile(self, mode, shape):
        if mode == "big":
            n = int(self.pool.cfg["big_bytes"])
            ans = {"ok": True, "stdout": "x" * n, "stderr": "", "result": ""}
            return self.send(200, self.exec_answer(None, shape, ans, 1) if shape == "props"
                             else {"status": "Succeeded", "result": {"stdout": "x" * n}})
        if mode == "badjson":
            return self.send(200, raw=b'{"properties": {"status": "Success", "stdout": "')
        if mode == "types":
            return self.send(200, {"properties": {"status": "Success", "stdout": 5,
                                                  "stderr": ["a"], "result": {"a": [1, 2]},
                                                  "executionTimeInMilliseconds": "x"}})
        if mode == "image":
            return self.send(200, {"properties": {"status": "Success", "stdout": "",
                                                  "stderr": "", "result": {
                                                      "type": "image", "format": "../x",
                                                      "base64_data": "!!not base64!!"}}})
        return self.error(400, "BadMode", mode)

    def upload(self, s, shape, body):
        if len(body) > int(self.pool.cfg["upload_max"]):
            return self.error(413, "PayloadTooLarge", "the file is over the upload limit")
        name, data = parse_multipart(self.headers.get("Content-Type"), body)
        if name is None:
            return self.error(400, "BadRequest", "no file part")
        if "/" in name or name in (".", "..") or not name:
            return self.error(400, "InvalidFileName", "bad file name")
        with open(os.path.join(s.dir, name), "wb") as f:
            f.write(data)
        st = os.stat(os.path.join(s.dir, name))
        if shape == "props":
            return self.send(200, {"$id": "1", "value": [{"$id": "2", "properties": {
                "$id": "3", "filename": name, "size": st.st_size,
                "lastModifiedTime": iso(st.st_mtime_ns)}}]})
        return self.send(201, {"name": name, "type": "file", "sizeInBytes": st.st_size,
                               "lastModifiedAt": iso(st.st_mtime_ns)})

    def listing(self, s, shape):
        files = []
        for name, st in list_dir(s.dir):
            isdir = os.path.isdir(os.path.join(s.dir, name))
            if shape == "props":
                if isdir:
                    continue
                files.append({"$id": "x", "properties": {
                    "$id": "y", "filename": name, "size": st.st_size,
                    "lastModifiedTime": iso(st.st_mtime_ns)}})
            else:
                files.append({"name": name, "type": "directory" if isdir else "file",
                              "contentType": "application/octet-stream",
                              "sizeInBytes": 0 if isdir else st.st_size,
                              "lastModifiedAt": iso(st.st_mtime_ns)})
        if self.pool.cfg["list_mode"] == "hostile":
            junk = [("../../etc/passwd", 10), ("..", 1), (".", 1), ("a/b.png", 3),
                    ("evil\x1b]0;title\x07.png", 4), ("", 1), ("x" * 5000, 1),
                    ("neg.png", -1), ("huge.png", 1e300), ("frac.png", 1.5),
                    ("liar.png", 10), ("liar.png", 10)]
            junk += [("junk%d.txt" % i, "nan") for i in range(1500)]
            for name, size in junk:
                if shape == "props":
                    files.append({"properties": {"filename": name, "size": size,
                                                 "lastModifiedTime": "t"}})
                else:
                    files.append({"name": name, "type": "file", "sizeInBytes": size})
            files.append(5)
            files.append({"properties": "nope"})
        if shape == "props":
            return self.send(200, {"$id": "1", "value": files})
        return self.send(200, {"value": files, "nextLink": None})

    def content(self, s, name):
        if self.pool.cfg.get("hang_content"):
            emit({"ev": "content", "name": name})
            self.pool.hang.wait()
            return
        if self.pool.cfg["list_mode"] == "hostile" and name == "liar.png":
            return self.send(200, raw=b"L" * 5000, ctype="application/octet-stream")
        path = os.path.join(s.dir, name)
        if "/" in name or name.startswith(".") or not os.path.isfile(path):
            return self.error(404, "FileNotFound", "no such file")
        with open(path, "rb") as f:
            data = f.read()
        return self.send(200, raw=data, ctype="application/octet-stream")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--token", action="append", default=[])
    ap.add_argument("--base", default="/subscriptions/sub/resourceGroups/rg/sessionPools/pool")
    ap.add_argument("--limit-s", type=float, default=220.0)
    ap.add_argument("--upload-max", type=int, default=128 << 20)
    ap.add_argument("--max-sessions", type=int, default=100)
    args = ap.parse_args()
    pool = Pool(args)
    Handler.pool = pool
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True

    def bye(*_):
        pool.cleanup()
        os._exit(0)
    signal.signal(signal.SIGTERM, bye)
    signal.signal(signal.SIGINT, bye)
    emit({"port": srv.server_address[1]})
    try:
        srv.serve_forever()
    finally:
        pool.cleanup()


if __name__ == "__main__":
    main()
