# Vocabulary of the services suites (svc-*.bats): real Debian services in a
# rootless container. Load it after the checkpoint vocabulary:
# `load helpers`, `load checkpoint-helpers`, `load svc-helpers`.
#
#   svc_setup                 $BUNDLE: a bundle whose root is a small
#                             directory with the VM's /usr, /etc and /var
#                             bound read-only (the services of the image
#                             are there; / itself cannot be the root: the
#                             VM's root is not a mount pivot_root takes),
#                             /tmp a read-write bind of $SVC (mode
#                             1777; data directories live there and are the
#                             same files in the restored container), its own
#                             network namespace (crun brings lo up), and a
#                             user namespace that maps container 0 to the
#                             test user and 1..65535 to its subordinate IDs;
#                             also IMAGE and CR_LOG as cr_setup sets them
#   svc_run ID CMD...         start the container (cr_run): CMD is its init
#   svc_in PATH               the host path of PATH under the container's /tmp
#   svc_wait_port ID PORT [SECS]
#                             wait until something listens on TCP PORT in
#                             container ID's network namespace (read in
#                             /proc/PID/net of its init: nothing started
#                             inside)
#   svc_init PORT CLIENT CMD  write $SVC/run.sh, the init script: CMD (a
#                             shell command line) in the background and, if
#                             CLIENT is not empty, an svc-conn client named
#                             CLIENT to 127.0.0.1:PORT once it answers (its
#                             FIFO made here); both are children of the
#                             init, in the checkpointed tree. Start it with
#                             `svc_run ID /bin/sh /tmp/run.sh`
#   svc_fifo NAME             make the FIFO $SVC/NAME.in, for a client the
#                             init script starts: `$PROGS/svc-conn tcp
#                             127.0.0.1 PORT /tmp/NAME.in /tmp/NAME.out
#                             2>/tmp/NAME.err &` (or psql <>/tmp/NAME.in)
#   svc_conn_wait NAME [SECS] wait until svc-conn NAME is connected
#                             ($SVC/NAME.out exists)
#   svc_send NAME TEXT        write TEXT (printf %b: \r\n work) to the FIFO
#                             $SVC/NAME.in (fails after 30 s if nobody
#                             reads it)
#   svc_expect NAME PATTERN [SECS]
#                             wait until $SVC/NAME.out holds PATTERN (grep -E)
#   svc_ms                    milliseconds since the epoch
#   svc_cycle ID [ERE]        checkpoint container ID, then restore it, each
#                             asserted to succeed, and /proc of its tasks
#                             compared before and after (cr_procstate_same,
#                             lines matching ERE left out; ERE "-": not
#                             compared, for a program that changes it on
#                             its own: see svc_cycle_stopped);
#                             sets SVC_CKPT_MS, SVC_REST_MS and SVC_IMG_KIB
#                             (the figures) and SVC_PROC_MS (the time the
#                             comparison took, for a figure that spans
#                             the cycle to leave out)
#   svc_cycle_stopped ID      svc_cycle of the container's tree stopped
#                             (SIGSTOP to every task, SIGCONT after the
#                             comparison): /proc compared with nothing of
#                             the program running in between (PostgreSQL's
#                             background writer grows its heap on its own
#                             timer: seen within 20 s with no checkpoint),
#                             but for signal masks and pending sets (below)
#
# A service runs as its container's init through a shell script the suite
# writes into $SVC (the in-container clients are children of that script, so
# both ends of every connection are in the checkpointed tree).

SVC=

svc_setup() {
	BUNDLE=$BATS_TEST_TMPDIR/bundle
	SVC=$BATS_TEST_TMPDIR/svc
	IMAGE=$BATS_TEST_TMPDIR/image
	CR_LOG=$BATS_TEST_TMPDIR/crest.log
	mkdir -p "$BUNDLE" "$SVC"
	chmod 1777 "$SVC"
	local tpl=${BATS_FILE_TMPDIR:-$BATS_TEST_TMPDIR}/svc-template
	if [ ! -e "$tpl/done" ]; then
		rm -rf "$tpl"
		mkdir -p "$tpl"
		(cd "$tpl" && crun spec --rootless)
		mkdir -p "$tpl/rootfs"/{usr,etc,var,tmp,proc,sys,dev,run}
		local l
		for l in bin sbin lib lib64; do
			[ ! -L "/$l" ] || ln -s "$(readlink "/$l")" "$tpl/rootfs/$l"
		done
		local uid gid sub
		uid=$(id -u)
		gid=$(id -g)
		sub=$(awk -F: -v u="$(id -un)" '$1 == u { print $2; exit }' /etc/subuid)
		[ -n "$sub" ] || fail "svc_setup: no subordinate UIDs for $(id -un) in /etc/subuid"
		jq --argjson uid "$uid" --argjson gid "$gid" --argjson sub "$sub" '
			.process.terminal = false
			| .process.cwd = "/tmp"
			| .process.env += ["HOME=/tmp", "LANG=C.UTF-8"]
			| .root = {path: "rootfs", readonly: true}
			| .mounts += [
				{destination: "/usr", type: "bind", source: "/usr", options: ["rbind", "ro"]},
				{destination: "/etc", type: "bind", source: "/etc", options: ["rbind", "ro"]},
				{destination: "/var", type: "bind", source: "/var", options: ["rbind", "ro"]},
				{destination: "/tmp", type: "bind", source: "SVC", options: ["rbind", "rw"]}]
			| .linux.namespaces |= (map(select(.type != "network")) + [{type: "network"}])
			| .linux.uidMappings = [{containerID: 0, hostID: $uid, size: 1},
				{containerID: 1, hostID: $sub, size: 65535}]
			| .linux.gidMappings = [{containerID: 0, hostID: $gid, size: 1},
				{containerID: 1, hostID: $sub, size: 65535}]' \
			"$tpl/config.json" >"$tpl/config.json.tmp" && mv "$tpl/config.json.tmp" "$tpl/config.json"
		: >"$tpl/done"
	fi
	cp -a "$tpl/rootfs" "$BUNDLE/"
	jq --arg svc "$SVC" '(.mounts[] | select(.destination == "/tmp")).source = $svc' \
		"$tpl/config.json" >"$BUNDLE/config.json"
}

svc_run() {
	cr_run "$@"
}

svc_in() {
	echo "$SVC$1"
}

svc_ms() {
	echo $(($(date +%s%N) / 1000000))
}

svc_cycle() {
	local t0 t1 proc=$BATS_TEST_TMPDIR/$1.proc
	t0=$(svc_ms)
	[ "${2:-}" = - ] || cr_procstate "$1" "$proc"
	SVC_PROC_MS=$(($(svc_ms) - t0))
	t0=$(svc_ms)
	cr_checkpoint "$1"
	t1=$(svc_ms)
	[ "$status" = 0 ] || fail "checkpoint: $output"
	SVC_CKPT_MS=$((t1 - t0))
	SVC_IMG_KIB=$(du -sk "$IMAGE" | cut -f1)
	t0=$(svc_ms)
	cr_restore "$1"
	t1=$(svc_ms)
	[ "$status" = 0 ] || fail "restore: $output"
	SVC_REST_MS=$((t1 - t0))
	[ "${2:-}" = - ] || cr_procstate_same "$1" "$proc" "${2:-}"
	SVC_PROC_MS=$((SVC_PROC_MS + $(svc_ms) - t1))
}

svc_cycle_stopped() {
	_svc_signal "$1" STOP T
	# Left out: the pending signals (the tree's own timers fire while it
	# is stopped: PostgreSQL's SIGALRM) and the blocked mask (a task
	# stopped inside sigsuspend, as a shell's wait is, shows the mask of
	# the call; restored, it shows its own until it runs and calls again:
	# docs/engine.md, "Stopped tasks").
	svc_cycle "$1" '^[0-9]+ (thread [0-9]+ )?status: (SigBlk|SigPnd|ShdPnd):'
	_svc_signal "$1" CONT '[^T]'
}

# _svc_signal ID SIG STATES: SIG to every task of container ID, then wait
# until each is in a state of the bracket expression STATES. The init from
# here (it is the test user's; inside, its namespace's init takes no
# signal it has no handler for); the others by the container's root
# (crest exec: some run under other container UIDs), `kill -1` sparing the
# sender.
_svc_signal() {
	local p i ok
	kill -"$2" "$(cr_init "$1")" || fail "SIG$2 to the init of $1 failed"
	"$CREST" exec "$1" /bin/sh -c "kill -$2 -1" || fail "SIG$2 to the tasks of $1 (crest exec) failed"
	for ((i = 0; i < 100; i++)); do
		ok=1
		for p in $(cr_tasks "$1"); do
			_proc_state "$p" && [[ $PROC_STATE != $3 ]] && { ok=; break; }
		done
		[ -z "$ok" ] || return 0
		sleep 0.1
	done
	fail "the tasks of $1 are not in state $3 10 s after SIG$2"
}

# _svc_listening PID PORT: /proc/PID/net/tcp{,6} (the network namespace of
# PID) shows a socket in LISTEN (state 0A) on local port PORT.
_svc_listening() {
	local hex
	printf -v hex '%04X' "$2"
	cat "/proc/$1/net/tcp" "/proc/$1/net/tcp6" 2>/dev/null |
		awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" { f = 1 } END { exit !f }'
}

svc_wait_port() {
	local id=$1 port=$2 secs=${3:-60} init i
	init=$(cr_init "$id") || fail "svc_wait_port: no container $id"
	for ((i = 0; i < secs * 10; i++)); do
		_svc_listening "$init" "$port" && return 0
		sleep 0.1
	done
	fail "nothing listens on port $port of container $id after $secs s"
}

svc_init() {
	local port=$1 client=$2
	shift 2
	cat >"$SVC/run.sh" <<-EOF
		#!/bin/sh
		$* &
		if [ -n "$client" ]; then
			until $PROGS/svc-conn tcp 127.0.0.1 $port /tmp/$client.in /tmp/$client.out 2>/tmp/$client.err; do
				[ -s /tmp/$client.out ] && break
				sleep 0.2
			done &
		fi
		wait
	EOF
	chmod 755 "$SVC/run.sh"
	[ -z "$client" ] || svc_fifo "$client"
}

svc_fifo() {
	mkfifo -m 0666 "$SVC/$1.in"
}

svc_conn_wait() {
	local name=$1 secs=${2:-60}
	wait_file "$SVC/$name.out" "$secs" \
		|| fail "svc-conn $name never connected: $(cat "$SVC/$name.err" 2>/dev/null)"
}

svc_send() {
	timeout 30 bash -c 'printf "%b" "$2" >"$1"' svc_send "$SVC/$1.in" "$2" \
		|| fail "svc_send $1: nobody reads $SVC/$1.in"
}

svc_expect() {
	local name=$1 pat=$2 secs=${3:-30} i
	for ((i = 0; i < secs * 10; i++)); do
		grep -Eq -- "$pat" "$SVC/$name.out" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "svc-conn $name: no '$pat' after $secs s; it got: $(tail -c 300 "$SVC/$name.out" 2>/dev/null) $(cat "$SVC/$name.err" 2>/dev/null)"
}
