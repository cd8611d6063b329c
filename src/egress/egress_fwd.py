#!/usr/bin/env python3
"""egress_fwd: terp's in-sandbox egress forwarder (stdlib only).

The sandbox has its own network namespace with only `lo`. This listens on
127.0.0.1:PORT inside it and gives every accepted connection to terp's
egress proxy, reached through the Unix socket bound into the sandbox
(include/terp/egress.h has the whole picture). It never parses a byte:
every request, however it was relayed inside the sandbox, reaches the
proxy as one more client and is checked there.

    python3 egress_fwd.py SOCKET [--listen 127.0.0.1:PORT | --fd N]
                                 [--relay | --copy]

prints the port it listens on (one line) once it accepts connections.
--fd N: serve the listening socket inherited as fd N instead (terp's
driver makes it before any cell runs, so no request can come too early,
and starts this with -I -S, stdout on /dev/null).

Each accepted connection gets its own connection to the proxy and the
forwarder relays the bytes (socket -> pipe -> socket with splice, one
thread, one selector, a bounded pipe per direction: reading stops while
the other side's is full, half-closes passed on); --copy relays through
Python's own buffers (where splice is missing; for the tests). --relay
is the default and accepted for older callers.

It never hands a socket over (SCM_RIGHTS): a handed socket shares its
open file description with the sandbox, where a cell could clear
O_NONBLOCK on it and block terp's one thread in the proxy (issue 22).
The proxy takes no descriptors; what it reads and writes is its own.
"""
import fcntl
import os
import selectors
import socket
import sys

BUF = 256 * 1024          # bytes waiting per direction, at most
CHUNK = 128 * 1024        # one recv, without splice
# splice(2) moves the bytes socket -> pipe -> socket without copying them
# through Python (os.splice: Python 3.10+); older Pythons copy.
SPLICE = hasattr(os, "splice")
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", 1032)


class Dir:
    """One direction: bytes from src to dst, at most cap of them waiting."""

    def __init__(self, src, dst):
        self.src, self.dst = src, dst
        self.eof = False        # src sent EOF
        self.shut = False       # dst's write side is shut
        self.full = False       # the pipe refused more (its pages are used)
        self.len = 0
        if SPLICE:
            self.pr, self.pw = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                fcntl.fcntl(self.pw, F_SETPIPE_SZ, BUF)
            except OSError:
                pass
            self.cap = fcntl.fcntl(self.pw, F_GETPIPE_SZ)
            self.flags = os.SPLICE_F_MOVE | os.SPLICE_F_NONBLOCK
        else:
            self.buf = bytearray()
            self.cap = BUF

    def can_read(self):
        return not self.eof and not self.full and self.len < self.cap

    def read(self):
        if not self.can_read():
            return
        try:
            if SPLICE:
                n = os.splice(self.src.fileno(), self.pw, self.cap - self.len,
                              flags=self.flags)
            else:
                data = self.src.recv(min(self.cap - self.len, CHUNK))
                n = len(data)
                self.buf += data
        except (BlockingIOError, InterruptedError):
            # a dry socket, or a pipe out of pages: wait for a drain
            self.full = self.len > 0
            return
        if n == 0:
            self.eof = True
        self.len += n

    def write(self):
        if not self.len:
            return
        try:
            if SPLICE:
                n = os.splice(self.pr, self.dst.fileno(), self.len, flags=self.flags)
            else:
                n = self.dst.send(self.buf)
                del self.buf[:n]
        except (BlockingIOError, InterruptedError):
            return
        self.len -= n
        self.full = False

    def close(self):
        if SPLICE:
            os.close(self.pr)
            os.close(self.pw)


class Pipe:
    """A client connection and its connection to the proxy."""

    def __init__(self, sel, a, b):
        self.sel = sel
        self.a, self.b = a, b
        self.dirs = (Dir(a, b), Dir(b, a))
        self.ev = {a: 0, b: 0}
        self.closed = False
        self.update()

    def handle(self, s, mask):
        try:
            for d in self.dirs:
                if d.src is s and mask & selectors.EVENT_READ:
                    d.read()
                    d.write()
                elif d.dst is s and mask & selectors.EVENT_WRITE:
                    d.write()
            for d in self.dirs:
                if d.eof and not d.len and not d.shut:
                    d.dst.shutdown(socket.SHUT_WR)
                    d.shut = True
        except OSError:
            self.close()
            return
        if all(d.shut for d in self.dirs):
            self.close()
        else:
            self.update()

    def update(self):
        for s in (self.a, self.b):
            ev = 0
            for d in self.dirs:
                if d.src is s and d.can_read():
                    ev |= selectors.EVENT_READ
                if d.dst is s and d.len:
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
        for d in self.dirs:
            d.close()


def listener(host, port, fd):
    if fd is not None:
        ls = socket.socket(fileno=fd)
    else:
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((host, port))
    ls.listen(128)
    return ls


def serve(sock_path, host="127.0.0.1", port=0, ready=None, fd=None):
    """Relays forever. ready(port) is called once the socket listens."""
    sel = selectors.DefaultSelector()
    ls = listener(host, port, fd)
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


USAGE = "usage: egress_fwd.py SOCKET [--listen HOST:PORT | --fd N] [--relay | --copy]\n"


def main(argv):
    global SPLICE
    run = serve
    if "--relay" in argv:
        argv = [a for a in argv if a != "--relay"]
    if "--copy" in argv:
        SPLICE = False
        argv = [a for a in argv if a != "--copy"]
    if not argv or argv[0].startswith("-"):
        sys.stderr.write(USAGE)
        return 2
    host, port, fd = "127.0.0.1", 0, None
    if len(argv) == 3 and argv[1] == "--listen":
        host, _, p = argv[2].rpartition(":")
        port = int(p)
    elif len(argv) == 3 and argv[1] == "--fd":
        fd = int(argv[2])
    elif len(argv) != 1:
        sys.stderr.write(USAGE)
        return 2

    def ready(p):
        sys.stdout.write("%d\n" % p)
        sys.stdout.flush()

    run(argv[0], host, port, ready, fd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
