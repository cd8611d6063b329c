#!/usr/bin/env python3
"""egress_fwd: terp's in-sandbox egress forwarder (stdlib only).

The sandbox has its own network namespace with only `lo`. This listens on
127.0.0.1:PORT inside it and relays every accepted connection, byte for
byte, to terp's egress proxy, reached through the Unix socket bound into
the sandbox (include/terp/egress.h has the whole picture). It never parses
a byte: every request, however it was relayed inside the sandbox, reaches
the proxy as one more client and is checked there.

    python3 egress_fwd.py SOCKET [--listen 127.0.0.1:PORT]

prints the port it listens on (one line) once it accepts connections.
One thread, one selector, a bounded buffer per direction (reading stops
while the other side's buffer is full), half-closes passed on.
"""
import selectors
import socket
import sys

BUF = 256 * 1024          # bytes waiting per direction, at most
CHUNK = 128 * 1024        # one recv


class Pipe:
    """A client connection and its connection to the proxy."""

    def __init__(self, sel, a, b):
        self.sel = sel
        self.a, self.b = a, b
        self.out = {a: bytearray(), b: bytearray()}   # to be sent to it
        self.eof = {a: False, b: False}               # it sent EOF
        self.shut = {a: False, b: False}              # we shut its write side
        self.ev = {a: 0, b: 0}
        self.closed = False
        self.update()

    def other(self, s):
        return self.b if s is self.a else self.a

    def handle(self, s, mask):
        try:
            if mask & selectors.EVENT_READ:
                self.read(s)
            if mask & selectors.EVENT_WRITE and not self.closed:
                self.write(s)
            if self.closed:
                return
            for t in (self.a, self.b):
                if self.eof[self.other(t)] and not self.out[t] and not self.shut[t]:
                    t.shutdown(socket.SHUT_WR)
                    self.shut[t] = True
        except OSError:
            self.close()
            return
        if self.shut[self.a] and self.shut[self.b]:
            self.close()
        else:
            self.update()

    def read(self, s):
        o = self.other(s)
        room = BUF - len(self.out[o])
        if room <= 0 or self.eof[s]:
            return
        try:
            data = s.recv(min(room, CHUNK))
        except (BlockingIOError, InterruptedError):
            return
        if not data:
            self.eof[s] = True
            return
        self.out[o] += data
        self.write(o)

    def write(self, s):
        buf = self.out[s]
        if not buf:
            return
        try:
            n = s.send(buf)
        except (BlockingIOError, InterruptedError):
            return
        del buf[:n]

    def update(self):
        for s in (self.a, self.b):
            ev = 0
            if not self.eof[s] and len(self.out[self.other(s)]) < BUF:
                ev |= selectors.EVENT_READ
            if self.out[s]:
                ev |= selectors.EVENT_WRITE
            if ev == self.ev[s]:
                continue
            if self.ev[s] == 0:
                self.sel.register(s, ev, self)
            elif ev == 0:
                self.sel.unregister(s)
            else:
                self.sel.modify(s, ev, self)
            self.ev[s] = ev

    def close(self):
        if self.closed:
            return
        self.closed = True
        for s in (self.a, self.b):
            if self.ev[s]:
                self.sel.unregister(s)
            s.close()


def serve(sock_path, host="127.0.0.1", port=0, ready=None):
    """Runs forever. ready(port) is called once the socket listens."""
    sel = selectors.DefaultSelector()
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((host, port))
    ls.listen(128)
    ls.setblocking(False)
    sel.register(ls, selectors.EVENT_READ, None)
    if ready is not None:
        ready(ls.getsockname()[1])
    while True:
        for key, mask in sel.select():
            if key.data is not None:
                key.data.handle(key.fileobj, mask)
                continue
            for _ in range(16):
                try:
                    c, _addr = ls.accept()
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    break       # EMFILE and the like: the client waits
                c.setblocking(False)
                c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                u.setblocking(False)
                try:
                    # A Unix connect completes at once or fails (EAGAIN:
                    # the proxy's backlog is full); it never blocks here.
                    u.connect(sock_path)
                except OSError:
                    c.close()
                    u.close()
                    continue
                Pipe(sel, c, u)


def main(argv):
    if not argv or argv[0].startswith("-"):
        sys.stderr.write("usage: egress_fwd.py SOCKET [--listen HOST:PORT]\n")
        return 2
    host, port = "127.0.0.1", 0
    if len(argv) == 3 and argv[1] == "--listen":
        host, _, p = argv[2].rpartition(":")
        port = int(p)
    elif len(argv) != 1:
        sys.stderr.write("usage: egress_fwd.py SOCKET [--listen HOST:PORT]\n")
        return 2

    def ready(p):
        sys.stdout.write("%d\n" % p)
        sys.stdout.flush()

    serve(argv[0], host, port, ready)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
