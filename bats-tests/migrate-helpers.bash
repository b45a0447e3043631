# Vocabulary of the two-node migration suites (migrate-node-*.bats; load it
# after helpers and checkpoint-helpers). Each node is a VM of its own; they
# share only $CREST_SHARE (a 9p directory), as the kubelet's checkpoint API
# moves an archive between nodes.
#
#   mig_bundle                 a counter container's bundle in $BUNDLE:
#                              busybox sh counting on its stdout, the
#                              kubelet's pod annotations (the same on every
#                              node); the busybox root only, without the test
#                              programs setup_bundle copies (tens of MB per
#                              test under TCG), its config written by one jq
#                              per suite file
#   mig_wait FILE SECS         wait for FILE in the share (the other node
#                              may boot later: TCG), at most SECS and at most
#                              until a minute before bats' test timeout
#   mig_count FILE             the last count FILE holds (0 if none)
#   mig_passes FILE N          the count in FILE goes past N within 10 s
#
# It also gives the nodes their setup (a counter bundle, mig_bundle) and
# teardown.

MIG=${CREST_SHARE:-/mnt/share}

mig_bundle() {
	local tpl=$BATS_FILE_TMPDIR/mig-template
	BUNDLE=$BATS_TEST_TMPDIR/bundle
	IMAGE=$BATS_TEST_TMPDIR/image
	CR_LOG=$BATS_TEST_TMPDIR/crest.log
	if [ ! -e "$tpl/done" ]; then
		rm -rf "$tpl"
		mkdir -p "$tpl"
		cp -a "$CREST_TESTS/rootfs" "$tpl/rootfs"
		mkdir -p "$tpl/rootfs/tmp"
		(cd "$tpl" && crun spec --rootless) || return 1
		jq '.process.terminal = false | .root.path = "rootfs" | .root.readonly = false
			| .process.cwd = "/tmp"
			| .annotations["io.kubernetes.pod.name"] = "counter"
			| .annotations["io.kubernetes.pod.namespace"] = "default"
			| .annotations["io.kubernetes.container.name"] = "counter"
			| .process.args = ["/bin/sh", "-c", "i=0; while :; do i=$((i+1)); echo $i; sleep 0.05; done"]' \
			"$tpl/config.json" >"$tpl/config.json.tmp" && mv "$tpl/config.json.tmp" "$tpl/config.json" || return 1
		: >"$tpl/done"
	fi
	mkdir -p "$BUNDLE"
	cp -a "$tpl/rootfs" "$tpl/config.json" "$BUNDLE/"
}

mig_wait() {
	local i max=$2
	# bats kills a test at BATS_TEST_TIMEOUT without a word of what it waited for.
	[ -z "${BATS_TEST_TIMEOUT:-}" ] || [ "$max" -le $((BATS_TEST_TIMEOUT - 60)) ] || max=$((BATS_TEST_TIMEOUT - 60))
	for ((i = 0; i < max; i++)); do
		[ -e "$MIG/$1" ] && return 0
		sleep 1
	done
	echo "# waited $max s for $1 in the share" >&3
	return 1
}

mig_count() {
	awk 'END { print $1 + 0 }' "$1" 2>/dev/null || echo 0
}

mig_passes() {
	local i
	for ((i = 0; i < 200; i++)); do
		[ "$(mig_count "$1")" -gt "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

setup() {
	requires non-root vm cmd:crest
	mig_bundle || fail "the counter bundle could not be made"
}

teardown() {
	teardown_bundle
}
