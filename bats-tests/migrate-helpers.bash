# Vocabulary of the two-node migration suites (migrate-node-*.bats; load it
# after helpers and checkpoint-helpers). Each node is a VM of its own; they
# share only $CREST_SHARE (a 9p directory), as the kubelet's checkpoint API
# moves an archive between nodes.
#
#   mig_bundle                 a counter container's bundle: busybox sh
#                              counting on its stdout, the kubelet's pod
#                              annotations (the same on every node)
#   mig_wait FILE SECS         wait for FILE in the share (the other node
#                              may boot later: TCG)
#   mig_count FILE             the last count FILE holds (0 if none)
#   mig_passes FILE N          the count in FILE goes past N within 10 s
#
# It also gives the nodes their setup (a counter bundle, mig_bundle) and
# teardown.

MIG=${CREST_SHARE:-/mnt/share}

mig_bundle() {
	cr_setup
	update_config '.annotations["io.kubernetes.pod.name"] = "counter"
		| .annotations["io.kubernetes.pod.namespace"] = "default"
		| .annotations["io.kubernetes.container.name"] = "counter"
		| .process.args = ["/bin/sh", "-c", "i=0; while :; do i=$((i+1)); echo $i; sleep 0.05; done"]'
}

mig_wait() {
	local i
	for ((i = 0; i < $2; i++)); do
		[ -e "$MIG/$1" ] && return 0
		sleep 1
	done
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
	mig_bundle
}

teardown() {
	teardown_bundle
}
