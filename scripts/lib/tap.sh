# shellcheck shell=sh
# What the host scripts and the guest's runners both use: POSIX sh (and
# `local`), so that busybox's ash runs it in the guest.  On the host
# scripts/lib/common.sh sources it; scripts/mkinitramfs puts it at
# /lib/memwatch/tap.sh in the guest, where tests/guest/'s runners source it.
#
#   point STATUS TEXT    one TAP point: "ok N TEXT" when STATUS is 0 (an
#                        exit status: `point $? ...`, `point "$([ ... ];
#                        echo $?)" ...`), "not ok N TEXT" otherwise, N
#                        counted in $tap_n (from 1); adds it to $passed or
#                        $failed.  A script that runs a second, separate
#                        series (a self-test) sets tap_n=0 passed=0 failed=0
#                        first.

tap_n=${tap_n:-0} passed=${passed:-0} failed=${failed:-0}
point() {
	tap_n=$((tap_n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $tap_n $2"
		passed=$((passed + 1))
	else
		echo "not ok $tap_n $2"
		failed=$((failed + 1))
	fi
}
