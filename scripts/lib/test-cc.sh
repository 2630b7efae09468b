# shellcheck shell=bash
# Sourced by the scripts that build memwatch's own test programs
# (scripts/build-tests: all the guest suites run; scripts/conformance,
# scripts/check-deb, scripts/build-criu: the one each needs on its own):
# the one way a test program is compiled.
#   test_cc OUT SRC [GCC-ARG...]
# Compiles SRC into OUT with the flags every test program gets -- C11,
# -O2 -g, -Wall -Wextra -Werror, tests/include (mw-test.h) on the include
# path -- then the caller's: the -isystem of the uapi to build against,
# -static (or the ASan link), -m32, the library and -l flags.  Incremental:
# nothing is done while OUT is newer than every file the last compile read
# (gcc -MD's list, system headers too) and every file among the arguments
# (a library archive), and the command is the same.  The list and the
# command are kept in build/tests/obj/ for an OUT under build/
# (build/tests/bin/ goes to the guest as it is), else beside OUT.  Prints
# "PROG: CC OUT" when it compiles; returns gcc's status.  The caller sets
# $top (the repository).
# shellcheck disable=SC2154 # $top is the caller's
test_cc() {
	local out=$1 src=$2
	shift 2
	local obj=$out dep a
	case "$out" in "$top"/build/*) obj=$top/build/tests/obj/${out#"$top"/build/} ;; esac
	local cc=(gcc -std=c11 -O2 -g -Wall -Wextra -Werror -I "$top/tests/include"
		-MD -MF "$obj.d" -o "$out" "$src" "$@")
	mkdir -p "$(dirname "$out")" "$(dirname "$obj")"
	if [ -f "$out" ] && [ -f "$obj.d" ] && [ -f "$obj.cmd" ] &&
		[ "$(cat "$obj.cmd")" = "${cc[*]}" ]; then
		local stale=0
		for dep in $(sed -e '1s/^[^:]*://' -e 's/\\$//' "$obj.d"); do
			{ [ ! -e "$dep" ] || [ "$dep" -nt "$out" ]; } && { stale=1; break; }
		done
		for a in "$@"; do
			[ -f "$a" ] && [ "$a" -nt "$out" ] && stale=1
		done
		[ "$stale" -eq 0 ] && return 0
	fi
	echo "${PROG:-${0##*/}}: CC ${out#"$top"/}"
	rm -f "$obj.cmd"
	"${cc[@]}" || return
	echo "${cc[*]}" >"$obj.cmd"
}
