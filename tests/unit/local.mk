# Build fragment for tests/unit/ (C unit tests, TAP), included by the top
# Makefile.am (see docs/hacking.md and tests/README.md).

CREST_UNIT_CPPFLAGS = $(CREST_FRONTEND_CPPFLAGS) -I$(top_srcdir)/tests/unit
CREST_UNIT_CFLAGS = $(AM_CFLAGS) $(SANITIZER_CFLAGS) $(YAJL_CFLAGS)
CREST_UNIT_LIBS = $(CREST_LIB) $(YAJL_LIBS)

# Front end: config rewriting and the create/run argument handling.
check_PROGRAMS += tests/unit/test-config tests/unit/test-args
tests_unit_test_config_SOURCES = tests/unit/test-config.c tests/unit/tap.h tests/unit/config-tap.h runtime/src/oci-config.c
tests_unit_test_config_CPPFLAGS = $(CREST_UNIT_CPPFLAGS)
tests_unit_test_config_CFLAGS = $(CREST_UNIT_CFLAGS)
tests_unit_test_config_LDFLAGS = $(SANITIZER_LDFLAGS)
tests_unit_test_config_LDADD = $(CREST_UNIT_LIBS)
tests_unit_test_args_SOURCES = tests/unit/test-args.c tests/unit/tap.h \
	runtime/src/lifecycle.c runtime/src/state.c runtime/src/oci-config.c runtime/src/crun.c
tests_unit_test_args_CPPFLAGS = $(CREST_UNIT_CPPFLAGS)
tests_unit_test_args_CFLAGS = $(CREST_UNIT_CFLAGS)
tests_unit_test_args_LDFLAGS = $(SANITIZER_LDFLAGS)
tests_unit_test_args_LDADD = $(CREST_UNIT_LIBS)

CREST_ENGINE_UNIT_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/runtime/engine -I$(top_srcdir)/tests/unit
CREST_ENGINE_UNIT_CFLAGS = $(AM_CFLAGS) $(YAJL_CFLAGS)
CREST_ENGINE_UNIT_LIBS = $(CREST_ENGINE_LIB) $(CREST_LIB) $(YAJL_LIBS)

# Engine: the image layer (and SHA-256, both code paths).
check_PROGRAMS += tests/unit/engine-image
tests_unit_engine_image_SOURCES = tests/unit/engine-image.c tests/unit/tap.h
tests_unit_engine_image_CPPFLAGS = $(CREST_ENGINE_UNIT_CPPFLAGS)
tests_unit_engine_image_CFLAGS = $(CREST_ENGINE_UNIT_CFLAGS)
tests_unit_engine_image_LDFLAGS = $(SANITIZER_LDFLAGS)
tests_unit_engine_image_LDADD = $(CREST_ENGINE_UNIT_LIBS)

# Engine: the common socket layer (sock_diag through setns, SOL_SOCKET options).
check_PROGRAMS += tests/unit/engine-sockets
tests_unit_engine_sockets_SOURCES = tests/unit/engine-sockets.c tests/unit/tap.h
tests_unit_engine_sockets_CPPFLAGS = $(CREST_ENGINE_UNIT_CPPFLAGS)
tests_unit_engine_sockets_CFLAGS = $(CREST_ENGINE_UNIT_CFLAGS)
tests_unit_engine_sockets_LDFLAGS = $(SANITIZER_LDFLAGS)
tests_unit_engine_sockets_LDADD = $(CREST_ENGINE_UNIT_LIBS)

# Engine: the way home of an injected call (inject-home.c).
check_PROGRAMS += tests/unit/engine-maps
tests_unit_engine_maps_SOURCES = tests/unit/engine-maps.c tests/unit/tap.h
tests_unit_engine_maps_CPPFLAGS = $(CREST_ENGINE_UNIT_CPPFLAGS)
tests_unit_engine_maps_CFLAGS = $(CREST_ENGINE_UNIT_CFLAGS)
tests_unit_engine_maps_LDFLAGS = $(SANITIZER_LDFLAGS)
tests_unit_engine_maps_LDADD = $(CREST_ENGINE_UNIT_LIBS)

check_PROGRAMS += tests/unit/engine-home
tests_unit_engine_home_SOURCES = tests/unit/engine-home.c tests/unit/tap.h
tests_unit_engine_home_CPPFLAGS = $(CREST_ENGINE_UNIT_CPPFLAGS)
tests_unit_engine_home_CFLAGS = $(CREST_ENGINE_UNIT_CFLAGS)
tests_unit_engine_home_LDFLAGS = $(SANITIZER_LDFLAGS)
tests_unit_engine_home_LDADD = $(CREST_ENGINE_UNIT_LIBS)

# Engine: a thread's extended state moved between XSAVE layouts (xsave.c).
check_PROGRAMS += tests/unit/engine-xsave
tests_unit_engine_xsave_SOURCES = tests/unit/engine-xsave.c tests/unit/tap.h
tests_unit_engine_xsave_CPPFLAGS = $(CREST_ENGINE_UNIT_CPPFLAGS)
tests_unit_engine_xsave_CFLAGS = $(CREST_ENGINE_UNIT_CFLAGS)
tests_unit_engine_xsave_LDFLAGS = $(SANITIZER_LDFLAGS)
tests_unit_engine_xsave_LDADD = $(CREST_ENGINE_UNIT_LIBS)

# The default state root's reading of uid_map (rootless podman's namespace).
check_PROGRAMS += tests/unit/test-state-root
tests_unit_test_state_root_SOURCES = tests/unit/test-state-root.c tests/unit/tap.h
tests_unit_test_state_root_CPPFLAGS = $(CREST_UNIT_CPPFLAGS)
tests_unit_test_state_root_CFLAGS = $(CREST_UNIT_CFLAGS)
tests_unit_test_state_root_LDFLAGS = $(SANITIZER_LDFLAGS)
tests_unit_test_state_root_LDADD = $(CREST_UNIT_LIBS)

# The style rule "functions <= 150 lines" on runtime/engine and runtime/src
# (a script: no build needed).
EXTRA_DIST += tests/unit/func-length.test

# linux.seccomp compiled by crest, installed in a child to see what it does.
check_PROGRAMS += tests/unit/test-mount-opts
tests_unit_test_mount_opts_SOURCES = tests/unit/test-mount-opts.c tests/unit/tap.h \
	runtime/src/mount-opts.c runtime/src/oci-config.c
tests_unit_test_mount_opts_CPPFLAGS = $(CREST_UNIT_CPPFLAGS)
tests_unit_test_mount_opts_CFLAGS = $(CREST_UNIT_CFLAGS)
tests_unit_test_mount_opts_LDFLAGS = $(SANITIZER_LDFLAGS)
tests_unit_test_mount_opts_LDADD = $(CREST_UNIT_LIBS)

check_PROGRAMS += tests/unit/test-seccomp-profile
tests_unit_test_seccomp_profile_SOURCES = tests/unit/test-seccomp-profile.c tests/unit/tap.h \
	runtime/src/seccomp-profile.c runtime/src/oci-config.c
tests_unit_test_seccomp_profile_CPPFLAGS = $(CREST_UNIT_CPPFLAGS)
tests_unit_test_seccomp_profile_CFLAGS = $(CREST_UNIT_CFLAGS) $(SECCOMP_CFLAGS)
tests_unit_test_seccomp_profile_LDFLAGS = $(SANITIZER_LDFLAGS)
tests_unit_test_seccomp_profile_LDADD = $(CREST_UNIT_LIBS) $(SECCOMP_LIBS)

# Restore into a new bundle: what of its config may differ from the image's.
check_PROGRAMS += tests/unit/test-config-compat
tests_unit_test_config_compat_SOURCES = tests/unit/test-config-compat.c tests/unit/tap.h tests/unit/config-tap.h \
	runtime/src/config-compat.c runtime/src/oci-config.c
tests_unit_test_config_compat_CPPFLAGS = $(CREST_UNIT_CPPFLAGS)
tests_unit_test_config_compat_CFLAGS = $(CREST_UNIT_CFLAGS)
tests_unit_test_config_compat_LDFLAGS = $(SANITIZER_LDFLAGS)
tests_unit_test_config_compat_LDADD = $(CREST_UNIT_LIBS)

UNIT_TESTS = tests/unit/test-config tests/unit/test-args tests/unit/test-mount-opts tests/unit/test-seccomp-profile tests/unit/engine-image tests/unit/engine-sockets tests/unit/engine-home tests/unit/engine-maps tests/unit/engine-xsave tests/unit/test-state-root \
	tests/unit/test-config-compat tests/unit/func-length.test
TESTS += $(UNIT_TESTS)

# `make check-unit`: only the C unit tests (CI runs them under the sanitizers).
check-unit:
	@$(MAKE) $(AM_MAKEFLAGS) check TESTS="$(UNIT_TESTS)"
.PHONY: check-unit
