#!/usr/bin/env bats
# The VM test bed itself: the machine the other suites rely on is
# the one image/ and kernel/ promise. Runs as the rootless test user.

bats_load_library bats-support
bats_load_library bats-assert

@test "runs as the rootless test user (uid 1000) with its runtime dir" {
	run id -u
	assert_output 1000
	run id -un
	assert_output test
	[ "$XDG_RUNTIME_DIR" = /run/user/1000 ]
	[ "$(stat -c %u "$XDG_RUNTIME_DIR")" = 1000 ]
	[ "$HOME" = /home/test ] && [ -w "$HOME" ]
}

@test "the kernel is the crest build and carries its series marker" {
	release=$(uname -r)
	[ "$release" = "$CREST_KERNEL_RELEASE" ]
	marker=$(sed -n 's/^marker: //p' "$CREST_TESTS/kernel.txt")
	case "$CREST_KERNEL" in
	stock) [ "$marker" = crest-stock ] ;;
	patched) [[ "$marker" =~ ^crest-[0-9a-f]{10}$ ]] ;;
	*) false ;;
	esac
	[[ "$release" == 6.1.*-"$marker" ]]
}

@test "the kernel has the options the suites need" {
	# /proc/config.gz (IKCONFIG_PROC) is the config the running kernel was built with.
	config=$(zcat /proc/config.gz)
	for opt in CHECKPOINT_RESTORE USER_NS PID_NS POSIX_MQUEUE UNIX98_PTYS KEYS X86_MSR \
		UCLAMP_TASK_GROUP SCHED_DEBUG INIT_STACK_ALL_ZERO MEM_SOFT_DIRTY SECCOMP_FILTER; do
		grep -qx "CONFIG_$opt=y" <<<"$config" || { echo "CONFIG_$opt is not y"; false; }
	done
	[ "$(cat /proc/sys/kernel/cap_last_cap)" -ge 40 ]
}

@test "cgroup v2 only, with a subtree delegated to the test user" {
	[ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ]
	[ "$CREST_CGROUP" = /sys/fs/cgroup/crest-test ]
	[ "$(stat -c %u "$CREST_CGROUP")" = 1000 ]
	# The job starts in a leaf of the delegated subtree.
	run cat /proc/self/cgroup
	assert_output "0::/crest-test/session"
	cg=$CREST_CGROUP/bats-$$
	mkdir "$cg"
	for c in cpu memory pids; do
		grep -qw "$c" "$cg/cgroup.controllers" || { echo "no $c in $cg"; rmdir "$cg"; false; }
	done
	# Moving a process into a cgroup of our own: needs write access to the
	# delegated root's cgroup.procs, which a non-delegated tree would refuse.
	sleep 30 &
	pid=$!
	echo "$pid" >"$cg/cgroup.procs"
	run cat "/proc/$pid/cgroup"
	kill "$pid"
	wait "$pid" || true
	rmdir "$cg"
	assert_output "0::/crest-test/bats-$$"
}

@test "user namespaces map root and the subordinate id ranges" {
	run unshare --user --map-root-user id -u
	assert_success
	assert_output 0
	# newuidmap/newgidmap from /etc/subuid and /etc/subgid (test:100000:65536):
	# root is our own id, ids 1.. come from the range (util-linux maps 65535
	# of them after taking one for root).
	run unshare --user --map-auto --map-root-user cat /proc/self/uid_map /proc/self/gid_map
	assert_success
	assert_line --index 0 --regexp '^ *0 +1000 +1$'
	assert_line --index 1 --regexp '^ *1 +100000 +65535$'
	assert_line --index 2 --regexp '^ *0 +1000 +1$'
	assert_line --index 3 --regexp '^ *1 +100000 +65535$'
}

@test "test material is installed" {
	[ -d "$CREST_TESTS/progs" ]
	[ -d "$CREST_TESTS/bats" ]
	[ -x "$CREST_TESTS/rootfs/bin/busybox" ]
	[ -L "$CREST_TESTS/rootfs/bin/sh" ]
	[ -x "$CREST_TESTS/kselftests/clone3/clone3_set_tid" ]
}

@test "crest is installed from the build directory" {
	if [ "$(cat "$CREST_TESTS/build-info" 2>/dev/null)" = "builddir: none" ]; then
		skip "the image was built without a crest build directory"
	fi
	run command -v crest
	assert_success
	assert_output /usr/local/bin/crest
	# the restorer beside it, where crest looks for it, and the hooks.d
	# file naming the installed hook
	[ -x /usr/local/libexec/crest/crest-restorer ]
	[ -x /usr/local/libexec/crest/crest-oci-hook ]
	run grep -F '"path": "/usr/local/libexec/crest/crest-oci-hook"' \
		/usr/local/share/containers/oci/hooks.d/crest.json
	assert_success
}

@test "the 9p share is mounted read-write" {
	[ "$CREST_SHARE" = /mnt/share ]
	# (statfs on 9p reports the host's file system type: ask the mount table)
	run findmnt -n -o FSTYPE,OPTIONS /mnt/share
	assert_output --regexp '^9p +rw,'

	echo "written by $(id -un)" >/mnt/share/vm-basics.$$
	run cat /mnt/share/vm-basics.$$
	rm /mnt/share/vm-basics.$$
	assert_output "written by test"
}

make_bundle() { # dir args...
	local dir=$1
	shift
	mkdir -p "$dir"
	cp -a "$CREST_TESTS/rootfs" "$dir/rootfs"
	(cd "$dir" && crun spec --rootless)
	jq --argjson args "$(printf '%s\n' "$@" | jq -R . | jq -s .)" \
		'.process.terminal = false | .process.args = $args' \
		"$dir/config.json" >"$dir/config.json.new"
	mv "$dir/config.json.new" "$dir/config.json"
}

@test "crun works rootless (cgroup manager disabled)" {
	run crun --version
	assert_success
	assert_line --partial "crun version"
	make_bundle "$BATS_TEST_TMPDIR/b" /bin/sh -c 'echo "inside: uid=$(id -u) host=$(hostname)"; grep CapEff /proc/self/status'
	run crun --cgroup-manager=disabled run -b "$BATS_TEST_TMPDIR/b" "vm-basics-$$"
	assert_success
	assert_line "inside: uid=0 host=$(jq -r .hostname "$BATS_TEST_TMPDIR/b/config.json")"
	# crun's rootless default set: CAP_KILL, CAP_NET_BIND_SERVICE, CAP_AUDIT_WRITE
	assert_line --regexp '^CapEff:[[:space:]]+0000000020000420$'
}

@test "crun works rootless in the delegated cgroup" {
	make_bundle "$BATS_TEST_TMPDIR/c" /bin/cat /proc/self/cgroup
	jq '.linux.cgroupsPath = "/crest-test/vm-basics-'$$'"' "$BATS_TEST_TMPDIR/c/config.json" >"$BATS_TEST_TMPDIR/c.json"
	mv "$BATS_TEST_TMPDIR/c.json" "$BATS_TEST_TMPDIR/c/config.json"
	run crun --cgroup-manager=cgroupfs run -b "$BATS_TEST_TMPDIR/c" "vm-basics-cg-$$"
	assert_success
	# In its own cgroup namespace the container sees itself at the root.
	assert_output "0::/"
	[ ! -d "$CREST_CGROUP/vm-basics-$$" ]
}

@test "address randomisation is what the boot asked for (vm-suites: norandmaps unless a suite declares vm-aslr)" {
	# norandmaps on the command line sets randomize_va_space to 0, and a
	# process's layout is then the same in every run.
	want=2
	[[ " $(cat /proc/cmdline) " == *" norandmaps "* ]] && want=0
	[ "$(cat /proc/sys/kernel/randomize_va_space)" = "$want" ]
	a=$(grep -m1 ' r-xp .*libc\.so' /proc/self/maps | cut -d- -f1)
	b=$(grep -m1 ' r-xp .*libc\.so' /proc/self/maps | cut -d- -f1)
	[ -n "$a" ] && [ -n "$b" ]
	if [ "$want" = 0 ]; then [ "$a" = "$b" ]; else [ "$a" != "$b" ]; fi
}
