# Vocabulary of the checkpoint suites (load it after helpers: `load helpers`,
# `load checkpoint-helpers`).
#
#   cr_setup                  a busybox bundle (setup_bundle) whose process
#                             runs in /tmp, a writable directory of the rootfs
#   cr_run ID ARGS...         `crest run -d` of $BUNDLE with process.args
#                             ARGS; stdio is /dev/null (a container's stdio
#                             must be restorable), crest's messages go to
#                             $CR_LOG (crest --log)
#   cr_checkpoint ID [OPT...] `crest checkpoint --image-path $IMAGE OPT... ID`
#                             through bats' run
#   cr_restore ID [OPT...]    `crest restore -d --image-path $IMAGE -b $BUNDLE
#                             OPT... ID` through bats' run, stdio /dev/null
#   cr_init ID                the host PID of the container's init
#   cr_tasks ID               host PIDs of every live (not zombie) task in the
#                             container's PID namespace
#   cr_ns_pids ID             "NSPID COMM" of each of them, sorted: what the
#                             container sees
#   cr_caps ID                "NSPID CapInh CapPrm CapEff CapBnd CapAmb" of each
#   cr_gone ID                assert: no crun container, no crest state, no task
#   task_untouched PID        the task runs (R, S or D: not stopped, not in a
#                             tracing stop) with no tracer; else fails and
#                             prints "state X, tracer Y"
#   image_sum DIR             one SHA-256 over every file of DIR (name and bytes)
#   image_stamp DIR           every file's name, size, inode, mtime and ctime
#                             (cheap: reads no contents)
#   in_rootfs PATH            the host path of PATH inside the container
#   wait_file FILE SECS       wait until FILE exists
#   zdtm_run ID PROG          run zdtm-PROG as the container's init, wait for
#                             its READY file (protocol: tests/README.md)
#   zdtm_verdict ID           SIGTERM the init, wait for RESULT, assert PASS
#   cr_procstate ID FILE      what /proc shows of every live task of the
#                             container (tests/progs/procstate, in the
#                             tree's own PIDs) into FILE; capability 40 of
#                             the bounding set left out where
#                             bnd_drop_probe says refused (the known gap)
#   batch_run DIR... -- COMMAND...
#                             once per suite file: COMMAND (zdtm-batch, or
#                             zdtm-lost --batch) as a container's init, one
#                             checkpoint and restore of the whole tree;
#                             each DIR's result (DIR under the container's
#                             /tmp: a case's, a program's) kept for
#                             batch_points
#   batch_announce DIR...     the test will report a point per DIR (before
#                             batch_run: a cycle that fails leaves the
#                             announced points missing, one failure)
#   batch_points FORMAT DIR...
#                             each DIR's own verdict in the batch as a test
#                             point of its own, named by printf FORMAT DIR
#                             and " (BATCH_NOTE[DIR])" when the suite's
#                             table has one (a KNOWN line, or a skip.DIR
#                             file: a skip that names it); assert: all of
#                             them passed
#   batch_point               assert: the batch's cycle went through, /proc
#                             the same after it
#   cr_procstate_same ID FILE [ERE]
#                             assert: cr_procstate of the container now is
#                             FILE (the differing lines on failure), lines
#                             that match ERE (grep -E) left out of both: what
#                             the program itself changes once it runs (the
#                             caller checks that apart)
#   bnd_drop_probe            "allowed", "refused" or "unknown: REASON": does
#                             this kernel let a task holding
#                             CAP_CHECKPOINT_RESTORE but not CAP_SETPCAP drop
#                             it from its bounding set (asked by trying)

IMAGE=
CR_LOG=

cr_setup() {
	setup_bundle
	config_replace '"cwd": "/",' '"cwd": "/tmp",' || update_config '.process.cwd = "/tmp"'
	[ -d "$BUNDLE/rootfs/tmp" ] || mkdir -p "$BUNDLE/rootfs/tmp"
	IMAGE=$BATS_TEST_TMPDIR/image
	CR_LOG=$BATS_TEST_TMPDIR/crest.log
}

# _json_array VAR ARGS...: VAR = the JSON array of the strings ARGS (in
# bash: jq's --args would take an argument such as -c for its own option).
_json_array() {
	local -n _out=$1
	local a sep=
	shift
	_out='['
	for a in "$@"; do
		a=${a//\\/\\\\}
		a=${a//\"/\\\"}
		a=${a//$'\n'/\\n}
		a=${a//$'\t'/\\t}
		[[ $a != *[$'\001'-$'\037']* ]] || fail "_json_array: a control character in '$a'"
		_out+="$sep\"$a\""
		sep=,
	done
	_out+=']'
}

cr_run() {
	local id=$1 args
	shift
	_json_array args "$@"
	config_replace $'"args": [\n      "sh"\n    ],' "\"args\": $args," || update_config ".process.args = $args"
	CONTAINERS+=("$id")
	rm_existing "$BATS_TEST_TMPDIR/$id.pid"
	"$CREST" --log "$CR_LOG" run -d --pid-file "$BATS_TEST_TMPDIR/$id.pid" --bundle "$BUNDLE" "$id" </dev/null >/dev/null 2>&1 \
		|| fail "crest run -d $id failed: $(tail -3 "$CR_LOG" 2>/dev/null)"
	# crest run -d returns once the init runs: its PID file names it (a
	# `crest state` costs about 0.35 s under TCG).
	local pid
	pid=$(_cr_pid "$id") || fail "crest run -d $id: no init in its PID file: $(tail -3 "$CR_LOG" 2>/dev/null)"
}

cr_checkpoint() {
	local id=$1
	shift
	run "$CREST" checkpoint --image-path "$IMAGE" "$@" "$id"
}

cr_restore() {
	local id=$1
	shift
	CONTAINERS+=("$id")
	: >"$CR_LOG"
	rm_existing "$BATS_TEST_TMPDIR/$id.pid"
	run "$CREST" --log "$CR_LOG" restore -d --pid-file "$BATS_TEST_TMPDIR/$id.pid" --image-path "$IMAGE" \
		--bundle "$BUNDLE" "$@" "$id" </dev/null >/dev/null 2>&1
	output=$(<"$CR_LOG")
}

cr_init() {
	local st
	st=$("$CREST" state "$1") || return 1
	json_str "$st" pid
}

# _proc_state PID: PROC_STATE = the task's state letter (field 3 of
# /proc/PID/stat); 1 if there is no such task. bash's read only: no process
# started.
_proc_state() {
	local l
	{ read -r l <"/proc/$1/stat"; } 2>/dev/null || return 1
	l=${l##*) }
	PROC_STATE=${l%% *}
}

# _cr_pid ID: the init's PID as the last `crest run -d` or `crest restore
# -d` of cr_run or cr_restore wrote it, if that process is there (not a
# zombie); else what `crest state` says. For the helpers' own bookkeeping;
# a test's checks of the container's init use cr_init.
_cr_pid() {
	local f=$BATS_TEST_TMPDIR/$1.pid pid
	if [ -s "$f" ]; then
		# bash's read only: no process started
		# crun writes the PID without a newline: read then fails, with
		# the PID read.
		read -r pid <"$f" || true
		if [[ $pid =~ ^[0-9]+$ ]] && _proc_state "$pid" && [ "$PROC_STATE" != Z ]; then
			echo "$pid"
			return 0
		fi
	fi
	cr_init "$1"
}

# _status_fields /proc/PID: ST_NAME, ST_STATE, ST_PID, ST_NS (the innermost
# PID), ST_CAPS ("CapInh CapPrm CapEff CapBnd CapAmb ") and ST_EUID from its
# status; 1 if the task is gone. Read whole, by one mapfile: bash's read
# seeks back after each line, and a seek has the kernel print the file
# anew, which may have changed meanwhile (lines were lost).
_status_fields() {
	local l
	local -a lines
	ST_NAME= ST_STATE= ST_PID= ST_NS= ST_CAPS= ST_EUID=
	{ mapfile -t lines <"$1/status"; } 2>/dev/null || return 1
	for l in "${lines[@]}"; do
		case $l in
		Name:*) ST_NAME=${l#*$'\t'} ;;
		State:*) ST_STATE=${l#*$'\t'} ;;
		Pid:*) ST_PID=${l#*$'\t'} ;;
		NSpid:*) ST_NS=${l##*$'\t'} ;;
		# real, effective, saved, fs: the effective one, as pgrep -u
		Uid:*) l=${l#*$'\t'} l=${l#*$'\t'} ST_EUID=${l%%$'\t'*} ;;
		CapInh:* | CapPrm:* | CapEff:* | CapBnd:* | CapAmb:*) ST_CAPS+="${l#*$'\t'} " ;;
		esac
	done
}

# _task_table ID [KEY]: "PID<TAB>NSPID<TAB>CAPS<TAB>NAME" for every live
# (not zombie) task in the PID namespace of container ID's init: host PID,
# the innermost PID, "CapInh CapPrm CapEff CapBnd CapAmb " and the name,
# sorted by host PID, or by NSPID with KEY ns. In bash alone: under TCG each
# process started costs tens of milliseconds (pgrep, cat, awk and sort took
# about 0.4 s a call).
_task_table() {
	untraced _task_rows "$@"
}

_task_rows() {
	local init ref p k key=${2:-host} try
	local -a rows=()
	# A task that ends while it is looked at is skipped, never the end of
	# the listing (bats' errexit would end it there, silently: the caller
	# reads the output of a pipe). Run under untraced: `set +e` is local.
	set +e
	init=$(_cr_pid "$1") || return 1
	[ -n "$init" ] || return 1
	ref=/proc/$init/ns/pid
	for try in 1 2; do
		_task_scan
		# The init itself is in its namespace: missing, the listing is
		# not to be trusted; once more, then said.
		[ -z "${rows[*]}" ] || break
		_proc_state "$init" && [ "$PROC_STATE" != Z ] || return 0
		[ "$try" = 1 ] || echo "_task_table $1: init $init is not in the listing of its own namespace" >&2
	done
	[ ${#rows[@]} = 0 ] || printf '%s\n' "${rows[@]}"
}

# _task_scan: ROWS (of the caller, _task_rows) from every task in the
# namespace REF names.
_task_scan() {
	rows=()
	[ -e "$ref" ] || return 0
	for p in /proc/[0-9]*; do
		# -ef: the same namespace (stat follows the ns links)
		[[ $p/ns/pid -ef $ref ]] || continue
		_status_fields "$p" || continue
		[ -n "$ST_PID" ] && [ -n "$ST_NS" ] && [[ $ST_STATE != Z* ]] || continue
		if [ "$key" = ns ]; then k=$ST_NS; else k=$ST_PID; fi
		# an indexed array lists its elements by index: numeric order
		rows[k]=$ST_PID$'\t'$ST_NS$'\t'$ST_CAPS$'\t'$ST_NAME
	done
}

# Zombies are not tasks of the tree (the engine's finishing helper stays one
# until the restored init reaps it, which a program may never do).
cr_tasks() {
	local p _
	_task_table "$1" | while IFS=$'\t' read -r p _; do echo "$p"; done
}

cr_ns_pids() {
	local _ ns caps name
	_task_table "$1" ns | while IFS=$'\t' read -r _ ns caps name; do echo "$ns $name"; done
}

cr_caps() {
	local _ ns caps name
	_task_table "$1" ns | while IFS=$'\t' read -r _ ns caps name; do echo "$ns $caps"; done
}

task_untouched() {
	local st
	st=$(awk '/^State:/ { s = $2 } /^TracerPid:/ { t = $2 } END { print s " " t }' "/proc/$1/status" 2>/dev/null)
	case "$st" in [RSD]" 0") return 0 ;; esac
	echo "state ${st% *}, tracer ${st#* }"
	return 1
}

cr_gone() {
	local id=$1
	run "$CREST" state "$id"
	[ "$status" != 0 ] || fail "container $id still exists: $output"
	[ ! -e "$XDG_RUNTIME_DIR/crest/containers/$id" ] || fail "crest state of $id is left behind"
	local left
	left=$(untraced _restoring_left)
	[ -z "$left" ] || fail "a crest-restoring process is left behind: PID $left"
	return 0
}

# _restoring_left: the PIDs of this user's live (not zombie: one waiting for
# init to reap it is not a process left running) crest-restoring tasks; in
# bash, for pgrep costs about 0.1 s under TCG.
_restoring_left() {
	local p comm out=
	for p in /proc/[0-9]*; do
		{ read -r comm <"$p/comm"; } 2>/dev/null || continue
		[ "$comm" = crest-restoring ] || continue
		_status_fields "$p" || continue
		[ "$ST_EUID" = "$EUID" ] && [[ $ST_STATE != Z* ]] && out+="${out:+ }${p#/proc/}"
	done
	echo "$out"
}

# image_stamp DIR: the name, size, inode, mtime and ctime of every file of
# DIR: any write, truncation, replacement or removal changes it, without
# reading the (large) memory images.
image_stamp() {
	# One process: the listing itself is the stamp (in the directory's
	# order, which only a change to it can alter).
	find "$1" -type f -printf '%P %s %i %T@ %C@\n'
}

image_sum() {
	(cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-64)
}

in_rootfs() {
	echo "$BUNDLE/rootfs$1"
}

wait_file() {
	local i
	for ((i = 0; i < $2 * 20; i++)); do
		[ -e "$1" ] && return 0
		nap 0.05
	done
	return 1
}

zdtm_run() {
	local id=$1 prog=$2
	rm_existing "$(in_rootfs /tmp/ready)" "$(in_rootfs /tmp/result)"
	cr_run "$id" "$PROGS/zdtm-$prog" /tmp/ready /tmp/result
	wait_file "$(in_rootfs /tmp/ready)" 120 \
		|| fail "zdtm-$prog never became ready: $(cat "$(in_rootfs /tmp/result)" 2>/dev/null)"
}

# _has_verdict FILE: a line of FILE starts with PASS, FAIL or ERROR (bash's
# read only: this is polled).
_has_verdict() {
	local l
	{
		while IFS= read -r l; do
			case "$l" in PASS* | FAIL* | ERROR*) return 0 ;; esac
		done <"$1"
	} 2>/dev/null
	return 1
}

zdtm_verdict() {
	local id=$1 result
	result=$(in_rootfs /tmp/result)
	# The init is the test program itself: a signal from the host reaches it.
	local init
	init=$(_cr_pid "$id")
	kill -TERM "$init"
	local i
	for ((i = 0; i < 2400; i++)); do
		_has_verdict "$result" && break
		nap 0.05
	done
	# The init writes its verdict last and exits: once it is gone (or a
	# zombie) every line is there. At most 3 s more, as a delay, not a check.
	for ((i = 0; i < 150; i++)); do
		_proc_state "$init" && [ "$PROC_STATE" != Z ] || break
		nap 0.02
	done
	[ -e "$result" ] || fail "no verdict within 120 s of SIGTERM"
	# Read once, matched in bash (each grep costs tens of ms under TCG).
	local text l pass= bad= known= bnd=
	text=$(<"$result")
	while IFS= read -r l; do
		case "$l" in
		PASS*) pass=1 ;;
		FAIL* | ERROR*) bad=1 ;;
		"KNOWN: bnd"*) bnd=${bnd:-$l} known=${known:-$l} ;;
		KNOWN*) known=${known:-$l} ;;
		esac
	done <<<"$text"
	[ -z "$bad" ] && [ -n "$pass" ] || fail "verdict: $text"
	# A documented gap (docs/engine.md) is counted as a skip that names it,
	# never as a pass. Capability 40 left in the bounding set is one only
	# where the kernel refuses the drop: where it allows it (the patched
	# kernel), the same line is a regression.
	if [ -n "$bnd" ]; then
		local probe
		probe=$(bnd_drop_probe)
		[ "$probe" = refused ] || fail "capability 40 stayed in the bounding set, but the kernel's drop is $probe: $bnd"
	fi
	[ -z "$known" ] || skip "known gap: ${known#KNOWN: }"
}

bnd_drop_probe() {
	# Its exit status says the same as its word (1: refused): only the word
	# counts, or bats' errexit would end the caller at `x=$(bnd_drop_probe)`
	# on a kernel that refuses (the stock one).
	"$PROGS/zdtm-caps" --probe-bnd-drop || true
}

cr_procstate() {
	local ign=
	[ -n "${_CR_BND_PROBE:-}" ] || _CR_BND_PROBE=$(bnd_drop_probe)
	[ "$_CR_BND_PROBE" != refused ] || ign=0000010000000000
	# shellcheck disable=SC2046 # a list of PIDs
	PROCSTATE_BND_IGNORE=$ign "$PROGS/procstate" $(cr_tasks "$1") >"$2"
	[ -s "$2" ] || fail "cr_procstate $1: nothing read of its tasks"
}

cr_procstate_same() {
	local now=$2.now d left=
	cr_procstate "$1" "$now"
	if [ -n "${3:-}" ]; then
		left="; lines matching $3 left out"
		grep -Ev -- "$3" "$2" >"$2.kept" || true
		grep -Ev -- "$3" "$now" >"$now.kept" || true
		d=$(diff "$2.kept" "$now.kept")
	else
		d=$(diff "$2" "$now")
	fi || fail "/proc shows another state than before the checkpoint (tests/progs/procstate; < before, > after$left):
$d"
}

# --- batches: many cases in one container ----------------------------------
# A container costs about 2 s under TCG (crun, the checkpoint and restore's
# own start); most cases' state a fraction of that. Batched cases run as
# children of one init (each in its own directory of /tmp, with its own
# ready and result files), through one cycle; the test that runs it first
# fails at the step that does. The outcome, in $BATCH_DIR: err (why the
# cycle did not finish: every batched test fails with it), procdiff (what
# /proc showed otherwise after restore: batch_point's failure), DIR (each
# one's result lines).
BATCH_DIR=${BATS_FILE_TMPDIR:-/tmp}/batch
declare -gA BATCH_NOTE=()

batch_run() {
	[ ! -e "$BATCH_DIR/done" ] || return 0
	local dirs=() d id="batch-$$" result init i now=$BATS_TEST_TMPDIR/proc.now
	while [ "$1" != -- ]; do dirs+=("$1"); shift; done
	shift
	mkdir -p "$BATCH_DIR"
	echo "the batch's cycle stopped in the test that ran it (\"$BATS_TEST_DESCRIPTION\"): its output says where" >"$BATCH_DIR/err"
	: >"$BATCH_DIR/done"
	result=$(in_rootfs /tmp/result)
	rm_existing "$(in_rootfs /tmp/ready)" "$result"
	cr_run "$id" "$@"
	wait_file "$(in_rootfs /tmp/ready)" 240 || fail "the batch never became ready: $(cat "$result" 2>/dev/null)"
	cr_procstate "$id" "$BATS_TEST_TMPDIR/proc"
	cr_checkpoint "$id" --file-locks
	[ "$status" = 0 ] || fail "checkpoint of the batch failed: $output"
	cr_gone "$id"
	cr_restore "$id"
	[ "$status" = 0 ] || fail "restore of the batch failed: $output"
	cr_procstate "$id" "$now"
	diff "$BATS_TEST_TMPDIR/proc" "$now" >"$BATCH_DIR/procdiff" || true
	init=$(_cr_pid "$id")
	kill -TERM "$init"
	for ((i = 0; i < 2400; i++)); do
		_has_verdict "$result" && break
		nap 0.05
	done
	_has_verdict "$result" || fail "no verdict of the batch within 120 s of SIGTERM"
	# The init writes its verdict once every child has ended.
	for d in "${dirs[@]}"; do
		cp "$(in_rootfs "/tmp/$d/result")" "$BATCH_DIR/$d" 2>/dev/null || true
	done
	: >"$BATCH_DIR/err"
}

batch_point() {
	[ ! -s "$BATCH_DIR/err" ] || fail "$(cat "$BATCH_DIR/err")"
	[ ! -s "$BATCH_DIR/procdiff" ] || fail "/proc shows another state than before the checkpoint (tests/progs/procstate; < before, > after):
$(cat "$BATCH_DIR/procdiff")"
}

# Points of one test (image/vm-suites reads the "# crest-point" lines of
# the TAP stream; bats itself shows them as comments): the cycle is shared,
# each case's verdict its own, and without a bats test per case (each
# costs about 0.4 s under TCG in bats itself).
batch_announce() {
	echo "# crest-points: $#" >&3
}

# _batch_judge DIR: JUDGED ok, skip or fail, WHY the reason.
_batch_judge() {
	local d=$1 l text pass= bad= known=
	JUDGED=fail WHY=
	if [ -s "$BATCH_DIR/err" ]; then
		WHY=$(<"$BATCH_DIR/err")
		return
	fi
	if [ -e "$BATCH_DIR/skip.$d" ]; then
		JUDGED=skip WHY=$(<"$BATCH_DIR/skip.$d")
		return
	fi
	[ -e "$BATCH_DIR/$d" ] || {
		WHY="no verdict in the batch"
		return
	}
	text=$(<"$BATCH_DIR/$d")
	while IFS= read -r l; do
		case "$l" in
		PASS*) pass=1 ;;
		FAIL* | ERROR*) bad=1 ;;
		KNOWN*) known=${known:-$l} ;;
		esac
	done <<<"$text"
	if [ -n "$bad" ] || [ -z "$pass" ]; then
		WHY="verdict: $text"
	elif [ -n "$known" ]; then
		JUDGED=skip WHY="known gap: ${known#KNOWN: }"
	else
		JUDGED=ok
	fi
}

batch_points() {
	local fmt=$1 d name bad=0
	shift
	for d; do
		_batch_judge "$d"
		WHY=${WHY//$'\n'/ | }
		# shellcheck disable=SC2059 # the format is the caller's
		name=$(printf "$fmt" "$d")
		[ -z "${BATCH_NOTE[$d]:-}" ] || name+=" (${BATCH_NOTE[$d]})"
		case "$JUDGED" in
		ok) echo "# crest-point: ok $name" >&3 ;;
		skip) echo "# crest-point: ok $name # skip $WHY" >&3 ;;
		*)
			echo "# crest-point: not ok $name: $WHY" >&3
			bad=$((bad + 1))
			;;
		esac
	done
	[ "$bad" = 0 ] || fail "$bad of the batch's $# cases failed (their points above)"
}
