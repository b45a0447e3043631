#!/usr/bin/env bats
# vm-as: root
# vm-kernel: patched
# CRIU 3.17 (Debian's package in the image, root only) works on the patched
# VM kernel: what kernel/config/series/criu.config adds for it (hugetlbfs,
# the packet and UDP socket diag interfaces, tun, veth ...) must not drop out
# of the config unnoticed, since `make bench-vm` measures crest against
# CRIU in this kernel (bench/README.md). Only the patched kernel carries
# these options; the stock build keeps the common fragment alone.

load helpers

setup() {
	requires root vm kernel-patched cmd:criu
	CTMP=$(mktemp -d /dev/shm/kernel-criu.XXXXXX)
}

teardown() {
	[ -n "${CPID:-}" ] && kill -KILL "$CPID" 2>/dev/null
	rm -rf "$CTMP"
}

@test "criu check: every feature CRIU cannot work without is there" {
	run criu check
	assert_success
	assert_line "Looks good."
}

# Category 2 of criu check: each needed for some process trees only. Not
# listed: compat_cr and autofs (experimental, criu check --all only: no
# 32-bit emulation and no autofs in this kernel) and can_map_vdso (missing on
# this kernel: CRIU then restores the vDSO with mremap()).
@test "criu check --feature: every extra feature the VM kernel is to have" {
	local f bad=
	for f in mnt_id mem_dirty_track aio_remap timerfd tun tun_ns userns fdinfo_lock \
		seccomp_suspend seccomp_filters loginuid cgroupns tcp_half_closed uffd uffd-noncoop \
		sk_ns sk_unix_file nsid link_nsid; do
		criu check --feature "$f" >"$CTMP/out" 2>&1 || bad+=" $f($(tail -1 "$CTMP/out"))"
	done
	[ -z "$bad" ] || fail "criu check --feature fails for:$bad"
}

@test "memfd_create(MFD_HUGETLB) is no longer ENOSYS: hugetlbfs is built in" {
	grep -qw hugetlbfs /proc/filesystems
}

@test "criu dump and restore a process with 16 MiB of touched memory" {
	cd "$CTMP"
	# A session of its own: the job's is PID 1's (sid 0), which CRIU
	# refuses even with --shell-job.
	ZDTM_ANON_MIB=16 setsid "$CREST_TESTS/progs/zdtm-anon-mem" "$CTMP/ready" "$CTMP/result" </dev/null >"$CTMP/out" 2>&1 &
	for i in $(seq 100); do [ -e "$CTMP/ready" ] && break; sleep 0.2; done
	[ -e "$CTMP/ready" ] || fail "zdtm-anon-mem never got ready"
	CPID=$(cat "$CTMP/ready")
	mkdir "$CTMP/img"
	run criu dump -t "$CPID" -D "$CTMP/img" --shell-job -o "$CTMP/dump.log"
	assert_success
	for i in $(seq 100); do kill -0 "$CPID" 2>/dev/null || break; sleep 0.1; done
	run criu restore -D "$CTMP/img" --shell-job -d --pidfile "$CTMP/pid" -o "$CTMP/restore.log"
	assert_success
	[ "$(cat "$CTMP/pid")" = "$CPID" ] || fail "restored as PID $(cat "$CTMP/pid"), not $CPID"
	kill -TERM "$CPID"
	for i in $(seq 150); do grep -qE '^(PASS|FAIL|ERROR)' "$CTMP/result" 2>/dev/null && break; sleep 0.2; done
	run cat "$CTMP/result"
	assert_line --regexp "^PASS"
	CPID=
}
