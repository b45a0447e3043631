"""CPython's multiprocessing across checkpoint and restore
(tests/host/real-services.test).

usage: py-mp.py DIR METHOD     (METHOD: fork, forkserver or spawn)

A pool of three workers (pipes, a result thread, semaphores in /dev/shm),
a SharedMemory block of 1 MiB, a Lock, a shared Value and Array, a Queue
holding one item (its feeder thread and pipe), all made with METHOD, and
one round of work done. DIR/ready holds the PID. On SIGTERM: the pool
computes again, each shared object reads as written, the Lock is taken,
the queue's item comes out; DIR/result gets PASS or FAIL with what
differed.
"""
import multiprocessing as mp
import os
import sys
import time
from multiprocessing import shared_memory

import zdtm_py


def square(x):
    return x * x


if __name__ == "__main__":
    d, method = sys.argv[1], sys.argv[2]
    mp.set_start_method(method)
    shm = shared_memory.SharedMemory(create=True, size=1 << 20)
    shm.buf[:5] = b"hello"
    shm.buf[(1 << 20) - 5 :] = b"world"
    lock, val, arr = mp.Lock(), mp.Value("i", 7), mp.Array("d", [1.5] * 100)
    pool = mp.Pool(3)
    want = sum(i * i for i in range(200))
    first = sum(pool.map(square, range(200)))
    q = mp.Queue()
    q.put("queued-item")
    time.sleep(0.2)  # the feeder thread has written it to the pipe
    zdtm_py.ready_and_wait(d)
    why = []
    got = sum(pool.map(square, range(200)))
    if first != want or got != want:
        why.append("pool sums %d and %d, expected %d" % (first, got, want))
    if bytes(shm.buf[:5]) != b"hello" or bytes(shm.buf[(1 << 20) - 5 :]) != b"world":
        why.append("shared memory reads %r...%r" % (bytes(shm.buf[:5]), bytes(shm.buf[-5:])))
    if not lock.acquire(timeout=5):
        why.append("the lock cannot be taken")
    else:
        val.value += 1
        lock.release()
    if val.value != 8 or arr[99] != 1.5:
        why.append("value %d (expected 8), array %r" % (val.value, arr[99]))
    try:
        item = q.get(timeout=5)
    except Exception as e:  # the queue's pipe lost its bytes
        item = repr(e)
    if item != "queued-item":
        why.append("the queue gave %r" % item)
    pool.close()
    pool.join()
    shm.close()
    shm.unlink()
    zdtm_py.verdict(d, why)
