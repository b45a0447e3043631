# Host tests that need a rootless user (TAP shell scripts); see docs/hacking.md.
TESTS += tests/host/cli.test tests/host/grant.test
EXTRA_DIST += tests/host/cli.test tests/host/grant.test
# A verb's error, once on stderr and once in --log (text and crun's JSON).
TESTS += tests/host/error-log.test
EXTRA_DIST += tests/host/error-log.test
EXTRA_DIST += tests/host/rootless-env

# The zdtm programs (tests/progs/zdtm) in process mode and in rootless
# containers on this host's kernel.
TESTS += tests/host/zdtm-process.test tests/host/zdtm-container.test
EXTRA_DIST += tests/host/zdtm-process.test tests/host/zdtm-container.test

# Programs nobody here wrote (CPython, perl, busybox sh and httpd) through
# two checkpoint/restore cycles, /proc compared (tests/progs/procstate).
TESTS += tests/host/real-programs.test tests/host/real-services.test
EXTRA_DIST += tests/host/real-programs.test tests/host/real/py-state.py tests/host/real/py-async.py \
    tests/host/real/pl-state.pl tests/host/real/lib.bash tests/host/real-services.test \
    tests/host/real/py-sqlite.py tests/host/real/py-mp.py tests/host/real/zdtm_py.py
# Daemons: varnish, MariaDB, Erlang, Go, Unbound, rsyslog, gunicorn.
TESTS += tests/host/real-daemons.test
EXTRA_DIST += tests/host/real-daemons.test tests/host/real/go-srv.go tests/host/real/erl_srv.erl \
    tests/host/real/py-keyring.py
# Language runtimes: OpenJDK (jcmd and jstat after restore), Node.js.
TESTS += tests/host/real-runtimes.test
EXTRA_DIST += tests/host/real-runtimes.test tests/host/real/JavaSrv.java tests/host/real/node-srv.js

# Signals that arrive while the dump works on a task (zdtm-sigstorm).
TESTS += tests/host/engine-signals.test
EXTRA_DIST += tests/host/engine-signals.test

# Several processes' injected calls at once (dump-par.c): a shell and five
# threaded zdtm-threads through checkpoint and restore, and the worker
# killed while their calls are under way.
TESTS += tests/host/engine-parallel.test
EXTRA_DIST += tests/host/engine-parallel.test

# A terminal container (process.terminal, --console-socket) through
# checkpoint and restore on a new pty (console-recv, pty-child).
TESTS += tests/host/checkpoint-console.test
EXTRA_DIST += tests/host/checkpoint-console.test

# Tasks in a group stop (kill -STOP, ^Z) through checkpoint and restore
# (zdtm-stopped), and tasks another tracer holds (engine-tracer), refused.
check_PROGRAMS += tests/progs/engine-tracer
tests_progs_engine_tracer_SOURCES = tests/progs/engine-tracer.c
TESTS += tests/host/engine-stopped.test
EXTRA_DIST += tests/host/engine-stopped.test

# A container frozen through its own cgroup (cgroupfs manager, a delegated
# cgroup2 subtree): checkpointed running or paused, and crest killed meanwhile.
TESTS += tests/host/checkpoint-freeze.test
EXTRA_DIST += tests/host/checkpoint-freeze.test

# A checkpoint never harms the tree: SIGKILL of crest at many moments of a
# checkpoint of a 200 MiB tree (zdtm-busy-tree), the checkpoint fault matrix.
TESTS += tests/host/checkpoint-safety.test
EXTRA_DIST += tests/host/checkpoint-safety.test

# Migration: checkpoint --export / restore --import, and the command lines
# podman, conmon and CRI-O give an OCI runtime.
check_PROGRAMS += tests/progs/flock-hold
tests_progs_flock_hold_SOURCES = tests/progs/flock-hold.c
tests_progs_flock_hold_LDFLAGS = -static
TESTS += tests/host/migrate-archive.test
# Seccomp filters: the container profile's through checkpoint and restore,
# a task's own refused (zdtm-seccomp).
TESTS += tests/host/seccomp.test
EXTRA_DIST += tests/host/seccomp.test
EXTRA_DIST += tests/host/migrate-archive.test
# Two nodes (two user namespaces, two crest state roots, one shared
# directory) moving a container as the kubelet's checkpoint API does.
TESTS += tests/host/migrate-two-node.test
EXTRA_DIST += tests/host/migrate-two-node.test

# A container-mode restore SIGKILLed at each phase (CREST_FAULT=restore-kill,
# passed on to the restorer): nothing left, one line; then the image restores.
TESTS += tests/host/restore-container-faults.test
EXTRA_DIST += tests/host/restore-container-faults.test

TESTS += tests/host/predump.test
EXTRA_DIST += tests/host/predump.test

# restore --lazy-pages: every byte, the filler's death kills the tree
# (the scenarios of bats-tests/lazy-scenario.bash).
TESTS += tests/host/lazy-restore.test
EXTRA_DIST += tests/host/lazy-restore.test

# The checkpoint's own footprint (the stack below each thread's stack
# pointer, used by its injected calls) stays out of the image.
TESTS += tests/host/image-untouched.test
EXTRA_DIST += tests/host/image-untouched.test

# A thread's extended state on a CPU with another XSAVE layout (simulated
# by rewriting an image of zdtm-regs).
TESTS += tests/host/xsave-layout.test
EXTRA_DIST += tests/host/xsave-layout.test

# AMX's permission (arch_prctl ARCH_REQ_XCOMP_PERM) through checkpoint and
# restore; tile data in use refused (CPUs with AMX only).
TESTS += tests/host/amx.test
EXTRA_DIST += tests/host/amx.test

# `crest exec` after a restore: the exec'd process runs with the fresh
# container's capabilities and seccomp filter (crun's state is the
# container's config again once the restorer runs: container-cr.c).
TESTS += tests/host/restore-exec.test
EXTRA_DIST += tests/host/restore-exec.test

# Mounts a container made itself are refused at checkpoint (container-cr.c).
TESTS += tests/host/container-mounts.test
EXTRA_DIST += tests/host/container-mounts.test
