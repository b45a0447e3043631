# Build fragment for bats-tests/, included by the top Makefile.am (see
# docs/hacking.md and tests/README.md).
#
# The bats suites run inside the VM (image/vm-suites) and their shared
# vocabulary; the image build copies them to /usr/lib/crest-tests/bats/. The
# programs they run are built in tests/progs/ (tests/progs/local.mk).
EXTRA_DIST += \
	bats-tests/file-caps.txt \
	$(wildcard $(srcdir)/bats-tests/*.bash) \
	$(wildcard $(srcdir)/bats-tests/*.bats)
