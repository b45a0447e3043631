#!/usr/bin/env bats
# vm-kernel: stock patched
# vm-only: patched a keep-alive connection
# Without address randomisation (vm-suites: TCG translates again every
# exec at a new address, 1.5 times the time): svc-redis-aslr.bats runs a real
# service with it, and the host tests all run with it.
# nginx in a rootless container (issue 12, "Real services"): Debian's
# nginx-light from the VM's own root, a master and 4 workers (shared
# anonymous memory between them, socketpair channels, epoll, one listening
# socket shared by five processes, signals), serving files from /tmp,
# checkpointed and restored by crest. Each test checks the bytes served, not
# exit codes. A keep-alive HTTP/1.1 connection opened before the checkpoint
# (svc-conn, inside the container) must serve the next request after the
# restore with --tcp-established (on the stock kernel crest outside the
# container puts the restorer's socket in repair mode), and makes a checkpoint without that
# flag refuse with the server left serving. The first test also prints the
# figures of issues 12 and 13 (times, image size, unavailability, memory of
# the restored tree against the original's: copy-on-write kept).

load helpers
load checkpoint-helpers
load svc-helpers

PORT=8080

setup() {
	requires vm non-root
	svc_setup
	SUB=$(awk -F: -v u="$(id -un)" '$1 == u { print $2; exit }' /etc/subuid)
	# The master runs as the container's root, its workers as nginx's
	# default user, nobody (UID and GID 65534 of the container, a
	# subordinate ID on the host; NGX_USER="root root" runs them as root):
	# they set themselves dumpable after setuid, so their /proc files are
	# that UID's. setuid, setgid and initgroups need CAP_SETUID and
	# CAP_SETGID, the temp directories' chown CAP_CHOWN (a rootless
	# container's defaults have none).
	local caps='["CAP_AUDIT_WRITE","CAP_KILL","CAP_NET_BIND_SERVICE","CAP_CHOWN","CAP_SETUID","CAP_SETGID"]'
	update_config ".process.capabilities.bounding = $caps | .process.capabilities.effective = $caps | .process.capabilities.permitted = $caps"
	mkdir -p "$SVC/www"
	# Two files of bytes that differ from line to line (64 KiB and 20 KiB),
	# and their digests: a.txt is asked before the checkpoint, b.txt after.
	seq 1 9000 | sed 's/^/line /' | head -c 65536 >"$SVC/www/a.txt"
	seq 1 9000 | sed 's/^/other line /' | head -c 20480 >"$SVC/www/b.txt"
	chmod 644 "$SVC/www/a.txt" "$SVC/www/b.txt"
	WANT_A=$(sha256sum <"$SVC/www/a.txt" | cut -c1-64)
	WANT_B=$(sha256sum <"$SVC/www/b.txt" | cut -c1-64)
	# Everything nginx writes is under /tmp: pid file, logs, temp paths.
	cat >"$SVC/nginx.conf" <<-EOF
		daemon off;
		user ${NGX_USER:-nobody nogroup};
		master_process on;
		worker_processes 4;
		pid /tmp/nginx.pid;
		lock_file /tmp/nginx.lock;
		error_log /tmp/nginx-error.log info;
		events { worker_connections 64; }
		http {
			access_log /tmp/nginx-access.log;
			client_body_temp_path /tmp/nginx-body;
			proxy_temp_path /tmp/nginx-proxy;
			fastcgi_temp_path /tmp/nginx-fastcgi;
			uwsgi_temp_path /tmp/nginx-uwsgi;
			scgi_temp_path /tmp/nginx-scgi;
			keepalive_timeout 3600s;
			keepalive_requests 1000;
			default_type text/plain;
			server {
				listen 127.0.0.1:$PORT;
				root /tmp/www;
			}
		}
	EOF
}

teardown() {
	teardown_bundle
}

# ng_start ID [CLIENT]: the container's init is a shell that starts nginx
# (master in the foreground of its own shell job, 4 workers) and, with
# CLIENT, an svc-conn client named CLIENT once the port answers; all are
# children of the init, in the checkpointed tree.
ng_start() {
	local id=$1 client=${2:-}
	svc_init "$PORT" "$client" "nginx -e /tmp/nginx-error.log -c /tmp/nginx.conf -p /tmp/ >/tmp/nginx.out 2>&1"
	svc_run "$id" /bin/sh /tmp/run.sh || fail "nginx did not start: $(cat "$SVC/nginx.out" "$SVC/nginx-error.log" 2>/dev/null | tail -5)"
	svc_wait_port "$id" "$PORT" || fail "nginx does not listen: $(cat "$SVC/nginx.out" "$SVC/nginx-error.log" 2>/dev/null | tail -5)"
	ng_workers "$id" 4
	[ -z "$client" ] || svc_conn_wait "$client"
}

# ng_workers ID N: wait until container ID runs an nginx master and N
# workers (their titles, as ps shows them).
ng_workers() {
	local i n
	for ((i = 0; i < 300; i++)); do
		n=$(ng_procs "$1" | grep -c 'worker process' || true)
		[ "$n" = "$2" ] && ng_procs "$1" | grep -q 'master process' && return 0
		sleep 0.1
	done
	fail "container $1 runs no nginx master with $2 workers: $(ng_procs "$1"); $(cat "$SVC/nginx-error.log" "$SVC/nginx.out" 2>/dev/null | tail -5)"
}

# ng_procs ID: "NSPID TITLE" of each nginx process of container ID, sorted
# (the title from the command line: "nginx: master process ...").
ng_procs() {
	local p init
	init=$(cr_init "$1") || return 0
	for p in $(pgrep --ns "$init" --nslist pid -x nginx); do
		printf '%s %s\n' "$(awk '/^NSpid:/ { print $NF }' "/proc/$p/status" 2>/dev/null)" \
			"$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
	done | sort -n
}

# ng_uids ID: "ROLE UID GID GROUPS" (host IDs: real, effective, saved and
# file-system alike, else all four) of each nginx process of container ID.
ng_uids() {
	local p init
	init=$(cr_init "$1") || return 0
	for p in $(pgrep --ns "$init" --nslist pid -x nginx); do
		awk -v role="$(tr '\0' ' ' <"/proc/$p/cmdline" | cut -d' ' -f2)" '
			/^Uid:/ { u = ($2 == $3 && $3 == $4 && $4 == $5) ? $2 : $2 "," $3 "," $4 "," $5 }
			/^Gid:/ { g = ($2 == $3 && $3 == $4 && $4 == $5) ? $2 : $2 "," $3 "," $4 "," $5 }
			/^Groups:/ { $1 = ""; gr = $0 }
			END { print role " process " u " " g gr }' "/proc/$p/status"
	done | sort
}

# ng_get ID FILE: the digest of /FILE fetched by curl inside container ID
# (crest exec, a new connection), or "failed: ...".
ng_get() {
	local out
	if out=$("$CREST" exec "$1" curl -sS --max-time 20 "http://127.0.0.1:$PORT/$2" 2>&1); then
		printf '%s' "$out" | sha256sum | cut -c1-64
	else
		echo "failed: $out"
	fi
}

# ng_get_wait ID FILE WANT: ng_get until it gives WANT (10 s), echo the last.
ng_get_wait() {
	local got i
	for ((i = 0; i < 50; i++)); do
		got=$(ng_get "$1" "$2")
		[ "$got" = "$3" ] && break
		sleep 0.2
	done
	echo "$got"
}

# ng_pss ID: the sum of Pss (KiB) of every task of container ID
# (/proc/PID/smaps_rollup: the tasks run as the container's root, the test
# user).
ng_pss() {
	local p files=()
	for p in $(cr_tasks "$1"); do files+=("/proc/$p/smaps_rollup"); done
	cat "${files[@]}" | awk '$1 == "Pss:" { s += $2 } END { print s + 0 }'
}

# ng_body NAME FROM: the digest of the body of the HTTP response that
# svc-conn NAME received from byte FROM of its output on (headers up to the
# empty line dropped), once it holds WANT_B (10 s).
ng_body() {
	local body i
	for ((i = 0; i < 100; i++)); do
		body=$(tail -c +"$(($2 + 1))" "$SVC/$1.out" | sed '1,/^\r$/d' | sha256sum | cut -c1-64)
		[ "$body" = "$WANT_B" ] && break
		sleep 0.1
	done
	echo "$body"
}

@test "nginx: checkpoint and restore, the master and 4 workers with the same PIDs serve the file; the figures" {
	local procs pids size last pss0 pss1 got uids logged
	ng_start ng
	[ "$(ng_get ng a.txt)" = "$WANT_A" ] || fail "nginx does not serve the file before the checkpoint: $(ng_get ng a.txt)"
	procs=$(ng_procs ng)
	pids=$(cr_ns_pids ng | cut -d' ' -f1)
	uids=$(ng_uids ng)
	if [ "${NGX_USER:-nobody nogroup}" = "nobody nogroup" ]; then
		[[ $uids == *"worker process $((SUB + 65533)) $((SUB + 65533))"* ]] \
			|| fail "the workers do not run as the container's nobody (host UID $((SUB + 65533))): $uids"
	fi
	pss0=$(ng_pss ng)
	logged=$(stat -c %s "$SVC/nginx-error.log")
	last=$(svc_ms)
	# The error log's offset is nginx's to move once it runs (below).
	svc_cycle ng ' fd [0-9]+: /tmp/nginx-error\.log '
	size=$SVC_IMG_KIB
	# What nginx logged since: only a worker's epoll_wait() that the
	# checkpoint's stop ended with EINTR, as a stop and SIGCONT would
	# (docs/engine.md, "Signals that arrive during a dump"), at info level.
	got=$(tail -c +$((logged + 1)) "$SVC/nginx-error.log" | grep -Ev '\[info\] [0-9]+#[0-9]+: epoll_wait\(\) failed \(4: Interrupted system call\)$' || true)
	[ -z "$got" ] || fail "nginx logged during the checkpoint and restore: $got"
	got=$(ng_get_wait ng a.txt "$WANT_A")
	local down=$(($(svc_ms) - last - SVC_PROC_MS))
	[ "$got" = "$WANT_A" ] || fail "after restore nginx gives $got, not the file ($WANT_A)"
	[ "$(ng_procs ng)" = "$procs" ] || fail "the nginx processes differ: before '$procs', after '$(ng_procs ng)'"
	[ "$(cr_ns_pids ng | cut -d' ' -f1)" = "$pids" ] || fail "the tree's PIDs differ: before '$pids', after '$(cr_ns_pids ng)'"
	[ "$(ng_uids ng)" = "$uids" ] || fail "the nginx processes' UIDs and groups differ: before '$uids', after '$(ng_uids ng)'"
	[ "$(ng_get ng b.txt)" = "$WANT_B" ] || fail "after restore nginx does not serve a second file"
	pss1=$(ng_pss ng)
	echo "# nginx (master + 4 workers): checkpoint $SVC_CKPT_MS ms, restore $SVC_REST_MS ms, image ${size} KiB, unavailable $down ms (from the last answer before the checkpoint to the first after the restore, curl through crest exec)" >&3
	echo "# nginx copy-on-write (issue 13): tree Pss ${pss0} KiB before, ${pss1} KiB restored ($(awk -v a="$pss1" -v b="$pss0" 'BEGIN { printf "%.2f", a / b }')x), image ${size} KiB ($(awk -v a="$size" -v b="$pss0" 'BEGIN { printf "%.2f", a / b }')x the original Pss)" >&3
	# The workers still answer the master's signals: a reload (SIGHUP)
	# replaces the 4 workers, and the new ones serve.
	"$CREST" exec ng /bin/sh -c 'kill -HUP $(cat /tmp/nginx.pid)'
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(ng_procs ng | grep -c 'worker process')" = 4 ] \
			&& [ "$(ng_procs ng | grep 'worker process')" != "$(echo "$procs" | grep 'worker process')" ] && break
		sleep 0.2
	done
	[ "$(ng_procs ng | grep 'worker process')" != "$(echo "$procs" | grep 'worker process')" ] \
		|| fail "SIGHUP to the restored master did not replace its workers: $(ng_procs ng)"
	[ "$(ng_get_wait ng a.txt "$WANT_A")" = "$WANT_A" ] || fail "the workers started by the restored master do not serve the file"
}

@test "nginx: --leave-running keeps the original serving, and the image restores under a new ID beside it" {
	ng_start ng
	local procs
	procs=$(ng_procs ng)
	cr_checkpoint ng --leave-running
	[ "$status" = 0 ] || fail "checkpoint --leave-running: $output"
	[ "$(ng_get ng a.txt)" = "$WANT_A" ] || fail "the original stopped serving after checkpoint --leave-running"
	# The copy's nginx writes its pid file and logs to the same /tmp (the
	# same host directory): that is harmless, both serve.
	cr_restore ng2
	[ "$status" = 0 ] || fail "restore as ng2: $output"
	[ "$(ng_get_wait ng2 a.txt "$WANT_A")" = "$WANT_A" ] || fail "the copy restored as ng2 does not serve the file"
	[ "$(ng_procs ng2)" = "$procs" ] || fail "ng2's nginx processes differ from the original's: '$procs', now '$(ng_procs ng2)'"
	[ "$(ng_get ng b.txt)" = "$WANT_B" ] || fail "the original stopped serving after the copy was restored"
	[ "$(cr_init ng)" != "$(cr_init ng2)" ] || fail "ng and ng2 have one init"
}

@test "nginx: a keep-alive connection is refused without --tcp-established (nginx serves on), and with it the same connection serves the next request after restore" {
	local procs from
	ng_start ng c1
	svc_send c1 'GET /a.txt HTTP/1.1\r\nHost: localhost\r\n\r\n'
	svc_expect c1 '^line 1$' 30
	procs=$(ng_procs ng)
	cr_checkpoint ng
	[ "$status" != 0 ] || fail "checkpoint with an established connection and no --tcp-established succeeded"
	[ "${#lines[@]}" = 1 ] || fail "the refusal is not one line: $output"
	[[ $output == *"--tcp-established"* ]] || fail "the refusal does not name --tcp-established: $output"
	[ "$(ng_get ng a.txt)" = "$WANT_A" ] || fail "nginx stopped serving after the refused checkpoint"
	local t0 t1 t2 t3
	t0=$(svc_ms)
	cr_checkpoint ng --tcp-established
	t1=$(svc_ms)
	[ "$status" = 0 ] || fail "checkpoint --tcp-established: $output"
	t2=$(svc_ms)
	cr_restore ng --tcp-established
	t3=$(svc_ms)
	[ "$status" = 0 ] || fail "restore --tcp-established: $output"
	[ "$(ng_procs ng)" = "$procs" ] || fail "the nginx processes differ: before '$procs', after '$(ng_procs ng)'"
	# The request goes over the keep-alive connection opened before the
	# checkpoint, which served a.txt then.
	from=$(stat -c %s "$SVC/c1.out")
	svc_send c1 'GET /b.txt HTTP/1.1\r\nHost: localhost\r\n\r\n'
	local body
	body=$(ng_body c1 "$from")
	[ "$body" = "$WANT_B" ] || fail "the restored connection got $(($(stat -c %s "$SVC/c1.out") - from)) bytes that are not the file: $(tail -c +"$((from + 1))" "$SVC/c1.out" | head -c 300) $(cat "$SVC/c1.err")"
	echo "# nginx keep-alive connection: checkpoint --tcp-established $((t1 - t0)) ms, restore $((t3 - t2)) ms, unavailable $(($(svc_ms) - t0)) ms (from the checkpoint's start to the answer on the restored connection)" >&3
	# (a.txt ends inside a line: the second status line follows its last byte)
	[ "$(grep -ao 'HTTP/1.1 200 OK' "$SVC/c1.out" | wc -l)" = 2 ] || fail "the connection holds not two answers: $(grep -ao 'HTTP/1.1 [0-9]* [A-Za-z ]*' "$SVC/c1.out")"
	# And a new connection is served too.
	[ "$(ng_get ng a.txt)" = "$WANT_A" ] || fail "after restore a new connection does not get the file"
}
