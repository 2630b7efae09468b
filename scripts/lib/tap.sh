# shellcheck shell=sh
# What the host scripts and the guest's runners both use: POSIX sh (and
# `local`), so that busybox's ash runs it in the guest.  On the host
# scripts/lib/common.sh sources it; scripts/mkinitramfs puts it at
# /lib/memwatch/tap.sh in the guest, where the guest runners
# (tests/harness/, tests/*/guest) source it.
#
#   point STATUS TEXT    one TAP point: "ok N TEXT" when STATUS is 0 (an
#                        exit status: `point $? ...`, `point "$([ ... ];
#                        echo $?)" ...`), "not ok N TEXT" otherwise, N
#                        counted in $tap_n (from 1); adds it to $passed or
#                        $failed.  A script that runs a second, separate
#                        series (a self-test) sets tap_n=0 passed=0 failed=0
#                        first.
#   hand_back TAG FILE   (guest) FILE shipped back over the console:
#                        "TAG-OUTPUT-BEGIN SIZE", FILE gzip+base64 (the
#                        serial console is slow, ~130 KB/s on the debug
#                        kernel, and the outputs compress about 10x),
#                        "TAG-OUTPUT-END".
#   handed_back TAG RAW FILE
#                        (host) what hand_back TAG shipped, found in the
#                        console log RAW and decoded into FILE (empty when
#                        there is none); prints the SIZE the guest announced
#                        (nothing without a TAG-OUTPUT-BEGIN line); returns
#                        0 when FILE has SIZE bytes, else 1 (no output, cut
#                        short or corrupt).

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

hand_back() {
	echo "$1-OUTPUT-BEGIN $(wc -c <"$2")"
	gzip -c "$2" | base64
	echo "$1-OUTPUT-END"
}

handed_back() {
	local size
	size=$(sed -n "s/^$1-OUTPUT-BEGIN //p" "$2")
	sed -n "/^$1-OUTPUT-BEGIN /,/^$1-OUTPUT-END\$/p" "$2" | sed '1d;$d' |
		base64 -d 2>/dev/null | gunzip 2>/dev/null >"$3"
	echo "$size"
	[ -n "$size" ] && [ "$(wc -c <"$3")" = "$size" ]
}
