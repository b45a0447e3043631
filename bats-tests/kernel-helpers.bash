# Shared checks of the kernel suites (kernel-*.bats), loaded after helpers:
#
#   load helpers
#   load kernel-helpers
#
# kernel-patched.bats and kernel-stock.bats run the same procedures below on
# the two kernels and assert the new and the old behaviour respectively, so
# that the difference between them is what the series in kernel/patches/
# changes.  kernel-selftests.bats runs the selftests of the series.
#
#   kernel_setup            per-test setup: a scratch directory $KTMP that the
#                           test user can read
#   run_kselftest WHO BIN [SKIPS]
#                           run $KSELFTESTS/BIN as WHO (root or test) and check
#                           its TAP: a plan, as many results, no "not ok",
#                           exactly SKIPS skips (default 0), each giving a
#                           reason, exit status 0; the output is shown on failure
#   kernel_config_has OPT   the running kernel was built with OPT=y
#   map_files_in_userns CAPS
#                           as the test user, in a new user namespace, with
#                           only CAPS (setpriv bounding-set syntax), open the
#                           map_files link of one of its own file mappings
#   exe_link_change WHO EXE set the exe link (PR_SET_MM_MAP, exe_fd) to EXE as
#                           root with all capabilities (WHO=all) or without
#                           CAP_CHECKPOINT_RESTORE and CAP_SYS_ADMIN (WHO=nocap)
#   exe_change_record EXE   wait up to 3 s for the AUDIT_EXE_CHANGE record of a
#                           change to EXE in the kernel log; print it
#   no_exe_change_record EXE
#                           after a marker written to the log: no such record
#   msr_write_back          write MSR $MSR with the value it holds
#   memfile_checkpoint      as the test user in unshare -Urpf, with no file
#                           capability on crest: run progs/memfile (a memfd,
#                           shared anonymous memory, a deleted file mapped),
#                           checkpoint it and, if that worked, restore it.
#                           Prints "restored", or "refused: <crest's error>
#                           (lines: N)" and "untouched" if the tree runs on
#                           untraced; then "verdict: " and the program's own
#                           check of its memory after SIGTERM
#   tcp_repair MASK         as the test user, in a new user and network
#                           namespace, keep only the capabilities of MASK (hex)
#                           and try TCP_REPAIR on a connected loopback socket;
#                           prints CapEff and "TCP_REPAIR ok|EPERM"
#   bset_drop WHO MASK CAP...
#                           as the test user in a new user namespace
#                           (WHO=userns) or as root in the initial one
#                           (WHO=root), keep only the capabilities of MASK
#                           (hex), try PR_CAPBSET_DROP of each CAP (number),
#                           then execute a program as root there; prints
#                           CapEff, "drop CAP ok|EPERM" per CAP, CapBnd, and
#                           the permitted set after the exec ("exec CapPrm:")

KSELFTESTS=$CREST_TESTS/kselftests
AUDIT_EXE_CHANGE=1340
CAP_KILL=5
CAP_SETPCAP=8
CAP_NET_ADMIN=12
CAP_SYS_ADMIN=21

kernel_setup() {
	KTMP=$(mktemp -d /tmp/kernel-suite.XXXXXX)
	chmod 755 "$KTMP"
}

kernel_teardown() {
	[ -z "${KTMP:-}" ] || rm -rf "$KTMP"
}

run_kselftest() {
	local who=$1 name=$2 want_skips=${3:-0} bin=$KSELFTESTS/$2
	local plan oks notoks skips unexplained
	[ -x "$bin" ] || fail "$bin is missing from the image (is ${name%%/*} in kernel/selftests/list?)"
	case "$who" in
	root) run "$bin" ;;
	test) run as_test_user env TMPDIR=/tmp "$bin" ;;
	*) fail "run_kselftest: WHO must be root or test, not '$who'" ;;
	esac
	plan=$(grep -m1 -oE '^1\.\.[0-9]+' <<<"$output" | cut -d. -f3)
	oks=$(grep -cE '^ok [0-9]+' <<<"$output" || true)
	notoks=$(grep -cE '^not ok [0-9]+' <<<"$output" || true)
	skips=$(grep -ciE '^ok [0-9]+.*# *skip' <<<"$output" || true)
	unexplained=$(grep -iE '^ok [0-9]+.*# *skip *$' <<<"$output" || true)
	echo "# $name as $who: plan ${plan:-none}, $oks ok ($skips skipped), $notoks not ok, exit $status" >&3
	[ -n "$plan" ] || fail "$name printed no TAP plan: $output"
	[ "$notoks" = 0 ] || fail "$name as $who: $notoks failed:"$'\n'"$output"
	[ "$skips" = "$want_skips" ] || fail "$name as $who: $skips skipped, expected $want_skips:"$'\n'"$output"
	[ -z "$unexplained" ] || fail "$name: a skip without a reason: $unexplained"
	[ "$((oks + notoks))" = "$plan" ] || fail "$name: $((oks + notoks)) results for a plan of $plan:"$'\n'"$output"
	[ "$status" = 0 ] || fail "$name exited with status $status:"$'\n'"$output"
}

kernel_config_has() {
	[ -r /proc/config.gz ] || fail "no /proc/config.gz (CONFIG_IKCONFIG_PROC)"
	zcat /proc/config.gz | grep -qx "$1=y"
}

map_files_in_userns() {
	local file=$KTMP/mapped
	head -c 8192 /dev/urandom >"$file"
	chmod 644 "$file"
	run as_test_user unshare --user --map-root-user -- \
		setpriv --inh-caps=-all --ambient-caps=-all --bounding-set="$1" -- \
		"$PROGS/map-files" "$file"
}

exe_link_change() {
	local exe=$2
	cp "$PROGS/caps" "$exe"
	chmod 755 "$exe"
	case "$1" in
	all) run "$PROGS/exe-link" "$exe" ;;
	nocap) run setpriv --inh-caps=-all --ambient-caps=-all \
		--bounding-set=+all,-checkpoint_restore,-sys_admin -- "$PROGS/exe-link" "$exe" ;;
	*) fail "exe_link_change: all or nocap, not '$1'" ;;
	esac
}

exe_change_record() {
	local i line
	for i in $(seq 30); do
		line=$(dmesg | grep -F "type=$AUDIT_EXE_CHANGE " | grep -F "new=\"$1\"" | tail -n 1)
		[ -n "$line" ] && { echo "$line"; return 0; }
		sleep 0.1
	done
	return 1
}

no_exe_change_record() {
	local marker="kernel-helpers marker $RANDOM$RANDOM" i
	sleep 1
	echo "$marker" >/dev/kmsg
	for i in $(seq 30); do
		dmesg | grep -qF "$marker" && break
		sleep 0.1
	done
	dmesg | grep -qF "$marker" || fail "the marker never reached the kernel log"
	! dmesg | grep -F "type=$AUDIT_EXE_CHANGE " | grep -qF "$1"
}

msr_write_back() {
	local value
	value=$("$PROGS/msr" read "$MSR") || fail "cannot read MSR $MSR: $value"
	run "$PROGS/msr" write "$MSR" "$value"
}

# Perl (perl-base is in every Debian system) instead of a C program, so that
# the stock kernel's image needs nothing built from the series.
KERNEL_TCP_REPAIR_PL='
use strict;
use Socket qw(:all);
my ($SIOCGIFFLAGS, $SIOCSIFFLAGS, $TCP_REPAIR) = (0x8913, 0x8914, 19);
socket(my $u, AF_INET, SOCK_DGRAM, 0) or die "socket: $!\n";
my $ifr = pack("a16 s x22", "lo", 0);
ioctl($u, $SIOCGIFFLAGS, $ifr) or die "SIOCGIFFLAGS: $!\n";
my (undef, $flags) = unpack("a16 s", $ifr);
$ifr = pack("a16 s x22", "lo", $flags | 1);
ioctl($u, $SIOCSIFFLAGS, $ifr) or die "SIOCSIFFLAGS: $!\n";
socket(my $l, AF_INET, SOCK_STREAM, 0) or die "socket: $!\n";
bind($l, pack_sockaddr_in(0, INADDR_LOOPBACK)) or die "bind: $!\n";
listen($l, 1) or die "listen: $!\n";
my ($port) = unpack_sockaddr_in(getsockname($l));
socket(my $c, AF_INET, SOCK_STREAM, 0) or die "socket: $!\n";
connect($c, pack_sockaddr_in($port, INADDR_LOOPBACK)) or die "connect: $!\n";
accept(my $s, $l) or die "accept: $!\n";
# capset(2), x86_64: keep only the capabilities of the mask.
my $mask = hex($ARGV[0]);
my ($lo, $hi) = ($mask & 0xffffffff, $mask >> 32);
my $hdr = pack("LL", 0x20080522, 0);
syscall(126, $hdr, pack("LLLLLL", $lo, $lo, 0, $hi, $hi, 0)) == 0
	or die "capset: $!\n";
open(my $st, "<", "/proc/self/status") or die "status: $!\n";
print grep { /^CapEff:/ } <$st>;
if (setsockopt($c, IPPROTO_TCP, $TCP_REPAIR, pack("i", 1))) {
	print "TCP_REPAIR ok\n";
} else {
	print "TCP_REPAIR ", ($!{EPERM} ? "EPERM" : "failed: $!"), "\n";
}
'

tcp_repair() {
	run as_test_user unshare --user --map-root-user --net -- \
		perl -e "$KERNEL_TCP_REPAIR_PL" "$1"
}

# Perl for the same reason as above.  Root, of the user namespace or the
# initial one, gets its whole bounding set as permitted set on execve(): the
# sed at the end shows what a restored task would regain by executing.
KERNEL_BSET_DROP_PL='
use strict;
my ($PR_CAPBSET_DROP, $SYS_capset, $SYS_prctl) = (24, 126, 157);
my ($mask, @drop) = (hex(shift @ARGV), @ARGV);
sub status_line {
	my $f = shift;
	open(my $st, "<", "/proc/self/status") or die "status: $!\n";
	return (grep { /^$f:/ } <$st>)[0];
}
my ($lo, $hi) = ($mask & 0xffffffff, $mask >> 32);
my $hdr = pack("LL", 0x20080522, 0);
syscall($SYS_capset, $hdr, pack("LLLLLL", $lo, $lo, 0, $hi, $hi, 0)) == 0
	or die "capset: $!\n";
print status_line("CapEff");
for my $c (@drop) {
	if (syscall($SYS_prctl, $PR_CAPBSET_DROP, $c + 0, 0, 0, 0) == 0) {
		print "drop $c ok\n";
	} else {
		print "drop $c ", ($!{EPERM} ? "EPERM" : "failed: $!"), "\n";
	}
}
print status_line("CapBnd");
$| = 1;
exec("sed", "-n", "s/^CapPrm:/exec CapPrm:/p", "/proc/self/status")
	or die "exec sed: $!\n";
'

bset_drop() {
	local who=$1
	shift
	case "$who" in
	userns) run as_test_user unshare --user --map-root-user -- \
		perl -e "$KERNEL_BSET_DROP_PL" "$@" ;;
	root) run perl -e "$KERNEL_BSET_DROP_PL" "$@" ;;
	*) fail "bset_drop: userns or root, not '$who'" ;;
	esac
}

# Every capability but those given by number, as a hex mask.
caps_all_but() {
	local last mask n
	last=$(cat /proc/sys/kernel/cap_last_cap)
	mask=$(((1 << (last + 1)) - 1))
	for n in "$@"; do mask=$((mask & ~(1 << n))); done
	printf '%016x\n' "$mask"
}

memfile_checkpoint() {
	local d=$KTMP/memfile
	mkdir -p "$d"
	chown 1000:1000 "$d"
	cat >"$KTMP/memfile.sh" <<'EOS'
# Only stdio goes into the checkpointed tree.
for fd in /proc/$$/fd/*; do
	fd=${fd##*/}
	[ "$fd" -gt 2 ] && [ "$fd" != 255 ] && eval "exec $fd>&-"
done
cd "$D" || exit 1
"$PROG" "$D/ready" "$D/result" </dev/null >"$D/out" 2>&1 &
prog=$!
for ((i = 0; i < 600; i++)); do [ -s "$D/ready" ] && break; sleep 0.05; done
sleep 0.2
pid=$(cat "$D/ready")
if crest checkpoint --pid "$pid" --image-path "$D/img" 2>"$D/err"; then
	wait "$prog" 2>/dev/null  # killed by the checkpoint
	crest restore --image-path "$D/img" -d 2>"$D/rest.err" || { echo "restore failed: $(cat "$D/rest.err")"; exit 1; }
	echo restored
else
	echo "refused: $(cat "$D/err") (lines: $(wc -l <"$D/err"))"
	grep -q '^State:[[:space:]]*[SRD]' /proc/$pid/status && grep -q '^TracerPid:[[:space:]]*0$' /proc/$pid/status && echo untouched
fi
sleep 0.3
kill -TERM "$pid"
for ((i = 0; i < 200; i++)); do grep -qE '^(PASS|FAIL|ERROR)' "$D/result" 2>/dev/null && break; sleep 0.05; done
echo "verdict: $(head -3 "$D/result")"
EOS
	chmod a+r "$KTMP/memfile.sh"
	setpriv --reuid=1000 --regid=1000 --clear-groups \
		env D="$d" PROG="$CREST_TESTS/progs/memfile" XDG_RUNTIME_DIR="$d" \
		unshare -Urpf --mount-proc bash "$KTMP/memfile.sh" 2>"$KTMP/memfile.err"
	local st=$?
	# The shell's own messages (a job killed by the checkpoint) come last.
	sed 's/^/stderr: /' "$KTMP/memfile.err"
	return $st
}

