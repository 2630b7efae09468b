# How memwatch's test programs and benchmarks are built: one file, make's
# own dependency tracking.  Included by the top-level Makefile (after
# lib/lib.mk, whose archives the programs link); scripts that build a
# single program call its `one` target (scripts/lib/test-cc.sh).
#
#   make test-programs   every program the guests run, into build/tests/bin/
#                        (scripts/build-tests passes T_KSELFTESTS, the kernel
#                        tree's selftests its lists name)
#   make bench-programs  the benchmarks (bench/*.c) into build/bench/
#   make -f tests/tests.mk one T_OUT=FILE T_SRC=FILE.c T_FLAGS="..."
#                        one program by the same rule (test_cc:
#                        conformance, check-deb, tests/criu/build,
#                        tests/bdwgc/build)
#   make -f tests/tests.mk one T_OUT=FILE T_KS_TREE=TREE T_KS=NAME.c T_FLAGS=...
#                        one selftest of a kernel tree by the selftests'
#                        rule (kselftest_cc: check-deb, check-series)
#
# Our programs: C11, -O2 -g, -Wall -Wextra -Werror, tests/include (mw-test.h)
# first on the include path, then the caller's flags: the uapi to build
# against (the patched tree's build/headers/include, or
# $MEMWATCH_HEADERS/include), -static or the ASan link, -m32, libraries.
# gcc -MD writes NAME.d beside each program's command line (NAME.cmd) under
# build/tests/obj/; -MD rather than -MMD because the uapi comes in with
# -isystem, whose headers -MMD leaves out, and a changed uapi header must
# rebuild.  A program of several sources (wostress) is one gcc too: -MD
# would keep the dependencies of the last source only, so gcc -M lists
# those of all first (as for the selftests below).  A program is rebuilt
# when a file it read changed or its command line did (another -m32,
# another header directory).
# The kernel tree's selftests (tools/testing/selftests/vm of build/linux)
# are built as its own Makefile builds them (-Wall, vm_util.c beside,
# -lrt -lpthread -lm), static, against the same uapi.

T_TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
T_BUILD := $(T_TOP)/build
T_BIN := $(T_BUILD)/tests/bin
T_OBJ := $(T_BUILD)/tests/obj
T_HDR ?= $(if $(MEMWATCH_HEADERS),$(abspath $(MEMWATCH_HEADERS)),$(T_BUILD)/headers)/include
T_TREE ?= $(if $(MEMWATCH_TREE),$(abspath $(MEMWATCH_TREE)),$(T_BUILD)/linux)
T_VM := $(T_TREE)/tools/testing/selftests/vm
T_CC ?= gcc
T_CFLAGS := -std=c11 -O2 -g -Wall -Wextra -Werror -I$(T_TOP)/tests/include
T_LIB_A := $(T_BUILD)/lib/libmemwatch.a
T_LIB_SAN_A := $(T_BUILD)/lib/libmemwatch-san.a
T_LIB := -I$(T_TOP)/lib/include $(T_LIB_A) -lpthread
T_LIB_SAN := -I$(T_TOP)/lib/include $(T_LIB_SAN_A) -lpthread
# The guest has no C library: ASan cannot link statically, so the asan-*
# programs are dynamic and load their interpreter and libraries from
# /srv/test/, copied there from the host's.
T_ASAN := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined -static-libasan -static-libubsan \
	-Wl,--dynamic-linker=/srv/test/ld-linux-x86-64.so.2 -Wl,-rpath,/srv/test
T_ASAN_LIBS := ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libgcc_s.so.1

.PHONY: test-programs bench-programs one FORCE
FORCE:

# t_cmdfile OUT, COMMAND: the rule that keeps COMMAND in OUT's .cmd file,
# rewritten only when it changed (so that it is newer than OUT only then).
define t_cmdfile
$(T_OBJ)/$(patsubst $(T_BUILD)/%,%,$(1)).cmd: FORCE
	@mkdir -p $$(@D)
	@echo '$(2)' | cmp -s - $$@ 2>/dev/null || echo '$(2)' >$$@
endef

# t_cc OUT, SOURCES, FLAGS: OUT from SOURCES (one or more) by our one
# rule; FLAGS come after the sources (the caller's -isystem, -static, -m32,
# libraries).  t_dep OUT: its dependency file.
t_dep = $(T_OBJ)/$(patsubst $(T_BUILD)/%,%,$(1)).d
define t_cc
$(1): $(2) $(filter %.a,$(3)) $(T_OBJ)/$(patsubst $(T_BUILD)/%,%,$(1)).cmd
	@mkdir -p $$(@D)
	@echo "  CC      $(patsubst $(T_TOP)/%,%,$(1))"
	$(if $(word 2,$(2)),@$(T_CC) $(T_CFLAGS) -M -MP -MT $(1) $(2) $(3) >$(call t_dep,$(1)))
	@$(T_CC) $(T_CFLAGS) $(if $(word 2,$(2)),,-MD -MP -MF $(call t_dep,$(1))) -o $(1) $(2) $(3)
$(call t_cmdfile,$(1),$(T_CC) $(T_CFLAGS) -o $(1) $(2) $(3))
-include $(call t_dep,$(1))
endef

# A source that moved or went: the dependency file of the program's last
# build still names its old path, and gcc's -MP covers the headers only,
# not the main file; without a rule for it make would stop there ("No rule
# to make target") in every checkout that built the program before.  An
# empty rule for any C file of the tree lets make go on: the program is
# rebuilt (its command line changed), and a source that is really missing
# is reported by gcc.  Only the source directories: a rule for any C file
# would let make's built-in rules chain through it to remake the missing
# dependency files of a fresh checkout (NAME.d from NAME.d.c).
$(T_TOP)/tests/%.c: ;
$(T_TOP)/bench/%.c: ;
$(T_TOP)/tools/%.c: ;

# t_prog NAME, SOURCES, FLAGS: a static guest program against T_HDR.
define t_prog
$(call t_cc,$(T_BIN)/$(1),$(addprefix $(T_TOP)/,$(2)),-isystem $(T_HDR) -static $(3))
T_PROGRAMS += $(T_BIN)/$(1)
endef

# t_asan NAME, SOURCES, FLAGS: the same with ASan and UBSan (dynamic).
define t_asan
$(call t_cc,$(T_BIN)/$(1),$(addprefix $(T_TOP)/,$(2)),-isystem $(T_HDR) $(T_ASAN) $(3))
T_PROGRAMS += $(T_BIN)/$(1)
endef

# The write oracle (its main, shared oracle and three modes), the
# whole-address-space scan, the kernel's own writes into tracked memory
# (tests/stress/), the PMD marker's differential, its failure injection and
# its race with UFFDIO_COPY (tests/pmd-marker/), the interface fuzzer
# (tests/pmfuzz/), also as a
# 32-bit program (the compat entry of the ioctls), the fixed-layout runner
# of upstream's uffd-unit-tests (tests/harness/).
T_WOSTRESS := wostress wostress-oracle wostress-dense wostress-hot wostress-sparse
$(eval $(call t_prog,wostress,$(T_WOSTRESS:%=tests/stress/%.c),-lpthread))
$(eval $(call t_prog,scanspan,tests/stress/scanspan.c,))
$(eval $(call t_prog,kwrites,tests/stress/kwrites.c,-lpthread))
$(eval $(call t_prog,markerdiff,tests/pmd-marker/markerdiff.c,-lpthread))
$(eval $(call t_prog,markerfail,tests/pmd-marker/markerfail.c,))
$(eval $(call t_prog,markerrace,tests/pmd-marker/markerrace.c,-lpthread))
$(eval $(call t_prog,pmfuzz,tests/pmfuzz/pmfuzz.c,-lpthread))
$(eval $(call t_prog,pmfuzz-m32,tests/pmfuzz/pmfuzz.c,-m32 -Wno-psabi -lpthread))
$(eval $(call t_prog,brkexec,tests/harness/brkexec.c,))
# libmemwatch's tests (tests/libmemwatch/), each also with ASan+UBSan.
T_LIB_TESTS := $(basename $(notdir $(wildcard $(T_TOP)/tests/libmemwatch/*.c)))
$(foreach t,$(T_LIB_TESTS),$(eval $(call t_prog,$(t),tests/libmemwatch/$(t).c,$(T_LIB))))
$(foreach t,$(T_LIB_TESTS),$(eval $(call t_asan,asan-$(t),tests/libmemwatch/$(t).c,$(T_LIB_SAN))))
# The CLI under test, its tests (tests/cli/) and make demo's program.
$(eval $(call t_prog,memwatch,tools/memwatch.c,$(T_LIB)))
$(eval $(call t_prog,cli-layout,tests/cli/layout.c,))
$(eval $(call t_prog,cli-json,tests/cli/json.c,))
$(eval $(call t_prog,demo-lib,tests/demo/demo.c,$(T_LIB)))
# README.md's example, as it is printed there (its first ```c block).
$(eval $(call t_prog,readme-example,build/tests/readme-example.c,$(T_LIB)))
$(T_BUILD)/tests/readme-example.c: $(T_TOP)/README.md
	@mkdir -p $(@D)
	@awk '/^```c$$/ { if (!done) f = 1; next } /^```$$/ { if (f) done = 1; f = 0 } f' $< >$@.tmp
	@test -s $@.tmp || { echo "tests.mk: no \`\`\`c block in README.md" >&2; rm -f $@.tmp; exit 1; }
	@mv $@.tmp $@

# The CLI's golden files, beside the programs.
T_CLI_DATA := golden.sh scan.golden scan-json.golden
$(T_BIN)/cli-%: $(T_TOP)/tests/cli/%
	@mkdir -p $(@D)
	@cp $< $@
T_PROGRAMS += $(addprefix $(T_BIN)/cli-,$(T_CLI_DATA))

# The asan-* programs' interpreter and libraries.
t_host_lib = $(firstword $(wildcard $(shell $(T_CC) -print-file-name=$(1)) /lib/x86_64-linux-gnu/$(1)))
define t_asan_lib
$(T_BIN)/$(1): $(call t_host_lib,$(1))
	@mkdir -p $$(@D)
	@cp -L $$< $$@
T_PROGRAMS += $(T_BIN)/$(1)
endef
$(foreach l,$(T_ASAN_LIBS),$(eval $(call t_asan_lib,$(l))))

# t_ks OUT, TREE, NAME.c, FLAGS: a selftest of TREE's
# tools/testing/selftests/vm, as its own Makefile builds it (-Wall, the
# directory's vm_util.c beside, -lrt -lpthread -lm), static; FLAGS come
# first (the -isystem of the uapi, -m32).  Two sources in one gcc: -MD
# would keep the dependencies of the last one only, so gcc -M lists both
# first.
t_ks_util = $(if $(filter vm_util.c,$(2)),,$(wildcard $(1)/tools/testing/selftests/vm/vm_util.c))
define t_ks
$(1): $(2)/tools/testing/selftests/vm/$(3) $(call t_ks_util,$(2),$(3)) $(T_OBJ)/$(patsubst $(T_BUILD)/%,%,$(1)).cmd
	@mkdir -p $$(@D)
	@echo "  CC      $(patsubst $(T_TOP)/%,%,$(1)) (selftest)"
	@mkdir -p $$(dir $(T_OBJ)/$(patsubst $(T_BUILD)/%,%,$(1)))
	@$(T_CC) $(4) -I$(2)/tools/testing/selftests/vm -I$(2)/tools/testing/selftests -M -MP -MT $(1) \
		$(2)/tools/testing/selftests/vm/$(3) $(call t_ks_util,$(2),$(3)) \
		>$(T_OBJ)/$(patsubst $(T_BUILD)/%,%,$(1)).d
	@$(T_CC) $(4) -static -O2 -g -Wall -I$(2)/tools/testing/selftests/vm -I$(2)/tools/testing/selftests \
		-o $(1) $(2)/tools/testing/selftests/vm/$(3) $(call t_ks_util,$(2),$(3)) -lrt -lpthread -lm
$(call t_cmdfile,$(1),selftest $(2) $(3) $(4))
-include $(T_OBJ)/$(patsubst $(T_BUILD)/%,%,$(1)).d
endef

# The kernel tree's selftests the lists name: NAME or NAME-m32 for
# tools/testing/selftests/vm/NAME.c of T_TREE (build/linux).
T_KSELFTESTS ?=
define t_kselftest
$(call t_ks,$(T_BIN)/$(1),$(T_TREE),$(patsubst %-m32,%,$(1)).c,-isystem $(T_HDR) $(if $(filter %-m32,$(1)),-m32))
T_PROGRAMS += $(T_BIN)/$(1)
endef
$(foreach k,$(T_KSELFTESTS),$(eval $(call t_kselftest,$(k))))

## test-programs  every test program the guests run, by make (tests/tests.mk;
##             make tests adds the suite lists)
test-programs: $(T_PROGRAMS)

# The benchmarks (bench/*.c, make bench and scripts/bench).
T_BENCH := pagemap_scan arming scaling ww_steps marker harvest
T_BENCH_FLAGS := -isystem $(T_HDR) -static
$(foreach b,$(T_BENCH),$(eval $(call t_cc,$(T_BUILD)/bench/$(b),$(T_TOP)/bench/$(b).c,$(T_BENCH_FLAGS))))
## bench-programs  the benchmarks of bench/ into build/bench/ (make bench runs them)
bench-programs: $(addprefix $(T_BUILD)/bench/,$(T_BENCH))

# One program named on the command line: ours (T_SRC) or a selftest
# (T_KS=NAME.c of the tree T_KS_TREE).
ifneq ($(T_OUT),)
ifneq ($(T_KS),)
$(eval $(call t_ks,$(abspath $(T_OUT)),$(abspath $(T_KS_TREE)),$(T_KS),$(T_FLAGS)))
else
$(eval $(call t_cc,$(abspath $(T_OUT)),$(abspath $(T_SRC)),$(T_FLAGS)))
endif
one: $(abspath $(T_OUT))
endif
