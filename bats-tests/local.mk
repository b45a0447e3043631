# Build fragment for bats-tests/, included by the top Makefile.am (see docs/hacking.md).
#
# Test programs that run inside the VM, often inside a busybox container: all
# are check_PROGRAMS, linked -static (the container has no libc).  The image
# build installs them under /usr/lib/crest-tests/progs/.

# --- seed proofs (issue 3) ---------------------------------------------------
check_PROGRAMS += \
	bats-tests/progs/set-tid \
	bats-tests/progs/exe-link \
	bats-tests/progs/caps \
	bats-tests/progs/set-tid-fcap \
	bats-tests/progs/ns-last-pid \
	bats-tests/progs/map-files \
	bats-tests/progs/map-files-fcap \
	bats-tests/progs/msr \
	bats-tests/progs/write-file

bats_tests_progs_set_tid_SOURCES = bats-tests/progs/set-tid.c
bats_tests_progs_set_tid_LDFLAGS = -static

bats_tests_progs_exe_link_SOURCES = bats-tests/progs/exe-link.c
bats_tests_progs_exe_link_LDFLAGS = -static

# *-fcap: the same program again, for the copy that file-caps.txt gives
# cap_checkpoint_restore+ep in the image.
bats_tests_progs_set_tid_fcap_SOURCES = bats-tests/progs/set-tid.c
bats_tests_progs_set_tid_fcap_LDFLAGS = -static

bats_tests_progs_caps_SOURCES = bats-tests/progs/caps.c
bats_tests_progs_caps_LDFLAGS = -static

bats_tests_progs_ns_last_pid_SOURCES = bats-tests/progs/ns-last-pid.c
bats_tests_progs_ns_last_pid_LDFLAGS = -static

bats_tests_progs_map_files_SOURCES = bats-tests/progs/map-files.c
bats_tests_progs_map_files_LDFLAGS = -static

bats_tests_progs_map_files_fcap_SOURCES = bats-tests/progs/map-files.c
bats_tests_progs_map_files_fcap_LDFLAGS = -static

bats_tests_progs_msr_SOURCES = bats-tests/progs/msr.c
bats_tests_progs_msr_LDFLAGS = -static

bats_tests_progs_write_file_SOURCES = bats-tests/progs/write-file.c
bats_tests_progs_write_file_LDFLAGS = -static

# --- suites and their shared vocabulary ---------------------------------------
EXTRA_DIST += \
	bats-tests/file-caps.txt \
	$(wildcard $(srcdir)/bats-tests/*.bats)
