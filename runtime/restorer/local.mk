# Build fragment for runtime/restorer/, included by the top Makefile.am (see docs/hacking.md).
#
# crest-restorer: the static program crun starts as a restoring container's
# process (the container's rootfs may have no libc). It links the engine and
# runtime/lib statically. Not built with the sanitizers: they do not link
# statically.

if !SANITIZERS
pkglibexec_PROGRAMS += runtime/restorer/crest-restorer
endif
runtime_restorer_crest_restorer_SOURCES = runtime/restorer/restorer.c
runtime_restorer_crest_restorer_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/runtime/engine
runtime_restorer_crest_restorer_CFLAGS = $(AM_CFLAGS) $(YAJL_CFLAGS)
runtime_restorer_crest_restorer_LDFLAGS = -static
runtime_restorer_crest_restorer_LDADD = $(CREST_ENGINE_LIB) $(CREST_LIB) -lyajl_s
