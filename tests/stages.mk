# The stages of `make check`, included by the top-level Makefile.  Each
# stage is one target, stage-NAME: its prerequisites are the build steps
# it needs (the Makefile's kernel-*, *-build, tests, initramfs), its
# recipe one call of scripts/check (--stage for a host driver, --guest for
# one of the four suite guests).  make check runs them under make -j, so a
# stage starts as soon as what it needs is built, beside the builds still
# running; its output goes to build/tests/check.log.NAME, and the report
# at the end prints every stage's in the order of CHECK_STAGES (this
# file's order), then the total.  A new stage: tests/NAME/ and one entry
# here (tests/README.md, "Adding a stage").
#
# $(STAGE) NAME POINTS LABEL CMD ARGS: POINTS is how many points the
# stage must print (0 when the count follows from the run).

STAGE = @scripts/check --stage
GUEST = @scripts/check --guest
CHECK_STAGES :=

# The self-test checks vm-run and run-suites, the same for every kernel:
# on the release kernel, which boots several times faster than the debug one.
CHECK_STAGES += selftest
stage-selftest: kernel-release initramfs
	$(STAGE) selftest 14 "harness self-test (host side: vm-run and run-suites must catch failures)" \
		tests/harness/selftest --release

CHECK_STAGES += quilt
stage-quilt: tree
	$(STAGE) quilt 3 "quilt: kernel/patches/series applies to Debian's linux-source-6.1 as is, its README lists the headers" \
		scripts/check-quilt

# The release kernel as Debian packages (scripts/build-kernel made them
# from build/linux, which the quilt stage proves equal to the series
# applied to the tarball); the release guests boot the packaged kernel.
CHECK_STAGES += deb
stage-deb: kernel-release
	$(STAGE) deb 9 "the release kernel's packages (contents, scratch install, packaged uapi, the packaged kernel boots)" \
		scripts/check-deb --config test

# The four suite guests (scripts/check --guest).  The reference kernels'
# Debian configs run single-threaded TCG (doc/harness.md, "The
# accelerator"): a guest of theirs takes one core.
CHECK_STAGES += debug
stage-debug: kernel-debug tests $(if $(wildcard lib/lib.mk),lib-test-programs) initramfs
	$(GUEST) debug
CHECK_STAGES += release
stage-release: kernel-release tests initramfs
	$(GUEST) release
CHECK_STAGES += pristine
stage-pristine: pristine-kernel tests initramfs
	$(GUEST) pristine
CHECK_STAGES += upstream
stage-upstream: upstream-kernel tests initramfs
	$(GUEST) upstream

# The CLI's JSON of three of those guests, parsed on the host by Python's
# json module (an independent parser; the guests print it in hex).
CHECK_STAGES += cli-json
stage-cli-json: stage-debug stage-pristine stage-upstream
	$(STAGE) cli-json 51 "memwatch scan --json of the three guests, checked on the host" \
		tests/cli/json-check $(BUILD)/tests/check.log.debug $(BUILD)/tests/check.log.pristine \
		$(BUILD)/tests/check.log.upstream

CHECK_STAGES += criu
stage-criu: kernel-release pristine-kernel upstream-kernel criu-build initramfs
	$(STAGE) criu 0 "CRIU 4.2 on the patched, the pristine and the upstream kernel" \
		tests/criu/run --release

CHECK_STAGES += wine
stage-wine: kernel-release pristine-kernel upstream-kernel wine-build initramfs
	$(STAGE) wine 24 "Wine 11.0 on the patched, the upstream and the pristine kernel" \
		tests/wine/run

CHECK_STAGES += bdwgc
stage-bdwgc: kernel-release pristine-kernel upstream-kernel wine-build bdwgc-build initramfs
	$(STAGE) bdwgc 0 "bdwgc (Boehm GC) in incremental mode on the patched, the upstream and the pristine kernel" \
		tests/bdwgc/run

# CONFORMANCE_SEEDS (default 1-20) in two batches of guests; make
# conformance runs 1-40.
CHECK_STAGES += conformance
stage-conformance: kernel-debug upstream-kernel tests initramfs
	$(STAGE) conformance 0 "differential conformance against upstream 6.12" \
		tests/conformance/run --debug --seeds "$(or $(CONFORMANCE_SEEDS),1-20)" --steps 20 --batch 18

CHECK_STAGES += pmfuzz-selftest
stage-pmfuzz-selftest:
	$(STAGE) pmfuzz-selftest 7 "pmfuzz-diff self-test (host side: the trace comparison can fail)" \
		tests/pmfuzz/run --self-test

# PMFUZZ_DIFF_SEEDS (default 1-6), 800 calls each.
CHECK_STAGES += pmfuzz-diff
stage-pmfuzz-diff: kernel-debug upstream-kernel tests initramfs
	$(STAGE) pmfuzz-diff 0 "differential fuzz against upstream 6.12 (pmfuzz --diff)" \
		tests/pmfuzz/run --debug --seeds "$(or $(PMFUZZ_DIFF_SEEDS),1-6)" --calls 800

# The order the builds are made in, when make check makes them: the
# release kernel first and alone (most stages need it, and its guests run
# while the debug kernel and Wine build beside them), then those two side
# by side.  Built all at once they would all end together, late, with
# every guest still to run.
ifneq ($(filter check-stages,$(MAKECMDGOALS)),)
kernel-debug wine-build: | kernel-release
endif

.PHONY: check-stages $(addprefix stage-,$(CHECK_STAGES))
# The longest stages first, among those ready to start (make takes the
# prerequisites in order); the report keeps the order of CHECK_STAGES.
check-stages: stage-debug stage-bdwgc stage-criu $(addprefix stage-,$(CHECK_STAGES))
