# Build fragment for bench/, included by the top Makefile.am (see docs/hacking.md).
#
# `make bench`: the benchmarks of bench/run-bench on this host; `make bench-vm`:
# the same inside the crest test VM (image/run-vm). Neither is part of make
# check; figures go in issue notes, never in timed tests.

EXTRA_PROGRAMS = bench/tree bench/fork-cycle bench/cow-tree bench/fill-ref bench/dirty bench/write-ref
bench_tree_SOURCES = bench/tree.c tests/progs/zdtm/zdtm.c tests/progs/zdtm/zdtm.h
bench_tree_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/progs/zdtm
bench_fork_cycle_SOURCES = bench/fork-cycle.c
bench_cow_tree_SOURCES = bench/cow-tree.c tests/progs/zdtm/zdtm.c tests/progs/zdtm/zdtm.h
bench_cow_tree_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/progs/zdtm
bench_fill_ref_SOURCES = bench/fill-ref.c
bench_write_ref_SOURCES = bench/write-ref.c
bench_dirty_SOURCES = bench/dirty.c tests/progs/zdtm/zdtm.c tests/progs/zdtm/zdtm.h
bench_dirty_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/progs/zdtm
CLEANFILES += bench/tree bench/fork-cycle bench/cow-tree bench/fill-ref bench/dirty bench/write-ref
EXTRA_DIST += bench/run-bench bench/README.md

BENCH_PROGS = runtime/src/crest tests/progs/zdtm-anon-mem bench/tree bench/fork-cycle bench/cow-tree bench/fill-ref bench/dirty bench/write-ref

bench: $(BENCH_PROGS)
	abs_top_builddir='$(abs_top_builddir)' abs_top_srcdir='$(abs_top_srcdir)' \
		$(SHELL) $(top_srcdir)/bench/run-bench

# The VM has 2G of RAM and a /dev/shm of half of it: the image and the
# restored process of 1 GiB each do not fit, hence a smaller default size.
# Under TCG one run takes minutes; BENCH_VM_FLAGS passes options to
# image/run-vm (e.g. --kvm, --kernel stock, --mem 4G). The VM job runs as
# root: run-bench measures CRIU there (as root) beside crest, then drops to
# the test user (UID 1000) for crest's own figures (BENCH_VM_ONLY=criu: the
# side-by-side figures alone).
BENCH_VM_RUNS = 2
BENCH_VM_ANON_MIB = 512
BENCH_VM_TIMEOUT = 5400
BENCH_VM_FLAGS =
BENCH_VM_ONLY =
BENCH_VM_DIRTY_RATE = 50
BENCH_VM_DOWN_PRE = 0 1 3
# The lazy restore's sizes (MiB): the VM's 2G hold the image and the
# restored process of 512 MiB at most.
BENCH_VM_LAZY_MIBS = 64 256 512
bench-vm: $(BENCH_PROGS)
	@set -e; \
	share=$$(mktemp -d -t crest-bench-vm.XXXXXX); \
	trap 'rm -rf "$$share"' EXIT; \
	mkdir "$$share/bin"; \
	cp $(BENCH_PROGS) "$$share/bin/"; \
	cp $(top_srcdir)/bench/run-bench "$$share/"; \
	chmod -R a+rX "$$share"; \
	echo "bench-vm: host $$(uname -n), $$(nproc) CPUs,$$(uptime | sed 's/.*,  *load/ load/'); VM: $(BENCH_VM_FLAGS) BENCH_RUNS=$(BENCH_VM_RUNS) BENCH_ANON_MIB=$(BENCH_VM_ANON_MIB)"; \
	abs_top_builddir='$(abs_top_builddir)' $(top_srcdir)/image/run-vm \
		--as root --timeout $(BENCH_VM_TIMEOUT) $(BENCH_VM_FLAGS) --share "$$share" -- \
		'BENCH_BINDIR=$$CREST_SHARE/bin BENCH_RUNS=$(BENCH_VM_RUNS) BENCH_ANON_MIB=$(BENCH_VM_ANON_MIB) BENCH_ONLY=$(BENCH_VM_ONLY) BENCH_DIRTY_RATE=$(BENCH_VM_DIRTY_RATE) BENCH_LAZY_MIBS="$(BENCH_VM_LAZY_MIBS)" BENCH_DOWN_PRE="$(BENCH_VM_DOWN_PRE)" bash $$CREST_SHARE/run-bench'
.PHONY: bench bench-vm
