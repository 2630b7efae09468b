#!/bin/sh
# Golden-output tests of the memwatch CLI against tests/cli/layout.c
# (cli-layout), plus its exit codes and error messages.  Runs in the guest
# from /srv/test/ (busybox sh), prints TAP.
#   sh ./cli-golden.sh ioctl|pread
# The argument is what the suite list says this kernel gives and is
# asserted: "ioctl" = PAGEMAP_SCAN scans and uffd write watches, "pread" =
# pagemap-read scans and soft-dirty write watches.
case " $(cat /proc/cmdline) " in
*" memwatch.guest=1 "*) ;;
*) echo "not in the memwatch guest, refusing"; exit 1 ;;
esac
case "${1:-}" in
ioctl) via="PAGEMAP_SCAN" backend='uffd (exact)' scan=yes zero='PAGEMAP_SCAN finds zero pages' ;;
pread) via="pagemap read" backend='soft-dirty (approximate' scan=no zero='the pagemap read finds only huge zero pages' ;;
*) echo "usage: $0 ioctl|pread" >&2; exit 2 ;;
esac
cd "$(dirname "$0")"
. /lib/memwatch/tap.sh
check() { # description, shell condition (evaluated)
	eval "$2"
	point $? "$1"
}
echo "TAP version 13"
echo "1..20"

rm -f /tmp/cli-layout.ready
./cli-layout /tmp/cli-layout.ready &
lpid=$!
i=0
while [ ! -f /tmp/cli-layout.ready ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
check "layout process is ready" 'test -f /tmp/cli-layout.ready'

norm() { sed -e "s/pid $lpid/pid PID/" -e 's/ via .*$/ via METHOD/' -e "s/\"pid\":$lpid/\"pid\":PID/" \
	-e 's/"method":"[^"]*"/"method":"METHOD"/'; }
cats=present,swapped,file,zero,soft-dirty,written
./memwatch scan $lpid 200000000000-200000100000 --category $cats >/tmp/scan.out 2>&1
rc=$?
norm </tmp/scan.out >/tmp/scan.norm
check "scan goes via $via, as the suite list says" 'grep -q "^memwatch scan: pid $lpid via $via\$" /tmp/scan.out'
if [ $rc -eq 0 ] && diff -u cli-scan.golden /tmp/scan.norm >/tmp/scan.diff; then
	point 0 "scan table matches cli-scan.golden"
else
	point 1 "scan table matches cli-scan.golden (exit $rc)"; sed 's/^/# /' /tmp/scan.diff
fi
./memwatch scan $lpid 200000000000-200000100000 --category $cats --json >/tmp/scanj.out 2>&1
rc=$?
norm </tmp/scanj.out >/tmp/scanj.norm
if [ $rc -eq 0 ] && diff -u cli-scan-json.golden /tmp/scanj.norm >/tmp/scanj.diff; then
	point 0 "scan --json matches cli-scan-json.golden"
else
	point 1 "scan --json matches cli-scan-json.golden (exit $rc)"; sed 's/^/# /' /tmp/scanj.diff
fi
./memwatch scan $lpid 200000000000-200000100000 --category $cats --pread >/tmp/scanp.out 2>&1
norm </tmp/scanp.out >/tmp/scanp.norm
check "scan --pread gives the same table" 'cmp -s /tmp/scan.norm /tmp/scanp.norm'

./memwatch top $lpid --interval 0.3 --count 2 >/tmp/top.out 2>&1
rc=$?
sed 's/^/# /' /tmp/top.out
check "top runs 2 intervals and exits 0" '[ $rc -eq 0 -a "$(grep -c '\''^--- interval'\'' /tmp/top.out)" -eq 2 ]'
check "top says it is soft-dirty based" 'grep -q "soft-dirty based" /tmp/top.out'
check "top sees the page the layout keeps writing, in its mapping" 'grep -Eq '\''^ +1  200000000000-200000010000 rw-p$'\'' /tmp/top.out'

./memwatch probe >/tmp/probe.out 2>&1
rc=$?
sed 's/^/# /' /tmp/probe.out
check "probe exits 0 and names the backend" '[ $rc -eq 0 ] && grep -Eq '\''^write watches use: (uffd|soft-dirty|mprotect)'\'' /tmp/probe.out'
check "probe: PAGEMAP_SCAN ioctl $scan" 'grep -q "^  PAGEMAP_SCAN ioctl: *$scan" /tmp/probe.out'
check "probe: write watches use $backend" 'grep -qF "write watches use: $backend" /tmp/probe.out'
su tester -c "./memwatch probe" >/tmp/probe.out 2>&1
sed 's/^/# /' /tmp/probe.out | grep PFN
check "probe as uid 1000: no PFNs, and says what that costs: $zero" 'grep -q "^  PFNs in pagemap: *no .*$zero" /tmp/probe.out'
./memwatch --help >/tmp/help.out 2>&1
rc=$?
check "--help exits 0 and documents the exit status" '[ $rc -eq 0 ] && grep -q "^Exit status" /tmp/help.out'
check "--help: 'swapped' counts uffd-wp markers too" 'grep -q "userfaultfd write-protect" /tmp/help.out && grep -q "markers on pages never populated" /tmp/help.out'
check "--help and top: top clears soft-dirty bits, a CRIU pre-dump loses them" 'grep -q "CRIU (pre-dump)" /tmp/help.out && grep -q "CRIU pre-dump" /tmp/top.out'

./memwatch bogus >/tmp/err.out 2>&1
rc=$?
check "unknown command: exit 2 with a hint" '[ $rc -eq 2 ] && grep -q "Try '\''memwatch --help'\''" /tmp/err.out'
./memwatch scan >/tmp/err.out 2>&1
rc=$?
check "scan without PID: exit 2" '[ $rc -eq 2 ]'
./memwatch scan 999999 >/tmp/err.out 2>&1
rc=$?
check "scan of a missing pid: exit 1, 'no process with pid 999999'" '[ $rc -eq 1 ] && grep -q "no process with pid 999999" /tmp/err.out'
su tester -c "./memwatch scan 1" >/tmp/err.out 2>&1
rc=$?
sed 's/^/# /' /tmp/err.out
check "uid 1000 scanning pid 1: exit 1, says it needs ptrace access" '[ $rc -eq 1 ] && grep -q "needs ptrace read access" /tmp/err.out'
./memwatch top $lpid --interval 0 >/tmp/err.out 2>&1
rc=$?
check "top --interval 0: exit 2" '[ $rc -eq 2 ]'

kill $lpid
wait $lpid 2>/dev/null
[ $failed -eq 0 ]

