"""SQLite in WAL mode with a write transaction open across checkpoint and
restore (tests/host/real-services.test).

usage: py-sqlite.py DIR

DIR/db gets 5,000 committed rows, then BEGIN IMMEDIATE and one more row
not committed: the connection holds SQLite's write lock (POSIX record
locks on the database and on its -shm file, which it maps shared). DIR/ready
holds the PID. On SIGTERM: the pending row is committed, the table must
hold 5,001 rows whose values are as written, and DIR/result gets PASS or
FAIL with what differed.
"""
import os
import sqlite3
import sys

import zdtm_py

d = sys.argv[1]
c = sqlite3.connect(os.path.join(d, "db"), isolation_level=None)
mode = c.execute("pragma journal_mode=wal").fetchone()[0]
c.execute("create table t(k integer primary key, v text)")
c.execute("begin")
c.executemany("insert into t values(?, ?)", [(i, "v%d" % i) for i in range(5000)])
c.execute("commit")
c.execute("begin immediate")
c.execute("insert into t values(99999, 'pending')")
zdtm_py.ready_and_wait(d)
why = []
if mode != "wal":
    why.append("journal mode %s, expected wal" % mode)
c.execute("commit")
n = c.execute("select count(*) from t").fetchone()[0]
if n != 5001:
    why.append("%d rows, expected 5001" % n)
bad = c.execute("select count(*) from t where k < 5000 and v != 'v' || k").fetchone()[0]
if bad:
    why.append("%d rows with another value than written" % bad)
if c.execute("select v from t where k = 99999").fetchone() != ("pending",):
    why.append("the row of the open transaction is not there after its commit")
zdtm_py.verdict(d, why)
