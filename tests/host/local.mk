# Host tests that need a rootless user (TAP shell scripts); see docs/hacking.md.
TESTS += tests/host/grant.test
EXTRA_DIST += tests/host/grant.test
EXTRA_DIST += tests/host/rootless-env
