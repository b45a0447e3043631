# OCI hooks that let other front ends (podman, CRI-O, plain crun) use crest.
pkglibexec_PROGRAMS += oci-hooks/crest-oci-hook
oci_hooks_crest_oci_hook_SOURCES = oci-hooks/crest-oci-hook.c \
	runtime/src/state.c runtime/src/oci-config.c
oci_hooks_crest_oci_hook_CPPFLAGS = $(CREST_FRONTEND_CPPFLAGS)
oci_hooks_crest_oci_hook_CFLAGS = $(AM_CFLAGS) $(SANITIZER_CFLAGS) $(YAJL_CFLAGS)
oci_hooks_crest_oci_hook_LDFLAGS = $(CREST_LDFLAGS) $(SANITIZER_LDFLAGS)
oci_hooks_crest_oci_hook_LDADD = $(CREST_LIB) $(YAJL_LIBS)

# The hooks.d file for podman and CRI-O (containers-hooks.json(5)). It names
# the hook by its installed path, so it is written at install time, from the
# pkglibexecdir of that install (`make install prefix=...` included).
hooksdir = $(datadir)/containers/oci/hooks.d
EXTRA_DIST += oci-hooks/crest.json.in oci-hooks/README.md
install-data-local: install-oci-hook-json
uninstall-local: uninstall-oci-hook-json
install-oci-hook-json:
	$(MKDIR_P) '$(DESTDIR)$(hooksdir)'
	$(SED) -e 's|@pkglibexecdir[@]|$(pkglibexecdir)|g' $(srcdir)/oci-hooks/crest.json.in \
		> '$(DESTDIR)$(hooksdir)/crest.json.tmp'
	chmod 644 '$(DESTDIR)$(hooksdir)/crest.json.tmp'
	mv -f '$(DESTDIR)$(hooksdir)/crest.json.tmp' '$(DESTDIR)$(hooksdir)/crest.json'
uninstall-oci-hook-json:
	rm -f '$(DESTDIR)$(hooksdir)/crest.json'
.PHONY: install-oci-hook-json uninstall-oci-hook-json

TESTS += tests/host/oci-hook.test
EXTRA_DIST += tests/host/oci-hook.test
