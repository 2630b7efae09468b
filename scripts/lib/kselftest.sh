# shellcheck shell=bash
# Sourced by scripts/build-tests and scripts/check-deb: how a selftest of a
# kernel tree's tools/testing/selftests/vm/ is compiled for the guest.
#   kselftest_cc OUT TREE NAME.c [GCC-FLAG...]
# Compiles TREE/tools/testing/selftests/vm/NAME.c (with the directory's
# vm_util.c when it has one) into the static program OUT.  The caller's
# flags come first: the -isystem of the uapi headers to build against, -m32.
kselftest_cc() {
	local out=$1 tree=$2 src=$3
	shift 3
	local vm=$tree/tools/testing/selftests/vm extra=()
	[ -f "$vm/vm_util.c" ] && [ "$src" != vm_util.c ] && extra=("$vm/vm_util.c")
	gcc "$@" -static -O2 -g -Wall -I "$vm" -I "$tree/tools/testing/selftests" \
		-o "$out" "$vm/$src" ${extra[@]+"${extra[@]}"} -lrt -lpthread -lm
}
