# Build fragment for runtime/restorer/, included by the top Makefile.am (see docs/hacking.md).
#
# crest-restorer: the static program crun starts as a restoring container's
# process (the container's rootfs may have no libc). It links the engine, and
# the few front-end helpers the engine uses, statically. Not built with the
# sanitizers: they do not link statically.

if !SANITIZERS
pkglibexec_PROGRAMS += runtime/restorer/crest-restorer
endif
runtime_restorer_crest_restorer_SOURCES = runtime/restorer/restorer.c \
	runtime/src/error.c runtime/src/log.c runtime/src/util.c
runtime_restorer_crest_restorer_CFLAGS = $(AM_CFLAGS) $(YAJL_CFLAGS)
runtime_restorer_crest_restorer_LDFLAGS = -static
runtime_restorer_crest_restorer_LDADD = $(CREST_ENGINE_LIBS) -lyajl_s

# Container checkpoint/restore glue, compiled into crest.
CREST_EXTRA_SOURCES += runtime/src/container-cr.c runtime/src/container-cr.h
