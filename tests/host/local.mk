# Host tests that need a rootless user (TAP shell scripts); see docs/hacking.md.
EXTRA_DIST += tests/host/rootless-env
