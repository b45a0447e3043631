#!/usr/bin/env bats
# vm-kernel: stock
# Lazy restore (crest restore --lazy-pages, process mode): the tree runs
# before its private anonymous memory is in; crest fills pages on first
# touch through a user-mode-only userfaultfd and the rest in the
# background. The scenarios of lazy-scenario.bash, each as PID 1 of
# `unshare -Urpf`: every byte of zdtm-anon-mem; zdtm-lazy forking, moving,
# dropping memory and having the kernel touch it while its pages come in;
# crest waiting for the root; the filling process or its guard SIGKILLed
# kills the tree (no page answered with zeros); a container refused.

load helpers

SCEN=$BATS_TEST_DIRNAME/lazy-scenario.bash

scenario() {
	requires non-root vm cmd:crest cmd:unshare
	local dir=$BATS_TEST_TMPDIR/s
	mkdir -p "$dir"
	cd "$dir"
	run env CREST="$(command -v "$CREST")" PROGS="$PROGS" MIB=16 \
		unshare -Urpf --mount-proc bash "$SCEN" "$@"
	echo "$output"
	[ "$status" = 0 ] || fail "scenario $*: $output"
	[[ "$output" == SKIP:* ]] && skip "${output#SKIP: }"
	[[ "$output" == *PASS* ]] || fail "scenario $*: no PASS: $output"
}

@test "lazy restore: every byte of zdtm-anon-mem, untouched pages not resident, no task traced once all is in" { scenario anon; }
@test "lazy restore: fork, mremap, MADV_DONTNEED, the kernel reading and writing lazy memory while the pages come in" { scenario while; }
@test "lazy restore: the program and its thread exit before crest lets go of them: crest collects both and exits" { scenario exit-early; }
@test "lazy restore: a shell and two programs, all lazy: every byte, the shell's wait gets both" { scenario tree; }
@test "lazy restore without -d: crest waits for the root and exits with its status" { scenario wait; }
@test "lazy restore: the filling process SIGKILLed mid-way kills the tree, no page answered with zeros" { scenario kill-filler; }
@test "lazy restore: a page file with one byte changed kills the tree once its check ends, in one line naming the checksum" { scenario corrupt; }
@test "lazy restore: the guard SIGKILLed mid-way: crest kills the tree" { scenario kill-guard; }
@test "lazy restore: refused in one line on a kernel without UFFD_USER_MODE_ONLY (simulated), image unchanged" { scenario old-kernel; }
@test "lazy restore: refused in one line for a container" { scenario container; }
