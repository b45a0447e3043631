# Build fragment for bats-tests/, included by the top Makefile.am (see docs/hacking.md).
