# shellcheck shell=bash
# Sourced by the scripts that build one memwatch test program of their own
# (tests/conformance/run, scripts/check-deb, tests/criu/build,
# tests/bdwgc/build): the one rule of tests/tests.mk, through make.
#   test_cc OUT SRC [GCC-ARG...]
# Compiles SRC into OUT with the flags every test program gets -- C11,
# -O2 -g, -Wall -Wextra -Werror, tests/include (mw-test.h) on the include
# path -- then the caller's: the -isystem of the uapi to build against,
# -static (or the ASan link), -m32, the library and -l flags.  Incremental
# by make: nothing is done while OUT is newer than every file the last
# compile read (gcc -MD) and every library archive among the arguments, and
# the command is the same.  Prints "  CC      OUT" when it compiles; returns
# make's status.  The caller sets $top (the repository).
# shellcheck disable=SC2154 # $top is the caller's
test_cc() {
	local out=$1 src=$2
	shift 2
	make -s --no-print-directory -f "$top/tests/tests.mk" one \
		T_OUT="$out" T_SRC="$src" T_FLAGS="$*"
}
