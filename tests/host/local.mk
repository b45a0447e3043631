# Build fragment for tests/host/, included by the top Makefile.am (see docs/hacking.md).
