# Build fragment for bench/, included by the top Makefile.am (see docs/hacking.md).
