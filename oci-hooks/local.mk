# Build fragment for oci-hooks/, included by the top Makefile.am (see docs/hacking.md).
