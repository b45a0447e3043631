# Host tests that need a rootless user (TAP shell scripts); see docs/hacking.md.
TESTS += tests/host/cli.test tests/host/grant.test
EXTRA_DIST += tests/host/cli.test tests/host/grant.test
EXTRA_DIST += tests/host/rootless-env

# The zdtm programs (tests/progs/zdtm) in process mode and in rootless
# containers on this host's kernel.
TESTS += tests/host/zdtm-process.test tests/host/zdtm-container.test
EXTRA_DIST += tests/host/zdtm-process.test tests/host/zdtm-container.test

# Signals that arrive while the dump works on a task (zdtm-sigstorm).
TESTS += tests/host/engine-signals.test
EXTRA_DIST += tests/host/engine-signals.test

# A terminal container (process.terminal, --console-socket) through
# checkpoint and restore on a new pty (console-recv, pty-child).
TESTS += tests/host/checkpoint-console.test
EXTRA_DIST += tests/host/checkpoint-console.test

# Tasks in a group stop (kill -STOP, ^Z) through checkpoint and restore
# (zdtm-stopped), and tasks another tracer holds (engine-tracer), refused.
check_PROGRAMS += runtime/tests/engine-tracer
runtime_tests_engine_tracer_SOURCES = runtime/tests/engine-tracer.c
TESTS += tests/host/engine-stopped.test
EXTRA_DIST += tests/host/engine-stopped.test
