"""An asyncio program, for tests/host/real-programs.test.

    python3 py-async.py DIR

An event loop (epoll, its self-pipe socket pair) serving TCP on 127.0.0.1
(port in DIR/port) and a UNIX socket (DIR/sock), a task ticking every
20 ms, a child process started with asyncio.create_subprocess_exec (cat,
talked to through pipes), and a UNIX connection the server holds open with
a client inside the loop (an established TCP connection is refused without
--tcp-established, which needs a network namespace crest owns). Writes
its PID to DIR/ready and waits for SIGTERM (loop.add_signal_handler); then
checks: the ticks went on after restore, a new connection is served, the
held connection still works both ways, cat echoes a line, and writes PASS
or FAIL lines to DIR/result.
"""
import asyncio
import os
import signal
import sys

DIR = sys.argv[1]
fails = []
ticks = 0


async def ticker():
    global ticks
    while True:
        await asyncio.sleep(0.02)
        ticks += 1


async def handle(reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        writer.write(b"echo:" + line)
        await writer.drain()
    writer.close()


async def main():
    loop = asyncio.get_running_loop()
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    userver = await asyncio.start_unix_server(handle, os.path.join(DIR, "sock"))
    tick_task = asyncio.create_task(ticker())
    cat = await asyncio.create_subprocess_exec(
        "cat", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    # A connection held open across the checkpoint.
    r, w = await asyncio.open_unix_connection(os.path.join(DIR, "sock"))
    w.write(b"first\n")
    await w.drain()
    if await r.readline() != b"echo:first\n":
        fails.append("held connection: first reply")
    term = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, term.set)
    with open(os.path.join(DIR, "port"), "w") as f:
        f.write(str(port))
    tmp = os.path.join(DIR, "ready.tmp")
    with open(tmp, "w") as f:
        f.write("%d\n" % os.getpid())
    os.rename(tmp, os.path.join(DIR, "ready"))
    await term.wait()

    before = ticks
    await asyncio.sleep(0.2)
    if ticks <= before:
        fails.append("the ticking task stopped (%d ticks, %d 0.2 s later)" % (before, ticks))
    w.write(b"second\n")
    await w.drain()
    got = await asyncio.wait_for(r.readline(), 10)
    if got != b"echo:second\n":
        fails.append("held connection: reply %r" % got)
    r2, w2 = await asyncio.open_connection("127.0.0.1", port)
    w2.write(b"new\n")
    await w2.drain()
    got = await asyncio.wait_for(r2.readline(), 10)
    if got != b"echo:new\n":
        fails.append("new connection: reply %r" % got)
    cat.stdin.write(b"through cat\n")
    await cat.stdin.drain()
    got = await asyncio.wait_for(cat.stdout.readline(), 10)
    if got != b"through cat\n":
        fails.append("subprocess: %r" % got)
    cat.stdin.close()
    if await asyncio.wait_for(cat.wait(), 10) != 0:
        fails.append("subprocess: exit status")
    w.close()
    w2.close()
    tick_task.cancel()
    server.close()
    userver.close()


asyncio.run(main())
with open(os.path.join(DIR, "result"), "a") as out:
    for m in fails:
        out.write("FAIL: %s\n" % m)
    if not fails:
        out.write("PASS\n")
sys.exit(1 if fails else 0)
