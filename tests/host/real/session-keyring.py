# session-keyring.py [--user] CMD...: run CMD with a new session keyring of
# its own (KEYCTL_JOIN_SESSION_KEYRING, no name), or with --user with its
# user's session keyring as its session keyring (joined by its name,
# "_uid_ses.UID", made first if need be), whatever keyrings the caller has.
# real-daemons.test: a tree that has no session keyring but its user's,
# checkpointed and restored by a crest with one of its own.
import ctypes, os, sys

libc = ctypes.CDLL(None, use_errno=True)
SYS_keyctl, GET_ID, JOIN, USER_SESSION = 250, 0, 1, -5
args = sys.argv[1:]
name = None
if args and args[0] == "--user":
    args = args[1:]
    us = libc.syscall(SYS_keyctl, GET_ID, USER_SESSION, 1)
    name = ("_uid_ses.%d" % os.getuid()).encode()
got = libc.syscall(SYS_keyctl, JOIN, name)
if got < 0 or (name and got != us):
    sys.exit("session-keyring.py: join %s: %s (got %d)" % (name or "a new session keyring", os.strerror(ctypes.get_errno()), got))
os.execvp(args[0], args)
