# The crest front end. Other parts hook in through:
#   CREST_EXTRA_SOURCES  more sources compiled into crest (e.g. container C/R glue)
#   CREST_ENGINE_LIBS    static libraries linked into crest (the engine)
CREST_EXTRA_SOURCES =
CREST_ENGINE_LIBS =

bin_PROGRAMS += runtime/src/crest

CREST_FRONTEND_SOURCES = \
	runtime/src/crest.h \
	runtime/src/error.c runtime/src/error.h \
	runtime/src/log.c runtime/src/log.h \
	runtime/src/util.c runtime/src/util.h \
	runtime/src/oci-config.c runtime/src/oci-config.h \
	runtime/src/state.c runtime/src/state.h \
	runtime/src/crun.c \
	runtime/src/lifecycle.c runtime/src/lifecycle.h \
	runtime/src/verbs.h

runtime_src_crest_SOURCES = runtime/src/main.c $(CREST_FRONTEND_SOURCES) $(CREST_EXTRA_SOURCES)
runtime_src_crest_CFLAGS = $(AM_CFLAGS) $(SANITIZER_CFLAGS) $(YAJL_CFLAGS) $(SECCOMP_CFLAGS) $(LIBCAP_CFLAGS)
runtime_src_crest_LDFLAGS = $(SANITIZER_LDFLAGS)
runtime_src_crest_LDADD = $(CREST_ENGINE_LIBS) $(YAJL_LIBS) $(SECCOMP_LIBS) $(LIBCAP_LIBS)

# Unit tests (TAP).
CREST_UNIT_CFLAGS = $(AM_CFLAGS) $(SANITIZER_CFLAGS) $(YAJL_CFLAGS) -I$(top_srcdir)/runtime/tests
CREST_UNIT_LIBS = $(YAJL_LIBS)
check_PROGRAMS += runtime/tests/test-config runtime/tests/test-args
TESTS += $(UNIT_TESTS)
runtime_tests_test_config_SOURCES = runtime/tests/test-config.c runtime/tests/tap.h \
	runtime/src/oci-config.c runtime/src/error.c runtime/src/log.c runtime/src/util.c
runtime_tests_test_config_CFLAGS = $(CREST_UNIT_CFLAGS)
runtime_tests_test_config_LDFLAGS = $(SANITIZER_LDFLAGS)
runtime_tests_test_config_LDADD = $(CREST_UNIT_LIBS)
runtime_tests_test_args_SOURCES = runtime/tests/test-args.c runtime/tests/tap.h \
	runtime/src/lifecycle.c runtime/src/state.c runtime/src/oci-config.c runtime/src/crun.c \
	runtime/src/error.c runtime/src/log.c runtime/src/util.c
runtime_tests_test_args_CFLAGS = $(CREST_UNIT_CFLAGS)
runtime_tests_test_args_LDFLAGS = $(SANITIZER_LDFLAGS)
runtime_tests_test_args_LDADD = $(CREST_UNIT_LIBS)

# The man page, from markdown (go-md2man, as crun does).
man1_MANS += runtime/man/crest.1
EXTRA_DIST += runtime/man/crest.1.md
CLEANFILES += runtime/man/crest.1
runtime/man/crest.1: runtime/man/crest.1.md
	$(AM_V_GEN)$(MKDIR_P) runtime/man && $(GO_MD2MAN) -in $< -out $@

# `make check-unit`: only the C unit tests (CI runs them under the sanitizers).
UNIT_TESTS = runtime/tests/test-config runtime/tests/test-args
check-unit:
	@$(MAKE) $(AM_MAKEFLAGS) check TESTS="$(UNIT_TESTS)"
.PHONY: check-unit
