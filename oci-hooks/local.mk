# OCI hooks that let other front ends (podman, CRI-O, plain crun) use crest.
pkglibexec_PROGRAMS += oci-hooks/crest-oci-hook
oci_hooks_crest_oci_hook_SOURCES = oci-hooks/crest-oci-hook.c \
	runtime/src/state.c runtime/src/oci-config.c runtime/src/error.c runtime/src/log.c runtime/src/util.c
oci_hooks_crest_oci_hook_CFLAGS = $(AM_CFLAGS) $(SANITIZER_CFLAGS) $(YAJL_CFLAGS)
oci_hooks_crest_oci_hook_LDFLAGS = $(SANITIZER_LDFLAGS)
oci_hooks_crest_oci_hook_LDADD = $(YAJL_LIBS)

# The hooks.d file for podman and CRI-O (containers-hooks.json(5)).
hooksdir = $(datadir)/containers/oci/hooks.d
hooks_DATA = oci-hooks/crest.json
CLEANFILES += oci-hooks/crest.json
EXTRA_DIST += oci-hooks/crest.json.in oci-hooks/README.md
oci-hooks/crest.json: oci-hooks/crest.json.in
	$(AM_V_GEN)$(MKDIR_P) oci-hooks && $(SED) -e 's|@pkglibexecdir[@]|$(pkglibexecdir)|g' $< > $@

TESTS += tests/host/oci-hook.test
EXTRA_DIST += tests/host/oci-hook.test
