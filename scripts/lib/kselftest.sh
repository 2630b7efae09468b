# shellcheck shell=bash
# Sourced by scripts/check-deb and scripts/check-series: how a selftest of a
# kernel tree's tools/testing/selftests/vm/ is compiled for the guest, the
# selftests' rule of tests/tests.mk (which builds the lists' selftests for
# scripts/build-tests the same way), through make.
#   kselftest_cc OUT TREE NAME.c [GCC-FLAG...]
# Compiles TREE/tools/testing/selftests/vm/NAME.c (with the directory's
# vm_util.c when it has one) into the static program OUT.  The caller's
# flags come first: the -isystem of the uapi headers to build against, -m32.
# Incremental by make (gcc -MD, the command line); the caller sets $top.
# shellcheck disable=SC2154 # $top is the caller's
kselftest_cc() {
	local out=$1 tree=$2 src=$3
	shift 3
	make -s --no-print-directory -f "$top/tests/tests.mk" one \
		T_OUT="$out" T_KS_TREE="$tree" T_KS="$src" T_FLAGS="$*"
}
