# Build fragment for kernel/, included by the top Makefile.am (see docs/hacking.md).
