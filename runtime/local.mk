# Build fragment for runtime/src/ (the crest command), included by the top
# Makefile.am (see docs/hacking.md). The command links the engine
# (runtime/engine/) and the base library (runtime/lib/); headers of all
# three are on its include path.

bin_PROGRAMS += runtime/src/crest

# The command's include path; the engine's and the library's have no runtime/src.
CREST_FRONTEND_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/runtime/src -I$(top_srcdir)/runtime/engine

CREST_FRONTEND_SOURCES = \
	runtime/src/crest.h \
	runtime/src/oci-config.c runtime/src/oci-config.h \
	runtime/src/state.c runtime/src/state.h \
	runtime/src/crun.c \
	runtime/src/lifecycle.c runtime/src/lifecycle.h \
	runtime/src/verbs.h

runtime_src_crest_SOURCES = runtime/src/main.c $(CREST_FRONTEND_SOURCES) \
	runtime/src/verb-checkpoint.c runtime/src/verb-restore.c \
	runtime/src/container-cr.c runtime/src/container-cr.h \
	runtime/src/cr-archive.c runtime/src/cr-archive.h \
	runtime/src/config-compat.c runtime/src/config-compat.h \
	runtime/src/seccomp-profile.c runtime/src/seccomp-profile.h \
	runtime/src/ns-sysctl.c runtime/src/ns-sysctl.h \
	runtime/src/mount-opts.c runtime/src/mount-opts.h
runtime_src_crest_CPPFLAGS = $(CREST_FRONTEND_CPPFLAGS)
runtime_src_crest_CFLAGS = $(AM_CFLAGS) $(SANITIZER_CFLAGS) $(YAJL_CFLAGS) $(SECCOMP_CFLAGS) $(LIBCAP_CFLAGS) $(LIBARCHIVE_CFLAGS)
runtime_src_crest_LDFLAGS = $(CREST_LDFLAGS) $(SANITIZER_LDFLAGS)
# libarchive is loaded at run time (cr-archive.c: la_load), not linked.
runtime_src_crest_LDADD = $(CREST_ENGINE_LIB) $(CREST_LIB) $(YAJL_LIBS) $(SECCOMP_LIBS) $(LIBCAP_LIBS) -ldl

# The man page, from markdown (go-md2man, as crun does).
man1_MANS += runtime/man/crest.1
EXTRA_DIST += runtime/man/crest.1.md
CLEANFILES += runtime/man/crest.1
runtime/man/crest.1: runtime/man/crest.1.md
	$(AM_V_GEN)$(MKDIR_P) runtime/man && $(GO_MD2MAN) -in $< -out $@
