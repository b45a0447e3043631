# Build fragment for runtime/restorer/, included by the top Makefile.am (see docs/hacking.md).
