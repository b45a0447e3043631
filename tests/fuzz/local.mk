# Build fragment for tests/fuzz/, included by the top Makefile.am (see docs/hacking.md).
#
# The image fuzzer (tests/fuzz/fuzz-image.c): libFuzzer over the image
# reader and the restore plan, built with clang and its sanitizers apart
# from the rest. `make fuzz FUZZ_SECONDS=N` runs it on the committed seeds
# (tests/fuzz/seeds/) plus FUZZ_CORPUS (a directory outside the tree it
# keeps adding to; more seeds from real images: tools/fuzz-seeds).
FUZZ_SECONDS ?= 60
FUZZ_CORPUS ?= $(abs_builddir)/fuzz-corpus
FUZZ_CC ?= clang
FUZZ_FLAGS ?=
# Every engine source but the checkpoint's (the fuzzer stubs the two hooks
# of dump-guard.c the image writer calls), and the base library.
FUZZ_SRCS = tests/fuzz/fuzz-image.c \
	$(filter-out runtime/engine/dump.c runtime/engine/dump-guard.c,$(filter %.c,$(runtime_engine_libcrest_engine_a_SOURCES))) \
	$(filter %.c,$(runtime_lib_libcrest_a_SOURCES))
EXTRA_DIST += tests/fuzz/fuzz-image.c tests/fuzz/seeds tools/fuzz-seeds
CLEANFILES += tests/fuzz/fuzz-image

# One object per source (under tests/fuzz/obj/, make -j compiles them side
# by side; FUZZ_CC="ccache clang" keeps them between builds, as CI does),
# each depending on every header of the engine and the library.
FUZZ_CFLAGS = -g -O2 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
	-I. -I$(srcdir)/runtime/lib -I$(srcdir)/runtime/engine $(YAJL_CFLAGS)
FUZZ_OBJS = $(patsubst %.c,tests/fuzz/obj/%.o,$(FUZZ_SRCS)) tests/fuzz/obj/restorer-blob.o
FUZZ_HDRS = $(wildcard $(srcdir)/runtime/lib/*.h $(srcdir)/runtime/engine/*.h) config.h
tests/fuzz/obj/%.o: $(srcdir)/%.c $(FUZZ_HDRS)
	$(AM_V_CC)$(MKDIR_P) $(@D) && $(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@
tests/fuzz/obj/restorer-blob.o: runtime/engine/restorer-blob.c $(FUZZ_HDRS)
	$(AM_V_CC)$(MKDIR_P) $(@D) && $(FUZZ_CC) $(FUZZ_CFLAGS) -c runtime/engine/restorer-blob.c -o $@
tests/fuzz/fuzz-image: $(FUZZ_OBJS)
	$(AM_V_CCLD)$(FUZZ_CC) -fsanitize=fuzzer,address,undefined $(FUZZ_OBJS) $(YAJL_LIBS) -o $@
clean-local: clean-fuzz-obj
clean-fuzz-obj:
	rm -rf tests/fuzz/obj
.PHONY: clean-fuzz-obj

# In a user namespace of its own where one can be made: every capability
# there, as a restore under `unshare -Urpf` has, so that the plan's last
# check (the tree's capabilities within the restorer's) goes the same way
# on every machine: a root without CAP_SYS_RESOURCE stopped most seeds at it.
FUZZ_NS = $$(unshare -Ur true 2>/dev/null && echo unshare -Ur)
fuzz: tests/fuzz/fuzz-image
	@$(MKDIR_P) $(FUZZ_CORPUS)
	$(FUZZ_NS) ./tests/fuzz/fuzz-image -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
		-max_len=65536 -print_final_stats=1 $(FUZZ_FLAGS) $(FUZZ_CORPUS) $(srcdir)/tests/fuzz/seeds
.PHONY: fuzz
