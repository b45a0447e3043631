# Build fragment for image/, included by the top Makefile.am (see docs/hacking.md).
