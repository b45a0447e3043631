# Shared vocabulary of crest's bats suites (load it with `load helpers`).
#
# The suites run inside the test VM (image/run-vm), as the rootless test user
# unless their first lines say `# vm-as: root`.  Everything the VM provides is
# under $CREST_TESTS (default /usr/lib/crest-tests): progs/ (the static test
# programs of tests/progs), rootfs/ (a busybox root file system),
# kselftests/<dir>/ (the kernel's selftests built with the VM kernel).
#
#   requires WHAT...        skip the test, saying why, unless each holds:
#                           root, non-root, vm, userns, cgroup2-delegated,
#                           kernel-patched, kernel-stock, cmd:NAME, file:PATH
#   as_test_user CMD...     run CMD as the test user (as is when already not root)
#   in_userns CMD...        CMD as root of a new user namespace (unshare -Ur)
#   in_userns_pidns CMD...  the same plus a new PID namespace in which CMD is
#                           PID 1 (unshare -Urpf): the user owns that PID namespace
#   only_cap_cr CMD...      CMD with CAP_CHECKPOINT_RESTORE as its only capability
#                           (all other sets cleared; use inside in_userns*)
#   without_cap_cr CMD...   CMD with every capability of the caller except
#                           CAP_CHECKPOINT_RESTORE and CAP_SYS_ADMIN (either
#                           one satisfies the kernel's checkpoint/restore checks)
#   cap_mask NAME...        the 16-hex-digit mask of capabilities named as in
#                           config.json (CAP_KILL ...), computed with capsh
#   cap_bit N               the 16-hex-digit mask of capability number N
#   cap_line SET            from $output: the value of the "CapSET:" line
#   free_pid                a PID of the caller's PID namespace not in use now
#   setup_bundle            a fresh rootless busybox bundle in $BUNDLE
#                           (crun spec --rootless), with the test programs at
#                           $CREST_TESTS/progs inside the container too
#   update_config JQ        apply a jq expression to $BUNDLE/config.json
#   config_replace OLD NEW  replace the text OLD of $BUNDLE/config.json (as
#                           the template wrote it) by NEW, in bash; 1 if absent
#   rm_existing FILE...     rm -f of those FILEs that exist (no process if none)
#   untraced FUNC ARGS...   FUNC without bats' per-command DEBUG trap (for loops)
#   nap SECS                sleep, without starting a process
#   crest_run ID [ARGS...]  `crest run` of $BUNDLE as container ID (its output
#                           in $output, its status in $status, via bats' run)
#   crest_run_detached ID [ARGS...]
#                           `crest run --detach`, with the container's stdio on
#                           a file ($BATS_TEST_TMPDIR/ID.out) rather than bats'
#                           capture pipe, which a detached container does not
#                           survive; sets $status and $output like run
#   wait_for_container N DELAY ID [STATUS]
#                           retry `crest state ID` until it reports STATUS
#                           (default running)
#   teardown_bundle         delete every container the test started
#
# Helpers never skip on their own: a test says `requires ...` first.

# bats-support and bats-assert, sourced file by file: their load.bash runs
# `dirname` once a file (15 processes), and bats sources a suite's helpers
# again for every test; under TCG that was about 0.7 s a test.
_crest_load_bats_libs() {
	local d f
	for d in ${BATS_LIB_PATH:-/usr/lib/bats}; do
		d=${d%/}
		[ -d "$d/bats-support/src" ] && [ -d "$d/bats-assert/src" ] || continue
		for f in "$d"/bats-support/src/*.bash "$d"/bats-assert/src/*.bash; do
			# shellcheck disable=SC1090
			source "$f" || return 1
		done
		return 0
	done
	bats_load_library bats-support && bats_load_library bats-assert
}
_crest_load_bats_libs || exit 1

CREST_TESTS=${CREST_TESTS:-/usr/lib/crest-tests}
PROGS=${CREST_PROGS:-$CREST_TESTS/progs}
CREST=${CREST:-crest}
TEST_UID=${CREST_TEST_UID:-1000}
TEST_GID=${CREST_TEST_GID:-1000}
CAP_CHECKPOINT_RESTORE=40

# Containers started through crest_run, deleted by teardown_bundle.
CONTAINERS=()

requires() {
	local what
	for what in "$@"; do
		case "$what" in
		root)
			[ "$EUID" = 0 ] || skip "needs root (running as uid $EUID)" ;;
		non-root)
			[ "$EUID" != 0 ] || skip "needs an unprivileged user (running as root)" ;;
		vm)
			[ -n "${CREST_VM:-}" ] || skip "runs only inside the test VM (CREST_VM unset)" ;;
		userns)
			unshare -Ur true 2>/dev/null || skip "cannot create a user namespace here" ;;
		cgroup2-delegated)
			[ -n "${CREST_CGROUP:-}" ] && [ -w "${CREST_CGROUP}/cgroup.procs" ] \
				|| skip "needs a cgroup v2 subtree delegated to this user (CREST_CGROUP)" ;;
		kernel-patched)
			[ "${CREST_KERNEL:-}" = patched ] || skip "needs the patched VM kernel (CREST_KERNEL=${CREST_KERNEL:-unset})" ;;
		kernel-stock)
			[ "${CREST_KERNEL:-}" = stock ] || skip "needs the stock VM kernel (CREST_KERNEL=${CREST_KERNEL:-unset})" ;;
		cmd:*)
			command -v "${what#cmd:}" >/dev/null || skip "needs the command ${what#cmd:}" ;;
		file:*)
			[ -e "${what#file:}" ] || skip "needs ${what#file:}" ;;
		*)
			fail "requires: unknown requirement '$what'" ;;
		esac
	done
}

as_test_user() {
	if [ "$EUID" = 0 ]; then
		setpriv --reuid="$TEST_UID" --regid="$TEST_GID" --init-groups --inh-caps=-all \
			--ambient-caps=-all -- env HOME=/home/test XDG_RUNTIME_DIR="/run/user/$TEST_UID" "$@"
	else
		"$@"
	fi
}

# The command may start with one of the helpers below (only_cap_cr ...):
# they are exported, and bash runs them inside the new namespaces.
in_userns() {
	unshare --user --map-root-user -- bash -c '"$@"' bash "$@"
}

in_userns_pidns() {
	unshare --user --map-root-user --pid --fork -- bash -c '"$@"' bash "$@"
}

# As root of a user namespace an exec keeps the bounding set as the permitted
# and effective sets, so the bounding set decides what the command holds.
only_cap_cr() {
	setpriv --inh-caps=-all --ambient-caps=-all --bounding-set=-all,+checkpoint_restore -- "$@"
}

without_cap_cr() {
	setpriv --inh-caps=-all --ambient-caps=-all \
		--bounding-set=+all,-checkpoint_restore,-sys_admin -- "$@"
}

export -f only_cap_cr without_cap_cr

cap_bit() {
	printf '%016x\n' $((1 << $1))
}

# capsh --decode of the mask of every capability lists their names in bit
# order: the position of a name is its number.  One capsh, not one per bit.
_cap_numbers() {
	[ -n "${_CAP_NUMBERS:-}" ] && return 0
	local last all
	last=$(cat /proc/sys/kernel/cap_last_cap)
	all=$(capsh --decode="$(printf '%x' $(((1 << (last + 1)) - 1)))")
	_CAP_NUMBERS=$(tr ',' '\n' <<<"${all#*=}" | awk '{ print toupper($0), NR - 1 }')
	[ "$(wc -l <<<"$_CAP_NUMBERS")" = $((last + 1)) ] \
		|| { echo "capsh named $(wc -l <<<"$_CAP_NUMBERS") capabilities, cap_last_cap is $last" >&2; return 1; }
}

cap_mask() {
	_cap_numbers || return 1
	local mask=0 cap n
	for cap in "$@"; do
		n=$(awk -v c="$cap" '$1 == c { print $2 }' <<<"$_CAP_NUMBERS")
		[ -n "$n" ] || { echo "cap_mask: unknown capability '$cap'" >&2; return 1; }
		mask=$((mask | (1 << n)))
	done
	printf '%016x\n' "$mask"
}

cap_line() {
	local line
	line=$(grep -m1 "^Cap$1:" <<<"$output") || { echo "no Cap$1 line in: $output" >&2; return 1; }
	echo "${line##*[[:space:]]}"
}

free_pid() {
	local last max pid
	last=$(cat /proc/sys/kernel/ns_last_pid)
	max=$(cat /proc/sys/kernel/pid_max)
	# Well above the last PID handed out, so that no fork reaches it meanwhile.
	pid=$((last + 500 + RANDOM % 1000))
	# Near pid_max (4096 in the VM kernel) the allocator wraps to 300 next:
	# low PIDs well behind the last one are the ones no fork reaches soon.
	[ "$pid" -lt "$max" ] || pid=$((300 + RANDOM % 500))
	while [ -e "/proc/$pid" ] && [ "$pid" -lt "$max" ]; do pid=$((pid + 1)); done
	[ "$pid" -lt "$max" ] || { echo "free_pid: no free PID below pid_max $max" >&2; return 1; }
	echo "$pid"
}

setup_bundle() {
	BUNDLE=$BATS_TEST_TMPDIR/bundle
	# Under TCG each exec costs tens of milliseconds and jq half a second:
	# the bundle (rootfs and config), plain copies of the test programs
	# are made once per suite file. Each test gets its own copy of the
	# bundle, and hard links to the programs (tens of MB that no test
	# writes: copying them took about 0.5 s a test).
	local tpl=${BATS_FILE_TMPDIR:-$BATS_TEST_TMPDIR}/bundle-template
	if [ ! -e "$tpl/done" ]; then
		rm -rf "$tpl"
		mkdir -p "$tpl/progs" "$tpl/bundle"
		cp -a "$CREST_TESTS/rootfs" "$tpl/bundle/rootfs"
		mkdir -p "$tpl/bundle/rootfs$CREST_TESTS" "$tpl/bundle/rootfs/tmp"
		# Plain copies: file capabilities (security.capability) are not carried over.
		cp "$PROGS"/* "$tpl/progs/"
		(cd "$tpl/bundle" && crun spec --rootless)
		jq '.process.terminal = false | .root.path = "rootfs" | .root.readonly = false' \
			"$tpl/bundle/config.json" >"$tpl/config.json.tmp" && mv "$tpl/config.json.tmp" "$tpl/bundle/config.json"
		: >"$tpl/done"
	fi
	[ ! -e "$BUNDLE" ] || rm -rf "$BUNDLE"
	cp -a "$tpl/bundle" "$BUNDLE"
	cp -al "$tpl/progs" "$BUNDLE/rootfs$CREST_TESTS/progs"
}

# json_str JSON KEY: the value of the first "KEY": "string" or "KEY": number
# of JSON, without running jq (for crest state's flat output).
json_str() {
	local re='"'"$2"'"[[:space:]]*:[[:space:]]*"?([^",}[:space:]]*)'
	[[ $1 =~ $re ]] || return 1
	printf '%s\n' "${BASH_REMATCH[1]}"
}

update_config() {
	local tmp=$BUNDLE/config.json.tmp
	jq "$@" "$BUNDLE/config.json" >"$tmp" && mv "$tmp" "$BUNDLE/config.json"
}

# bats 1.8's DEBUG trap, run before every command of a test and of the
# functions it calls, normalises a Windows path, copies three arrays and
# walks the call stack to build the stack trace it prints should the test
# fail: 2.5 ms a command under TCG, more than half the time of a container
# test. This one only keeps the trap's raw stacks (line numbers, files,
# functions), in two slots used in turn so that the one before is kept too,
# and builds bats' stack traces from them when bats reads them: in its ERR
# trap and when it reports a failure. The traces are those bats would have
# built (the same frames, the same rules), so failure reports are
# unchanged (checked on failures in tests, setup, teardown and nested
# functions). Host, 9,000 commands five functions deep: 1.16 -> 0.27 s;
# VM, eleven checkpoint-lost cases: 2.3 -> 1.7 s a case.
# Only for the bats it was written against (Debian 12's), whose internals
# it uses; any other keeps its own.
if [[ ${BATS_VERSION:-} == 1.8.* ]] &&
	declare -F bats_emit_trace bats_error_trap bats_get_failure_stack_trace bats_check_status_from_trap >/dev/null; then
	_dbg_n=0 _dbg_at=-2
	_dbg_l0=() _dbg_s0=() _dbg_f0=() _dbg_l1=() _dbg_s1=() _dbg_f1=()
	# Not in bats' library nor in the functions below, which replace some
	# of its own; not while interrupted. Then the three stacks, into the
	# slot not used last time. bats excludes by directory the paths of
	# BATS_DEBUG_EXCLUDE_PATHS, which bats 1.8 sets before each test (after
	# the test file is loaded) to its lib/ and libexec/ unless the user's
	# environment or --trace adds more: in one case for those two, else in
	# bats' loop.
	_dbg_x0=$BATS_ROOT/lib/ _dbg_x1=$BATS_ROOT/libexec/ _dbg_fast=1
	for _dbg_p in ${BATS_DEBUG_EXCLUDE_PATHS[@]+"${BATS_DEBUG_EXCLUDE_PATHS[@]}"}; do
		[[ $_dbg_p == "$_dbg_x0" || $_dbg_p == "$_dbg_x1" ]] || _dbg_fast=
	done
	((${BATS_TRACE_LEVEL:-0} == 0)) || _dbg_fast=
	unset _dbg_p
	bats_debug_trap() {
		if [ -n "$_dbg_fast" ]; then
			case ${1%/*}:${FUNCNAME[1]-} in
			"$_dbg_x0"* | "$_dbg_x1"* | *:_dbg_* | \
				*:bats_error_trap | *:bats_get_failure_stack_trace) return 0 ;;
			esac
		else
			local path
			for path in "${BATS_DEBUG_EXCLUDE_PATHS[@]}"; do
				[[ ${1%/*} != "$path"* ]] || return 0
			done
			case ${FUNCNAME[1]-} in _dbg_* | bats_error_trap | bats_get_failure_stack_trace) return 0 ;; esac
		fi
		[[ ${BATS_INTERRUPTED-NOTSET}${BATS_TIMED_OUT-NOTSET} == NOTSETNOTSET ]] || return 0
		if ((++_dbg_n & 1)); then
			_dbg_l1=("${BASH_LINENO[@]}") _dbg_s1=("${BASH_SOURCE[@]}") _dbg_f1=("${FUNCNAME[@]}")
		else
			_dbg_l0=("${BASH_LINENO[@]}") _dbg_s0=("${BASH_SOURCE[@]}") _dbg_f0=("${FUNCNAME[@]}")
		fi
		((${BATS_TRACE_LEVEL:-0} == 0)) || bats_emit_trace
	}
	# _dbg_trace VAR SLOT: into array VAR, the trace bats_capture_stack_trace
	# would have built in the trap that filled SLOT (its frame i is the
	# slot's i - 1: the slot was taken in the trap, not one call deeper).
	_dbg_trace() {
		local -n _dbg_t=$1 _dbg_l=_dbg_l$2 _dbg_s=_dbg_s$2 _dbg_f=_dbg_f$2
		local i fn
		_dbg_t=()
		for ((i = 1; i < ${#_dbg_f[@]}; i++)); do
			fn=${_dbg_f[i]}
			_dbg_t+=("${_dbg_l[i - 1]} $fn ${_dbg_s[i]:-$BATS_TEST_SOURCE}")
			case "$fn" in
			"${BATS_TEST_NAME-}" | setup | teardown | setup_file | teardown_file | setup_suite | teardown_suite) break ;;
			esac
			[[ ${_dbg_s[i + 1]:-} != *bats-exec-file || $fn != source ]] || break
		done
	}
	# _dbg_sync: bats' LAST and LASTLAST variables as its own trap would
	# have left them after the traps since the last sync.
	_dbg_sync() {
		local cur=$((_dbg_n & 1)) since=$((_dbg_n - _dbg_at))
		((since > 0)) || return 0
		if ((since == 1)); then
			BATS_DEBUG_LASTLAST_STACK_TRACE=(${BATS_DEBUG_LAST_STACK_TRACE[@]+"${BATS_DEBUG_LAST_STACK_TRACE[@]}"})
		else
			_dbg_trace BATS_DEBUG_LASTLAST_STACK_TRACE $((1 - cur))
		fi
		_dbg_trace BATS_DEBUG_LAST_STACK_TRACE "$cur"
		local -n _dbg_cl=_dbg_l$cur _dbg_cs=_dbg_s$cur
		BATS_DEBUG_LAST_LINENO=(${_dbg_cl[@]+"${_dbg_cl[@]}"})
		BATS_DEBUG_LAST_SOURCE=(${_dbg_cs[@]+"${_dbg_cs[@]}"})
		_dbg_at=$_dbg_n
	}
	bats_error_trap() {
		bats_check_status_from_trap
		_dbg_sync
		if [[ "${BASH_LINENO[*]}" = "${BATS_DEBUG_LAST_LINENO[*]:-}" &&
			"${BASH_SOURCE[*]}" = "${BATS_DEBUG_LAST_SOURCE[*]:-}" &&
			-z "$BATS_DEBUG_LAST_STACK_TRACE_IS_VALID" ]]; then
			BATS_DEBUG_LAST_STACK_TRACE=(${BATS_DEBUG_LASTLAST_STACK_TRACE[@]+"${BATS_DEBUG_LASTLAST_STACK_TRACE[@]}"})
		fi
		BATS_DEBUG_LAST_STACK_TRACE_IS_VALID=1
	}
	bats_get_failure_stack_trace() {
		_dbg_sync
		local -n _dbg_out=$1
		if [[ -n "${BATS_DEBUG_LAST_STACK_TRACE_IS_VALID:-}" ]]; then
			_dbg_out=(${BATS_DEBUG_LAST_STACK_TRACE[@]+"${BATS_DEBUG_LAST_STACK_TRACE[@]}"})
		else
			_dbg_out=(${BATS_DEBUG_LASTLAST_STACK_TRACE[@]+"${BATS_DEBUG_LASTLAST_STACK_TRACE[@]}"})
		fi
	}
fi

# untraced CMD...: CMD (a function) without bats' DEBUG trap, which bats
# runs before every command of a test and its functions (set -T) to keep a
# stack trace: about a millisecond a command under TCG, which made a helper
# that loops over /proc in bash slower than the processes it replaced.
# Failures inside CMD are still failures; only their line is not traced.
untraced() {
	local -
	set +T
	"$@"
}

# nap SECS: sleep without starting a process: a read that times out on a
# pipe of this shell's own, which never has data (sleep(1) costs tens of
# milliseconds under TCG, more than the naps of a polling loop).
nap() {
	[ -n "${_NAP_FD:-}" ] || exec {_NAP_FD}<> <(:)
	read -r -t "$1" -u "$_NAP_FD" _ || :
}

# rm_existing FILE...: rm -f of those FILEs that exist; no process started
# when none does (under TCG each one costs tens of milliseconds).
rm_existing() {
	local f todo=()
	for f; do
		[ ! -e "$f" ] && [ ! -L "$f" ] || todo+=("$f")
	done
	[ ${#todo[@]} = 0 ] || rm -f -- "${todo[@]}"
}

# config_replace OLD NEW: replace the text OLD of the bundle's config.json
# (as the template's jq wrote it) by NEW, in bash; returns 1, changing
# nothing, where OLD is not there (the caller then asks jq). Under TCG a jq
# costs about half a second, and the checkpoint suites change the config
# twice a test.
config_replace() {
	local cfg
	cfg=$(<"$BUNDLE/config.json") || return 1
	[[ $cfg == *"$1"* ]] || return 1
	printf '%s\n' "${cfg/"$1"/"$2"}" >"$BUNDLE/config.json"
}

crest_run() {
	local id=$1
	shift
	CONTAINERS+=("$id")
	run "$CREST" run "$@" --bundle "$BUNDLE" "$id"
}

crest_run_detached() {
	local id=$1 log
	shift
	CONTAINERS+=("$id")
	log=$BATS_TEST_TMPDIR/$id.out
	status=0
	"$CREST" run --detach "$@" --bundle "$BUNDLE" "$id" </dev/null >"$log" 2>&1 || status=$?
	output=$(cat "$log")
}

wait_for_container() {
	local attempts=$1 delay=$2 id=$3 want=${4:-running} i state
	for ((i = 0; i < attempts; i++)); do
		state=$("$CREST" state "$id" 2>/dev/null) && state=$(json_str "$state" status) || state=
		[ "$state" = "$want" ] && return 0
		sleep "$delay"
	done
	echo "container $id not $want after $attempts tries (last: ${state:-no state})" >&2
	return 1
}

# teardown_bundle [PATH...]: also removes PATHs (one rm for all).
teardown_bundle() {
	local id
	local -A seen=()
	# Once each: a restore under the same ID lists it again, and a delete
	# costs a tenth of a second under TCG even when there is nothing left.
	for id in ${CONTAINERS[@]+"${CONTAINERS[@]}"}; do
		[ -z "${seen[$id]:-}" ] || continue
		seen[$id]=1
		timeout 120 "$CREST" delete --force "$id" >/dev/null 2>&1 || true
	done
	CONTAINERS=()
	# Each test's bundle is a copy of the rootfs with every test program,
	# tens of MB on the VM's /tmp (a tmpfs of half its memory): it goes with
	# its test, or a long suite fills /tmp ("No space left on device").
	local gone=()
	[ -z "${BUNDLE:-}" ] || gone+=("$BUNDLE")
	for id; do [ -z "$id" ] || gone+=("$id"); done
	[ ${#gone[@]} = 0 ] || rm -rf "${gone[@]}" 2>/dev/null || true
}

# --- MSR suites (seeds-msr-*.bats) ---------------------------------------------

# IA32_SYSENTER_CS: QEMU's TCG emulates it, and the suites only ever write back
# the value they read, which leaves the machine as it was.
MSR=0x174

# TAINT_CPU_OUT_OF_SPEC ('S', bit 2): what a write through /dev/cpu/N/msr adds.
assert_taint_cpu_out_of_spec() {
	local t
	t=$(cat /proc/sys/kernel/tainted)
	[ $((t >> 2 & 1)) = 1 ] || fail "kernel not tainted CPU_OUT_OF_SPEC after an MSR write (tainted=$t)"
}
