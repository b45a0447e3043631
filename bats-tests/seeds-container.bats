#!/usr/bin/env bats
# A rootless container run by crest, without and with the grant of
# CAP_CHECKPOINT_RESTORE, as the test user.

load helpers

setup() {
	requires non-root cmd:crest
	setup_bundle
}

teardown() {
	teardown_bundle
}

# The mask of one capability set of the bundle's config (empty when absent).
config_mask() {
	local names
	names=$(jq -r ".process.capabilities.$1 // [] | .[]" "$BUNDLE/config.json")
	# shellcheck disable=SC2086
	cap_mask $names
}

@test "crest run: the busybox bundle runs rootless with the capabilities of its config, and exits 0" {
	update_config ".process.args = [\"$PROGS/caps\"]"
	crest_run "caps-$$"
	assert_success
	local set conf want
	for set in Eff:effective Prm:permitted Bnd:bounding Inh:inheritable; do
		conf=${set#*:}
		want=$(config_mask "$conf")
		[ "$(cap_line "${set%%:*}")" = "$want" ] \
			|| fail "Cap${set%%:*} is $(cap_line "${set%%:*}"), config.json's $conf gives $want"
	done
	# The kernel raises an ambient capability only if it is also permitted and
	# inheritable (capabilities(7)); crun's rootless template lists ambient
	# capabilities but no inheritable ones.
	want=$(printf '%016x' $((0x$(config_mask ambient) & 0x$(config_mask permitted) & 0x$(config_mask inheritable))))
	[ "$(cap_line Amb)" = "$want" ] || fail "CapAmb is $(cap_line Amb), the config allows $want"
	# The defaults are not empty, and do not hold capability 40.
	[ $((0x$(cap_line Eff))) != 0 ] || fail "no effective capability at all"
	[ $((0x$(cap_line Eff) >> CAP_CHECKPOINT_RESTORE & 1)) = 0 ] || fail "capability 40 without a grant"
}

@test "crest run without the grant: set_tid inside the container fails with EPERM" {
	update_config ".process.args = [\"/bin/sh\", \"-c\", \"$PROGS/caps; exec $PROGS/set-tid $((100 + RANDOM % 800))\"]"
	crest_run "no-grant-$$"
	assert_failure 1
	assert_line EPERM
	[ $((0x$(cap_line Eff) >> CAP_CHECKPOINT_RESTORE & 1)) = 0 ] || fail "capability 40 without a grant"
}

@test "crest run --cap-checkpoint-restore=add: the config's capabilities plus 40, and set_tid gets its PID" {
	local want=$((100 + RANDOM % 800))
	update_config ".process.args = [\"/bin/sh\", \"-c\", \"$PROGS/caps; exec $PROGS/set-tid $want\"]"
	crest_run "grant-add-$$" --cap-checkpoint-restore=add
	assert_success
	assert_line "pid $want"
	local eff
	eff=$(printf '%016x' $((0x$(config_mask effective) | 1 << CAP_CHECKPOINT_RESTORE)))
	[ "$(cap_line Eff)" = "$eff" ] || fail "CapEff $(cap_line Eff), expected $eff"
}

@test "annotation org.crest.checkpoint-restore=only: capability 40 alone, and set_tid gets its PID" {
	local want=$((100 + RANDOM % 800))
	update_config ".process.args = [\"/bin/sh\", \"-c\", \"$PROGS/caps; exec $PROGS/set-tid $want\"]
		| .annotations[\"org.crest.checkpoint-restore\"] = \"only\""
	crest_run "grant-only-$$"
	assert_success
	assert_line "pid $want"
	local set
	for set in Eff Prm Bnd; do
		[ "$(cap_line $set)" = "$(cap_bit "$CAP_CHECKPOINT_RESTORE")" ] || fail "Cap$set is $(cap_line $set)"
	done
}
