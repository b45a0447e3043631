# Build fragment for bench/, included by the top Makefile.am (see docs/hacking.md).
#
# `make bench`: the benchmarks of bench/run-bench (not part of make check;
# figures go in issue notes, never in timed tests).

EXTRA_PROGRAMS = bench/tree bench/fork-cycle
bench_tree_SOURCES = bench/tree.c bats-tests/zdtm/zdtm.c bats-tests/zdtm/zdtm.h
bench_tree_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/bats-tests/zdtm
bench_fork_cycle_SOURCES = bench/fork-cycle.c
CLEANFILES += bench/tree bench/fork-cycle
EXTRA_DIST += bench/run-bench bench/README.md

bench: runtime/src/crest bats-tests/progs/zdtm-anon-mem bench/tree bench/fork-cycle
	abs_top_builddir='$(abs_top_builddir)' abs_top_srcdir='$(abs_top_srcdir)' \
		$(SHELL) $(top_srcdir)/bench/run-bench
.PHONY: bench
