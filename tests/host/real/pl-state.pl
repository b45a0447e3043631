# State held by a perl interpreter, for tests/host/real-programs.test.
#
#     perl pl-state.pl DIR
#
# Sets up: a hash of 200,000 keys, an alarm an hour away (ITIMER_REAL),
# SIGHUP ignored, SIGUSR2 blocked with one pending, a file open at an
# offset, an environment variable set, and two children (fork) each
# holding the hash (copy-on-write) and a pipe to and from the parent; then
# a thread asleep for an hour (when this perl has threads); then
# writes its PID to DIR/ready and waits for SIGTERM. On SIGTERM it checks
# them (the children recount their hash) and writes PASS or FAIL lines to
# DIR/result.
use strict;
use warnings;
use POSIX qw(:signal_h);
use IO::Handle;

my $dir = $ARGV[0];
my @fails;

my %h;
$h{"key$_"} = $_ * 7 for 1 .. 200_000;
my $sum = 0;
$sum += $_ for values %h;

$ENV{CREST_REAL} = "perl-" . $$;
my $envwant = $ENV{CREST_REAL};

alarm(3600);
$SIG{HUP} = 'IGNORE';
my $usr2 = POSIX::SigSet->new(SIGUSR2);
sigprocmask(SIG_BLOCK, $usr2) or die "sigprocmask: $!";
kill 'USR2', $$;
my $usr2_seen = 0;
$SIG{USR2} = sub { $usr2_seen++ };

open(my $f, '+>', "$dir/perl-data") or die "open: $!";
print $f "abcdefghij" x 100;
$f->flush;
seek($f, 777, 0);

my @kids;
for my $k (1 .. 2) {
    pipe(my $to_r, my $to_w) or die "pipe: $!";
    pipe(my $from_r, my $from_w) or die "pipe: $!";
    my $pid = fork();
    die "fork: $!" unless defined $pid;
    if ($pid == 0) {
        close $to_w;
        close $from_r;
        my $line = <$to_r>;
        my $s = 0;
        $s += $_ for values %h;
        print $from_w "$k:$s\n";
        close $from_w;
        POSIX::_exit(0);
    }
    close $to_r;
    close $from_w;
    $to_w->autoflush(1);
    push @kids, [ $pid, $to_w, $from_r ];
}

# A thread asleep for an hour (its signals blocked: they are the main
# thread's): still asleep after restore (a sleep the checkpoint
# interrupted is made again, not ended with EINTR).
my $sleeper;
if (eval { require threads; 1 }) {
    $sleeper = threads->create(sub {
        my $all = POSIX::SigSet->new;
        $all->fillset;
        sigprocmask(SIG_BLOCK, $all);
        sleep 3600;
        return 1;
    });
}

my $term = 0;
$SIG{TERM} = sub { $term = 1 };
open(my $r, '>', "$dir/ready.tmp") or die;
print $r "$$\n";
close $r;
rename("$dir/ready.tmp", "$dir/ready") or die;

select(undef, undef, undef, 0.05) until $term;

my $left = alarm(0);
push @fails, "alarm: $left s left (expected 3000-3600)" unless $left > 3000 && $left <= 3600;
my $pending = POSIX::SigSet->new;
sigpending($pending);
push @fails, "SIGUSR2 is not pending" unless $pending->ismember(SIGUSR2);
sigprocmask(SIG_UNBLOCK, $usr2);
push @fails, "SIGUSR2 delivered $usr2_seen times after unblocking" unless $usr2_seen == 1;
push @fails, "SIGHUP is not ignored" unless defined $SIG{HUP} && $SIG{HUP} eq 'IGNORE';
push @fails, "file offset " . tell($f) unless tell($f) == 777;
my $got;
read($f, $got, 3);
push @fails, "file bytes '$got'" unless $got eq "hij";
push @fails, "environment" unless ($ENV{CREST_REAL} // '') eq $envwant;
my $s2 = 0;
$s2 += $_ for values %h;
push @fails, "hash sum $s2, expected $sum" unless $s2 == $sum;
for my $kid (@kids) {
    my ($pid, $to_w, $from_r) = @$kid;
    print $to_w "go\n";
    my $line = <$from_r> // '';
    chomp $line;
    push @fails, "child $pid answered '$line'" unless $line =~ /^\d:\Q$sum\E$/;
    waitpid($pid, 0);
    push @fails, "child $pid status $?" unless $? == 0;
}
if ($sleeper) {
    push @fails, "the sleeping thread woke up (its sleep ended early)" unless $sleeper->is_running;
    $sleeper->detach;
}
open(my $out, '>>', "$dir/result") or die;
print $out "FAIL: $_\n" for @fails;
print $out "PASS\n" unless @fails;
close $out;
exit(@fails ? 1 : 0);
