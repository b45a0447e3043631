# Build fragment for runtime/engine/, included by the top Makefile.am (see docs/hacking.md).
