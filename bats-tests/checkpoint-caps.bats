#!/usr/bin/env bats
# The privilege contract of a container restore: the restorer holds the
# checkpointed container's capabilities plus CAP_CHECKPOINT_RESTORE and
# CAP_SETPCAP (with which each task drops 40 from its bounding set, on any
# kernel) and nothing more while it works; every restored task has exactly
# the sets it had at checkpoint time afterwards (no capability 40 or 8
# unless it held it). A process `crest exec` starts in the restored
# container runs as one started in the fresh container: crun takes its
# capabilities and seccomp filter from its state, which the restore
# config (40 and 8 granted, no profile when the restorer installs it
# itself) must no longer be.

load helpers
load checkpoint-helpers

setup() {
	requires non-root vm cmd:crest
	cr_setup
}

teardown() {
	teardown_bundle
}

config_mask() {
	local names
	names=$(jq -r ".process.capabilities.$1 // [] | .[]" "$BUNDLE/config.json")
	# shellcheck disable=SC2086
	cap_mask $names
}

# Restore in the background with the restorer paused (CREST_RESTORER_PAUSE_MS,
# docs/restore.md), and read the restorer's capability sets meanwhile into
# $RESTORER_CAPS ("Inh Prm Eff Bnd Amb").
restore_watching_restorer() {
	local id=$1 p i
	RESTORER_CAPS=
	CONTAINERS+=("$id")
	CREST_RESTORER_PAUSE_MS=4000 "$CREST" --log "$CR_LOG" restore -d --image-path "$IMAGE" --bundle "$BUNDLE" "$id" \
		</dev/null >/dev/null 2>&1 &
	local bg=$!
	for ((i = 0; i < 300; i++)); do
		p=$(pgrep -u "$(id -u)" -x crest-restoring | head -1)
		if [ -n "$p" ]; then
			RESTORER_CAPS=$(awk '/^Cap(Inh|Prm|Eff|Bnd|Amb):/ { printf "%s ", $2 }' "/proc/$p/status")
			break
		fi
		sleep 0.02
	done
	wait "$bg" || fail "restore of $id failed: $(cat "$CR_LOG")"
	[ -n "$RESTORER_CAPS" ] || fail "never saw the restorer (comm crest-restoring) at work"
}

@test "restore: the restorer holds the container's capabilities plus 40 and 8 only; restored tasks hold exactly theirs" {
	zdtm_run "caps-$$" caps
	local before
	before=$(cr_caps "caps-$$")
	cr_checkpoint "caps-$$"
	[ "$status" = 0 ] || fail "checkpoint failed: $output"
	cr_gone "caps-$$"
	restore_watching_restorer "caps-$$"

	local inh prm eff bnd amb
	read -r inh prm eff bnd amb <<<"$RESTORER_CAPS"
	local cr=$((1 << CAP_CHECKPOINT_RESTORE)) sp=$((1 << 8))
	[ "$bnd" = "$(printf '%016x' $((0x$(config_mask bounding) | cr | sp)))" ] || fail "restorer CapBnd $bnd, want config's bounding + 40 + 8"
	[ "$prm" = "$(printf '%016x' $((0x$(config_mask permitted) | cr | sp)))" ] || fail "restorer CapPrm $prm, want config's permitted + 40 + 8"
	[ "$eff" = "$(printf '%016x' $((0x$(config_mask effective) | cr | sp)))" ] || fail "restorer CapEff $eff, want config's effective + 40 + 8"
	[ "$inh" = "$(config_mask inheritable)" ] || fail "restorer CapInh $inh, want config's inheritable"
	[ $((0x$amb & cr)) = 0 ] || fail "restorer has capability 40 in its ambient set ($amb)"

	local after
	after=$(cr_caps "caps-$$")
	# Every set, bounding included, exactly as before, on either kernel
	# (the stock one too since December 2026: before, 40 stayed in the
	# bounding set there).
	[ "$after" = "$before" ] || fail "capability sets differ after restore: before [$before] after [$after]"
	while read -r _ inh prm eff bnd amb; do
		[ $((0x$eff & cr | 0x$prm & cr)) = 0 ] || fail "a restored task kept capability 40: $inh $prm $eff $bnd $amb"
	done <<<"$after"
	zdtm_verdict "caps-$$"
}

@test "restore of a container granted capability 40 keeps it in every task" {
	update_config '.process.args = ["'"$PROGS"'/zdtm-caps", "/tmp/ready", "/tmp/result"]'
	CONTAINERS+=("grant-$$")
	"$CREST" --log "$CR_LOG" run -d --cap-checkpoint-restore=add --bundle "$BUNDLE" "grant-$$" </dev/null >/dev/null 2>&1 \
		|| fail "crest run failed: $(cat "$CR_LOG")"
	wait_file "$(in_rootfs /tmp/ready)" 120 || fail "zdtm-caps never became ready"
	local before
	before=$(cr_caps "grant-$$")
	[ $((0x$(echo "$before" | awk 'NR == 1 { print $3 }') >> CAP_CHECKPOINT_RESTORE & 1)) = 1 ] \
		|| fail "the granted container does not hold 40: $before"
	cr_checkpoint "grant-$$"
	[ "$status" = 0 ] || fail "checkpoint failed: $output"
	cr_restore "grant-$$"
	[ "$status" = 0 ] || fail "restore failed: $output"
	[ "$(cr_caps "grant-$$")" = "$before" ] || fail "capability sets differ: before [$before] after [$(cr_caps "grant-$$")]"
	zdtm_verdict "grant-$$"
}

# exec_status ID: the capability sets, seccomp mode and filters of a
# process `crest exec` starts in container ID.
exec_status() {
	"$CREST" exec "$1" /bin/cat /proc/self/status \
		| awk '/^(Cap(Inh|Prm|Eff|Bnd|Amb)|Seccomp|Seccomp_filters):/ { printf "%s %s ", $1, $2 }'
}

@test "crest exec after restore: the fresh container's capabilities and seccomp filter, with a profile the restorer installs itself and without one" {
	local prof id before after
	for prof in none late; do
		id="exec-$prof-$$"
		# late: a profile denying ptrace (docs/restore.md, "Seccomp"), and mkdir
		[ "$prof" = none ] || update_config '.linux.seccomp = {"defaultAction": "SCMP_ACT_ALLOW",
			"architectures": ["SCMP_ARCH_X86_64"], "syscalls": [
			{"names": ["ptrace"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1},
			{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13}]}'
		cr_run "$id" /bin/sleep 1000
		before=$(exec_status "$id")
		rm -rf "$IMAGE"
		cr_checkpoint "$id"
		[ "$status" = 0 ] || fail "$prof: checkpoint failed: $output"
		cr_restore "$id"
		[ "$status" = 0 ] || fail "$prof: restore failed: $output"
		after=$(exec_status "$id")
		[ "$after" = "$before" ] || fail "$prof: exec'd after restore [$after], in the fresh container [$before]"
		[ "$prof" = none ] || ! "$CREST" exec "$id" /bin/mkdir /tmp/d 2>/dev/null \
			|| fail "$prof: mkdir allowed in a process exec'd after restore"
		"$CREST" delete --force "$id" >/dev/null 2>&1
	done
}
