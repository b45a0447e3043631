# real-daemons.test: the session keyrings of a process that changed its UID,
# in a tree none of whose tasks joined a session keyring (process mode, a
# user namespace mapping more than one UID). The parent stays UID 0; its
# child takes UID 1000 as a service's worker does. Each asks for its session
# keyring (which installs its user's session keyring where it had none) and
# its user's session keyring, and writes both. On SIGUSR1 (after restore)
# each asks again: the same keyrings must come back. Usage: DIR; writes
# DIR/ready (the parent's PID) once both are set up, DIR/result with PASS or
# FAIL lines. With "alone" after DIR: one process (see below).
import ctypes, os, signal, sys, time

libc = ctypes.CDLL(None, use_errno=True)
SYS_keyctl, GET_ID, SESSION, USER_SESSION = 250, 0, -3, -5


def rings():
    r = [libc.syscall(SYS_keyctl, GET_ID, k, 0) for k in (SESSION, USER_SESSION)]
    return "%d %d" % tuple(r)


d = sys.argv[1]
go = []
signal.signal(signal.SIGUSR1, lambda *a: go.append(1))
if sys.argv[2:] == ["alone"]:
    # One process, no child, whose session keyring is its user's: a key
    # added to its user's session keyring (a key added to "the session
    # keyring" would make it a new one) must be found through its session
    # keyring after restore, with the same keyrings, whatever session
    # keyring the restorer had.
    SYS_add_key, SEARCH = 248, 10
    key = libc.syscall(SYS_add_key, b"user", b"crest-k", b"v", 1, USER_SESSION)
    before = rings()
    open(d + "/ready.tmp", "w").write(str(os.getpid()))
    os.rename(d + "/ready.tmp", d + "/ready")
    while not go:
        time.sleep(0.05)
    after = rings()
    found = libc.syscall(SYS_keyctl, SEARCH, SESSION, b"user", b"crest-k", 0)
    ok = key > 0 and before == after and found == key and before.split()[0] == before.split()[1]
    with open(d + "/result", "w") as f:
        f.write("%s alone: keyrings before %s, after %s; key %d, found %d\n" % ("PASS" if ok else "FAIL", before, after, key, found))
    sys.exit(0)
rfd, wfd = os.pipe()
kid = os.fork()
if kid == 0:
    os.setgroups([])
    os.setresgid(1000, 1000, 1000)
    os.setresuid(1000, 1000, 1000)
    before = rings()
    os.write(wfd, (before + "\n").encode())
    while not go:
        time.sleep(0.05)
    after = rings()
    ok = before == after and before.split()[0] == before.split()[1]
    os.write(wfd, ("%s child uid 1000: session and user session keyrings before %s, after %s\n" % ("PASS" if ok else "FAIL", before, after)).encode())
    os._exit(0)
before = rings()
child_before = os.read(rfd, 100).decode().strip()
open(d + "/ready.tmp", "w").write(str(os.getpid()))
os.rename(d + "/ready.tmp", d + "/ready")
while not go:
    time.sleep(0.05)
os.kill(kid, signal.SIGUSR1)
after = rings()
line = os.read(rfd, 300).decode().strip()
os.waitpid(kid, 0)
ok = before == after
with open(d + "/result", "w") as f:
    f.write("%s parent uid 0: keyrings before %s, after %s\n%s\n" % ("PASS" if ok else "FAIL", before, after, line))
