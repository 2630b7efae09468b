# memwatch: exact write tracking for Debian 12's 6.1 kernel.
# The logic lives in scripts/; this file only wires the steps together.
#   make check   build the debug kernel and every test, run them all in QEMU
#   make demo    build and boot the release kernel, show what it can do
.PHONY: all deps tree kernel headers export-patches patches initramfs tests check demo bench clean distclean help \
	conformance soak deb check-configs check-series clients wine bdwgc bdwgc-figures upstream-patches \
	kernel-debug kernel-release pristine-kernel upstream-kernel criu-build wine-build bdwgc-build
# Every step may run beside the others (make -j; make check runs its
# stages that way): each writes its own outputs, and the one they share,
# build/headers, is written under a lock (scripts/build-kernel).

TOP := $(CURDIR)
BUILD := $(TOP)/build
# KERNEL=debug|release: the kernel make kernel builds (default release)
# and make soak runs on (default debug).  The old spellings, DEBUG=1 and
# SOAK_KERNEL=, fail with a message rather than being ignored.
KERNEL ?=
ifneq ($(filter-out debug release,$(KERNEL)),)
$(error KERNEL=$(KERNEL): debug or release)
endif
ifeq ($(origin DEBUG),command line)
$(error DEBUG=$(DEBUG) is gone: KERNEL=debug (make kernel KERNEL=debug))
endif
ifneq ($(SOAK_KERNEL),)
$(error SOAK_KERNEL=$(SOAK_KERNEL) is gone: KERNEL=$(SOAK_KERNEL) (make soak KERNEL=$(SOAK_KERNEL)))
endif

all: kernel

help:
	@sed -n 's/^##//p' $(MAKEFILE_LIST)

## deps        install the Debian packages memwatch needs (apt, as root)
deps:
	@scripts/setup-deps

## tree        unpack linux-source-6.1 into build/linux and apply kernel/patches
tree: deps
	@scripts/prepare-tree

## kernel      build the release test kernel and its packages (KERNEL=debug:
##             the debug kernel) + headers
kernel: kernel-$(or $(KERNEL),release)

# The build steps the test targets are made of.  Each script is
# incremental (nothing to do when its output is current; the kernels,
# Wine's and bdwgc's builds come from ~/.cache/memwatch when their inputs
# were built before), so a step is a phony target run every time.
## headers     the patched tree's uapi headers, build/headers (the programs
##             of the guests and the clients are built against them)
headers: tree
	@scripts/build-kernel --headers
## kernel-debug  the debug kernel (KASAN, lockdep), build/kernel/debug
kernel-debug: tree
	@scripts/build-kernel --debug
## kernel-release  the release kernel and its packages, build/kernel/release
kernel-release: tree
	@scripts/build-kernel
## pristine-kernel  Debian's unpatched 6.1 from its binary package
##             (scripts/prepare-pristine), build/kernel-pristine
pristine-kernel: deps
	@scripts/prepare-pristine
## upstream-kernel  Debian's 6.12 from its binary package
##             (scripts/prepare-upstream), build/kernel-upstream
upstream-kernel: deps
	@scripts/prepare-upstream
## criu-build  CRIU 4.2 and its zdtm programs (tests/criu/build)
criu-build: headers
	@tests/criu/build
## wine-build  Wine 11.0's image (tests/wine/build)
wine-build: headers
	@tests/wine/build
## bdwgc-build  bdwgc and its programs (tests/bdwgc/build)
bdwgc-build: headers
	@tests/bdwgc/build

## export-patches  regenerate kernel/patches/ from the commits in build/linux
##             (patches: its old name, still accepted)
export-patches patches:
	@scripts/export-patches

## initramfs   build the guest's busybox initramfs
initramfs:
	@scripts/mkinitramfs

-include lib/lib.mk
# The test programs and benchmarks: make test-programs, make bench-programs.
include tests/tests.mk

## tests       build every guest test program into build/tests/bin
tests: headers $(if $(wildcard lib/lib.mk),lib-archives)
	@scripts/build-tests

## check       the test command: the stages of tests/stages.mk (the harness
##             self-test, the quilt check, the release kernel's packages,
##             the suites on the debug and the release kernel, the fallback
##             suites on Debian's unpatched 6.1 and the library on upstream
##             6.12 (four guests), CRIU 4.2, Wine 11.0 and bdwgc on the
##             release kernels, the differential conformance and fuzz runs
##             against upstream 6.12) under make -j CHECK_JOBS (default:
##             the number of cores + 1): each starts when the builds it
##             needs are done, beside the builds still running; a line as
##             each starts and ends, then every stage's output in order and
##             the total (scripts/check)
CHECK_JOBS ?= $(shell echo $$(($$(nproc) + 1)))
# The steps' scripts run make with their own -j (the kernel, Wine): make's
# jobserver is not theirs to share.
ifneq ($(filter check-stages,$(MAKECMDGOALS)),)
unexport MAKEFLAGS
endif
check:
	@scripts/check --begin
	@$(MAKE) --no-print-directory -k -j$(CHECK_JOBS) check-stages; rc=$$?; \
		scripts/check --report $(CHECK_STAGES) || exit 1; exit $$rc

include tests/stages.mk

## deb         Debian packages of linux-source-6.1 + kernel/patches with
##             bindeb-pkg (linux-image, linux-headers, linux-libc-dev):
##             DEB_CONFIG=debian (default: Debian's own config, a
##             distribution kernel, hours; build/deb/debian/) or
##             DEB_CONFIG=test (the release kernel, which make kernel
##             packages: build/kernel/release/deb/); then scripts/check-deb:
##             contents, scratch install, the series' selftests built
##             against the packaged uapi and run on the packaged kernel in
##             QEMU; TAP (make check runs the test config's)
DEB_CONFIG ?= debian
deb: deps $(if $(filter test,$(DEB_CONFIG)),tree)
	@scripts/build-deb --config $(DEB_CONFIG)
	@scripts/check-deb --config $(DEB_CONFIG)

## check-configs  compile the series with W=1: for Debian's amd64 config and
##             arm64 defconfig (clang) the objects it reaches (the .c files
##             it touches and the direct includers, in mm/, fs/, fs/proc/,
##             kernel/, of its include/linux/ headers; those the config
##             does not build dropped and named), for i386 defconfig and a
##             minimal x86_64 config all of mm/ and fs/proc/ (i386: and
##             fs/userfaultfd.o); any error or any warning in the series'
##             files fails (TAP)
check-configs: deps
	@scripts/check-configs

## check-series  every patch builds on its own: the series applied one patch
##             at a time in build/series/ (build/linux untouched), vmlinux of
##             each configuration that reaches a patch touching kernel code
##             (release, debug with DEBUG_VM_PGTABLE and fault injection,
##             nothp: no THP/hugetlbfs/swap, min: no userfaultfd either;
##             CHECK_SERIES_CONFIGS picks), the selftest programs after each
##             that touches them, checkpatch --strict on each
##             (scripts/check-series; TAP).  Not part of make check: kernel
##             builds per patch
check-series: deps tree
	@scripts/check-series

## upstream-patches  kernel/upstream/ (our fixes upstream lacks, as format-patch
##             files against Debian's linux-source-6.12): checkpatch --strict,
##             applied and built in build/upstream-patches/ (test.config), the
##             patched uffd-unit-tests run on Debian's 6.12 (its new cases must
##             fail) and on the patched kernel (they must pass, the rest pass
##             or match); TAP on stdout.  Not part of make check
upstream-patches:
	@$(MAKE) --no-print-directory upstream-kernel initramfs >&2
	@scripts/upstream-patches

## clients     real upstream clients in the guest: CRIU 4.2 (tests/criu/build)
##             checkpoints and restores zdtm programs on the release kernel
##             through PAGEMAP_SCAN and through the pagemap read, same pages
##             dumped; its feature check must fail cleanly on Debian's 6.1;
##             the same criu on upstream 6.12 gives the yardstick numbers
##             (CRIU_TESTS="mem-touch maps007 ..." limits the programs);
##             then Wine 11.0 (tests/wine/run, as make wine but without the
##             figures)
clients: kernel-release pristine-kernel upstream-kernel criu-build wine-build initramfs
	@tests/criu/run --release
	@tests/wine/run

## wine        Wine 11.0 (wine-tkg, ../shared/clients/; WINE_TARBALL=
##             overrides) built minimal against the series' headers
##             (tests/wine/build: build/wine/root.img, cached), then on
##             our release kernel, upstream 6.12 and Debian's 6.1: Wine's
##             own kernel32:virtual and ntdll:virtual, proof that the
##             kernel path was taken (or, on 6.1, not), tests/wine's
##             GetWriteWatch write oracle, and its figures under -icount
##             side by side: 64 MiB, large untouched views, a 1 GiB view
##             written and clean (tests/wine/run --figures; TAP)
wine: kernel-release pristine-kernel upstream-kernel wine-build initramfs
	@tests/wine/run --figures

## bdwgc       the Boehm GC (../shared/clients/bdwgc-9d83c00b.tar.xz, with
##             tests/bdwgc/patches/: its userfaultfd + PAGEMAP_SCAN dirty-bit
##             layer) built static-pie in two flavours, default and
##             -DCHECK_UFFD_VDB (tests/bdwgc/build, cached), then its own
##             test programs in incremental mode on our release kernel and
##             upstream 6.12 (the new layer must run) and Debian's 6.1
##             (the soft-dirty fallback must run; the check flavour must
##             abort), tests/bdwgc/gc-kwrites (objects referenced only by
##             pointers the kernel wrote: none lost), and its gctest.exe
##             under Wine on ours and on 6.1 (make wine's image);
##             BDWGC_KERNELS="ours upstream" limits the kernels, BDWGC_WINE=0
##             leaves Wine out (tests/bdwgc/run; TAP)
bdwgc: kernel-release pristine-kernel upstream-kernel wine-build initramfs bdwgc-build
	@tests/bdwgc/run

## bdwgc-figures  the cost of bdwgc's dirty bits side by side under -icount:
##             gctest and tests/bdwgc/gcbench (a heap of 256 MiB and more)
##             with the new layer, soft-dirty and mprotect on our release
##             kernel, the new layer on it booted uffd_wp_harvest_skip=off
##             and on upstream 6.12: collections, the
##             time of a read, pages reported dirty, world-stopped marking,
##             the program's time (BDWGC_FIG_ROUNDS rounds, default 3;
##             build/bdwgc/figures.txt).  Not part of make check
bdwgc-figures: kernel-release upstream-kernel bdwgc-build
	@tests/bdwgc/figures

## conformance the differential test alone: SEEDS (default 1-40) seeded
##             scenarios on the debug kernel and on upstream 6.12, diffed
##             (STEPS per seed, default 20)
SEEDS ?= 1-40
STEPS ?= 20
conformance: kernel-debug upstream-kernel initramfs
	@tests/conformance/run --debug --seeds $(SEEDS) --steps $(STEPS)

## soak        the write oracle for DURATION seconds (default 1800), its
##             sparse-range mode for SPARSE_DURATION (default 300, 2 x 2 GiB
##             armed untouched), each ROUNDS times (default 1; a run logs
##             at most 2^23 writes per writer), kwrites' sparse mode (4 GiB,
##             all kinds of kernel writes), the interface fuzzer (DURATION,
##             or FUZZ_CALLS calls), then the PMD marker's differential
##             and the harvest skip's (DIFF_DURATION each, default
##             DURATION), on the debug kernel;
##             KERNEL=release: on the release kernel, about 15x the
##             writes and 5x the calls per second under TCG (SEED=N replays
##             a run, WRITERS=N writer threads; FUZZ_SEED=N for the fuzzer,
##             DIFF_SEED=N for the differential; SOAK_STEPS: a subset of
##             "wostress sparse kwrites pmfuzz markerdiff skipdiff", to go on after
##             one;
##             scripts/soak)
soak: deps tree
	@scripts/soak --$(or $(KERNEL),debug)

## demo        boot the release kernel and show exact write tracking at work
demo: kernel-release lib
	@$(MAKE) --no-print-directory $(T_BIN)/demo-lib
	@scripts/vm-run --timeout 300 --add $(T_BIN)/demo-lib -- ./demo-lib

## bench       release kernel; in guests under -icount: bench/pagemap_scan
##             (BENCH_ARGS="PAGES ROUNDS", default 32768 21), bench/arming
##             (arming cost, page tables, first writes), bench/scaling
##             (get+reset vs range size, THP, hugetlb) and bench/ww_steps
##             (what a written page costs a harvest), bench/marker
##             (untouched 1-16 GiB: arming, empty harvest, first writes),
##             bench/harvest (1 GiB touched and clean: the harvest with
##             the page-table skip on and off, 0 to 100 % of the tables
##             written);
##             BENCH_ICOUNT=0: wall clock; UPSTREAM=1: also on upstream
##             6.12, side by side; MARKER_OFF=1: bench/marker again on our
##             kernel booted with uffd_wp_pmd_marker=off, side by side;
##             SKIP_OFF=1: bench/harvest again booted with
##             uffd_wp_harvest_skip=off; BENCH_SCAN_ONLY=1: pagemap_scan
##             and ww_steps only; BENCH_ONLY=harvest,marker: those only.
##             Tables, *.dat and gnuplot *.svg in build/bench/
##             (scripts/bench)
BENCH_ARGS ?=
BENCH_ICOUNT ?= 1
BENCH_SCAN_ONLY ?= 0
BENCH_ONLY ?=
UPSTREAM ?= 0
MARKER_OFF ?= 0
SKIP_OFF ?= 0
bench: kernel-release bench-programs
	@scripts/bench $(if $(filter 1,$(UPSTREAM)),--upstream) \
		$(if $(filter 1,$(MARKER_OFF)),--marker-off) \
		$(if $(filter 1,$(SKIP_OFF)),--skip-off) \
		$(if $(BENCH_ONLY),--only $(BENCH_ONLY)) \
		$(if $(filter 1,$(BENCH_ICOUNT)),,--wall) \
		$(if $(filter 1,$(BENCH_SCAN_ONLY)),--scan-only) -- $(BENCH_ARGS)

## clean       remove test and library objects (keeps the kernel tree and builds)
clean: $(if $(wildcard lib/lib.mk),lib-clean)
	rm -rf $(BUILD)/tests $(BUILD)/demo $(BUILD)/initramfs $(BUILD)/vm

## distclean   remove build/ entirely (the kernel tree too: commit and `make export-patches` first)
distclean:
	rm -rf $(BUILD)
