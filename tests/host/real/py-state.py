"""State held by a CPython interpreter, for tests/host/real-programs.test.

    python3 py-state.py DIR

Sets up, in DIR: three threads waiting on a condition and on a queue, a
listening TCP socket on 127.0.0.1 (port in DIR/port), a UNIX socket pair
with bytes queued both ways, a pipe holding bytes, 32 MiB of memory in a
bytearray and an mmap, a file open at an offset and an unlinked one,
handlers for SIGUSR1 and SIGTERM, a child process (os.fork) sharing its
memory; then writes its PID to DIR/ready and waits for SIGTERM. On SIGTERM
it checks all of it (the threads answer, the socket accepts a connection
and echoes through a thread, the queued bytes, the memory's digest, the
offsets, the child's answer) and writes PASS or FAIL lines to DIR/result.
"""
import hashlib
import mmap
import os
import queue
import signal
import socket
import sys
import tempfile
import threading

DIR = sys.argv[1]
fails = []


def fail(msg):
    fails.append(msg)


# Memory: a pattern in a bytearray and an anonymous mmap.
big = bytearray(os.urandom(1 << 16) * 256)  # 16 MiB
anon = mmap.mmap(-1, 16 << 20)
anon.write(bytes(big[: 16 << 20]))
digest = hashlib.sha256(big).hexdigest()

# Threads: one waits on a condition, one on a queue, one serves the socket.
cond = threading.Condition()
go = False
answers = queue.Queue()
jobs = queue.Queue()


def waiter():
    with cond:
        while not go:
            cond.wait()
    answers.put("waiter")


def worker():
    while True:
        item = jobs.get()
        if item is None:
            break
        answers.put("worker:" + item)


lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
lsock.bind(("127.0.0.1", 0))
lsock.listen(4)
port = lsock.getsockname()[1]


def server():
    conn, _ = lsock.accept()
    data = conn.recv(64)
    conn.sendall(b"echo:" + data)
    conn.close()


threads = [threading.Thread(target=f, daemon=True) for f in (waiter, worker, server)]
for t in threads:
    t.start()

# A socket pair and a pipe with bytes queued.
a, b = socket.socketpair()
a.sendall(b"to-b" * 100)
b.sendall(b"to-a" * 50)
pr, pw = os.pipe()
os.write(pw, b"in-the-pipe" * 10)

# Files: one at an offset, one unlinked.
f = open(os.path.join(DIR, "data"), "w+b")
f.write(b"0123456789" * 1000)
f.seek(4321)
u = tempfile.TemporaryFile(dir=DIR)
u.write(b"unlinked" * 512)
u.seek(100)

# A child sharing the memory (copy-on-write), answering on a pipe.
cr, cw = os.pipe()
ar, aw = os.pipe()
child = os.fork()
if child == 0:
    os.close(cw)
    os.close(ar)
    os.read(cr, 1)
    os.write(aw, hashlib.sha256(big).hexdigest().encode())
    os._exit(0)
os.close(cr)
os.close(aw)

usr1 = []
signal.signal(signal.SIGUSR1, lambda s, fr: usr1.append(s))
term = threading.Event()
signal.signal(signal.SIGTERM, lambda s, fr: term.set())

with open(os.path.join(DIR, "port"), "w") as pf:
    pf.write(str(port))
tmp = os.path.join(DIR, "ready.tmp")
with open(tmp, "w") as rf:
    rf.write("%d\n" % os.getpid())
os.rename(tmp, os.path.join(DIR, "ready"))

while not term.wait(0.05):
    pass

# The checks.
os.kill(os.getpid(), signal.SIGUSR1)
if usr1 != [signal.SIGUSR1]:
    fail("SIGUSR1 handler: got %r" % usr1)
with cond:
    go = True
    cond.notify_all()
jobs.put("job")
got = sorted(answers.get(timeout=10) for _ in range(2))
if got != ["waiter", "worker:job"]:
    fail("threads answered %r" % got)
jobs.put(None)
c = socket.create_connection(("127.0.0.1", port), timeout=10)
c.sendall(b"hello")
reply = c.recv(64)
if reply != b"echo:hello":
    fail("listening socket: reply %r" % reply)
if b.recv(1000, socket.MSG_DONTWAIT) != b"to-b" * 100:
    fail("socket pair: bytes queued for b")
if a.recv(1000, socket.MSG_DONTWAIT) != b"to-a" * 50:
    fail("socket pair: bytes queued for a")
if os.read(pr, 1000) != b"in-the-pipe" * 10:
    fail("pipe: bytes")
if hashlib.sha256(big).hexdigest() != digest:
    fail("bytearray: digest differs")
anon.seek(0)
if anon.read(16 << 20) != bytes(big[: 16 << 20]):
    fail("mmap: bytes differ")
if f.tell() != 4321 or f.read(4) != b"1234":
    fail("file offset")
if u.tell() != 100 or u.read(8) != b"unlinked"[100 % 8 :] + b"unlinked"[: 100 % 8]:
    fail("unlinked file: offset or bytes")
os.write(cw, b"x")
if os.read(ar, 100).decode() != digest:
    fail("child: its memory's digest")
_, st = os.waitpid(child, 0)
if st != 0:
    fail("child: status %#x" % st)
with open(os.path.join(DIR, "result"), "a") as out:
    for m in fails:
        out.write("FAIL: %s\n" % m)
    out.write("PASS\n" if not fails else "")
sys.exit(1 if fails else 0)
