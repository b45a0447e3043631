"""The zdtm protocol (tests/README.md) for the Python programs of
tests/host/real-services.test: DIR/ready once the state is set up, then
the wait for SIGTERM (checkpoint and restore happen in between), then one
line in DIR/result."""
import os
import signal
import time


def ready_and_wait(d):
    """Write this process's PID to D/ready, return once SIGTERM came."""
    term = []
    signal.signal(signal.SIGTERM, lambda *a: term.append(1))
    with open(os.path.join(d, "ready.tmp"), "w") as f:
        f.write("%d\n" % os.getpid())
    os.rename(os.path.join(d, "ready.tmp"), os.path.join(d, "ready"))
    while not term:
        time.sleep(0.05)


def verdict(d, why):
    """PASS, or FAIL with every difference in WHY, appended to D/result."""
    with open(os.path.join(d, "result"), "a") as f:
        f.write("FAIL: %s\n" % "; ".join(why) if why else "PASS\n")
