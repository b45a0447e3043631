#!/usr/bin/env bats
# vm-pair: migrate
# vm-kernel: stock
# Node C of the two-node migration (tests/README.md, "Two nodes"): a node
# booted with the stock kernel. Node A's archive was made on the patched
# kernel; the archive records the kernel release it needs, and restore
# refuses it here in one line naming both, before creating anything.

load helpers
load checkpoint-helpers
load migrate-helpers

@test "node C (stock kernel): node A's archive is refused in one line naming the kernel releases, nothing created" {
	local arch
	mig_wait archive 900 || fail "node A wrote no archive in 900 s"
	arch=$(cat "$MIG/archive")
	cp "$MIG/$arch" "$BATS_TEST_TMPDIR/" || fail "copy from the share"
	run "$CREST" restore --import "$BATS_TEST_TMPDIR/$arch" --bundle "$BUNDLE" -d counter-c </dev/null
	[ "$status" != 0 ] || { CONTAINERS+=(counter-c); fail "an archive of the patched kernel restored on the stock kernel"; }
	[ "${#lines[@]}" = 1 ] || fail "not one line: $output"
	[[ "$output" == *"kernel release differs: the archive needs \`"*"-crest-"*"\`, this machine runs \`$(uname -r)\`"* ]] \
		|| fail "the line does not name both releases: $output"
	cr_gone counter-c
}
