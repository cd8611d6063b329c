"""A hostile Jupyter server for tests/integration/test_jupyter.py: just
enough of the REST API and the kernel channels for terp's Jupyter backend
to connect, then, chosen by the code of each cell, messages that are
oversized, malformed or mistyped, listings of out/ with hostile names, and
files bigger than they claim. Loopback only.

usage: python3 fake_jupyter.py PORT TOKEN   (prints "listening" when ready)
"""
import base64
import json
import os
import sys
import uuid

from tornado import ioloop, web, websocket

PORT, TOKEN = int(sys.argv[1]), sys.argv[2]
KID = "00000000-0000-4000-8000-000000000001"
STATE = {"scenario": ""}
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


def listing():
    s = STATE["scenario"]
    files = []
    if s == "names":
        for name in ["../../escape.txt", "a/b.txt", "..", ".", "evil\u001b]0;title\u0007.txt",
                     "ok.txt", "x" * 5000 + ".txt", ".bashrc", "line\nbreak.txt",
                     "\u202eevil.txt"]:
            files.append({"name": name, "path": "whatever/" + name, "type": "file",
                          "size": 2, "last_modified": "2024-01-01T00:00:00Z"})
        files.append({"name": "sub", "type": "directory"})
        files += [5, "nope", None, {"name": 7, "type": "file"}, {"name": "t.txt", "type": 3}]
    elif s == "bigfile":
        files.append({"name": "big.bin", "type": "file", "size": 10, "last_modified": "1"})
        files.append({"name": "huge.bin", "type": "file", "size": 10 ** 12, "last_modified": "1"})
        files.append({"name": "badb64.bin", "type": "file", "size": 4, "last_modified": "1"})
    elif s == "flood":
        files = [{"name": "d%d" % i, "type": "directory"} for i in range(3000)]
    return files


class Base(web.RequestHandler):
    def prepare(self):
        if self.request.headers.get("Authorization") == "token to-login":
            # as servers behind a login page answer a bad token
            self.redirect("/login?next=" + self.request.path)
            return
        if self.request.headers.get("Authorization") != "token " + TOKEN:
            self.set_status(403)
            self.finish(json.dumps({"message": "Forbidden"}))

    def check_xsrf_cookie(self):
        pass

    def reply(self, obj, status=200):
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(obj))


class Specs(Base):
    def get(self):
        self.reply({"default": "python3", "kernelspecs": {"python3": {"name": "python3"}}})


class Kernels(Base):
    def post(self):
        self.reply({"id": KID, "name": "python3", "execution_state": "idle"}, 201)


class Kernel(Base):
    def get(self, kid):
        self.reply({"id": KID, "name": "python3"})

    def delete(self, kid):
        self.set_status(204)
        self.finish()


class KernelAction(Base):
    def post(self, kid, action):
        if action == "restart":
            # FAKE_JUPYTER_SLOW_JOINER=N: the iopub of the next N requests
            # is lost, as when the server's subscription to a restarted
            # kernel is not connected yet (zmq's slow joiner)
            STATE["drop_iopub"] = int(os.environ.get("FAKE_JUPYTER_SLOW_JOINER", "0"))
        self.reply({"id": KID}, 200 if action == "restart" else 204)


class Contents(Base):
    def put(self, path):
        self.reply({"name": path.rsplit("/", 1)[-1], "path": path, "type": "file"}, 201)

    def get(self, path):
        if path.endswith("/out"):
            self.reply({"name": "out", "type": "directory", "content": listing()})
            return
        name = path.rsplit("/", 1)[-1]
        if name == "big.bin":
            blob = base64.encodebytes(b"B" * (3 << 20)).decode()
            self.reply({"name": name, "type": "file", "format": "base64", "content": blob})
        elif name == "badb64.bin":
            self.reply({"name": name, "type": "file", "format": "base64", "content": "!!!not base64"})
        else:
            self.reply({"name": name, "type": "file", "format": "base64",
                        "content": base64.encodebytes(b"ok").decode()})


class Channels(websocket.WebSocketHandler):
    def prepare(self):
        if self.request.headers.get("Authorization") != "token " + TOKEN:
            raise web.HTTPError(403)

    def check_origin(self, origin):
        return True

    def msg(self, parent, channel, mtype, content):
        return json.dumps({"header": {"msg_id": uuid.uuid4().hex, "msg_type": mtype},
                           "parent_header": parent, "metadata": {}, "channel": channel,
                           "content": content})

    def send(self, parent, channel, mtype, content):
        if channel == "iopub" and getattr(self, "dropping", False):
            return
        self.write_message(self.msg(parent, channel, mtype, content))

    def on_message(self, text):
        m = json.loads(text)
        h = m["header"]
        self.dropping = STATE.get("drop_iopub", 0) > 0
        if self.dropping:
            STATE["drop_iopub"] -= 1
        if h["msg_type"] == "kernel_info_request":
            self.send(h, "shell", "kernel_info_reply", {"status": "ok"})
            return
        if h["msg_type"] != "execute_request":
            return
        code = m["content"]["code"]
        if m["content"].get("silent"):
            # a kernel publishes busy and idle around every request
            self.send(h, "iopub", "status", {"execution_state": "busy"})
            self.send(h, "shell", "execute_reply", {"status": "ok", "user_expressions": {}})
            self.send(h, "iopub", "status", {"execution_state": "idle"})
            return
        STATE["scenario"] = code
        self.send(h, "iopub", "status", {"execution_state": "busy"})
        if code == "oversized":
            self.send(h, "iopub", "stream", {"name": "stdout", "text": "A" * (3 << 20)})
            self.send(h, "iopub", "stream", {"name": "stdout", "text": "after\n"})
        elif code == "malformed":
            for raw in ["not json", "[1,2]", '{"header":"x"}', "null", '"str"',
                        '{"header":{"msg_type":"stream"},"content":"str"}']:
                self.write_message(raw)
            self.write_message(b"\x00\x01binary", binary=True)
            self.send(h, "iopub", "stream", {"name": "stdout", "text": 5})
            self.send(h, "iopub", "stream", {"name": None, "text": "nameless\n"})
            self.send({"msg_id": "someone-else"}, "iopub", "stream",
                      {"name": "stdout", "text": "ghost\n"})
            self.send(h, "iopub", "execute_result", {"data": []})
            self.send(h, "iopub", "display_data", {"data": {"image/png": 123}})
            self.send(h, "iopub", "status", {"execution_state": 5})
            self.send(h, "iopub", "error", {"ename": 7, "evalue": None, "traceback": "notalist"})
            self.send(h, "iopub", "stream", {"name": "stdout", "text": "survived\n"})
        elif code == "tiny":
            # a stream message per byte (what a flush per character makes)
            for i in range(20000):
                self.send(h, "iopub", "stream", {"name": "stdout", "text": "ab"[i % 2]})
        elif code == "huge":
            # a result and an error of MiBs each (within the message limit;
            # json escapes the two-byte character to six)
            self.send(h, "iopub", "execute_result",
                      {"data": {"text/plain": "\u00e9" * (3 << 19)}})
            big = "x" * (3 << 20)
            self.send(h, "iopub", "error", {"ename": big, "evalue": big,
                                            "traceback": [big, big]})
        elif code == "notpng":
            self.send(h, "iopub", "display_data", {"data": {"image/png": "aGVsbG8="}})
            self.send(h, "iopub", "display_data",
                      {"data": {"image/png": base64.b64encode(PNG).decode()},
                       "metadata": {"filename": "../../../etc/evil.png"}})
        ue = {}
        if code == "x += 1":
            # as a kernel answers the out/ fingerprint (bench/jupyter_backend.py)
            ue = {k: {"status": "ok", "data": {"text/plain": "0"}}
                  for k in m["content"].get("user_expressions", {})}
        self.send(h, "shell", "execute_reply", {"status": "ok", "execution_count": 1,
                                                "user_expressions": ue})
        self.send(h, "iopub", "status", {"execution_state": "idle"})


def main():
    app = web.Application([
        (r"/api/kernelspecs", Specs),
        (r"/api/kernels", Kernels),
        (r"/api/kernels/([^/]+)", Kernel),
        (r"/api/kernels/([^/]+)/(interrupt|restart)", KernelAction),
        (r"/api/kernels/[^/]+/channels", Channels),
        (r"/api/contents/(.*)", Contents),
    ], websocket_max_message_size=64 << 20)
    app.listen(PORT, address="127.0.0.1", max_body_size=64 << 20)
    print("listening", flush=True)
    ioloop.IOLoop.current().start()


if __name__ == "__main__":
    main()
