# libmemwatch and the memwatch CLI: a fragment the top-level Makefile
# includes.  Everything it builds lands under build/.
#   make lib         build/lib/libmemwatch.{a,so.1} and build/tools/memwatch
#   make lib-archives  the static archives the test programs link:
#                    libmemwatch.a and libmemwatch-san.a (ASan+UBSan)
#   make lib-test-programs  builds the test programs (make tests:
#                    scripts/build-tests builds all of them, the library's
#                    too) and checks the installed header on stock headers
#                    and the exported symbols; lib-tests: its old name
#   make lib-bench   bench/ww_output_cost (the three outputs of a get) in a
#                    release-kernel guest under -icount; LIB_BENCH_ARGS
#                    "PAGES ROUNDS BACKEND", LIB_BENCH_KBUILD for another
#                    kernel build directory (e.g. build/kernel-upstream)
#   make install     DESTDIR, PREFIX (default /usr/local)
#   make lib-clean
# Variables are MW_-prefixed so they never clash with the includer's.

MW_SRCDIR := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
MW_ROOT := $(abspath $(MW_SRCDIR)/..)
MW_OUT := $(MW_ROOT)/build
MW_LIBOUT := $(MW_OUT)/lib

MW_VERSION := 1.1.0
MW_SOVERSION := 1
MW_CC ?= gcc
MW_CFLAGS ?= -O2 -g
MW_WARN := -std=c11 -Wall -Wextra -Werror
MW_CPPFLAGS := -I$(MW_SRCDIR)/include -I$(MW_SRCDIR)/src
MW_SAN := -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined

PREFIX ?= /usr/local
MW_PREFIX := $(PREFIX)
MW_LIBDIR ?= $(MW_PREFIX)/lib
MW_INCDIR ?= $(MW_PREFIX)/include
MW_BINDIR_INST ?= $(MW_PREFIX)/bin
MW_MANDIR ?= $(MW_PREFIX)/share/man
MW_PCDIR ?= $(MW_LIBDIR)/pkgconfig

MW_SRCS := $(wildcard $(MW_SRCDIR)/src/*.c)
MW_HDRS := $(MW_SRCDIR)/include/memwatch.h $(wildcard $(MW_SRCDIR)/src/*.h)
MW_MAP := $(MW_SRCDIR)/src/libmemwatch.map
MW_OBJ_PIC := $(patsubst $(MW_SRCDIR)/src/%.c,$(MW_LIBOUT)/obj/pic/%.o,$(MW_SRCS))
MW_OBJ_STATIC := $(patsubst $(MW_SRCDIR)/src/%.c,$(MW_LIBOUT)/obj/static/%.o,$(MW_SRCS))
MW_OBJ_SAN := $(patsubst $(MW_SRCDIR)/src/%.c,$(MW_LIBOUT)/obj/san/%.o,$(MW_SRCS))
MW_SO := $(MW_LIBOUT)/libmemwatch.so.$(MW_SOVERSION)
MW_A := $(MW_LIBOUT)/libmemwatch.a
MW_A_SAN := $(MW_LIBOUT)/libmemwatch-san.a
MW_PC := $(MW_LIBOUT)/memwatch.pc
MW_CLI := $(MW_OUT)/tools/memwatch
MW_MANS := $(wildcard $(MW_SRCDIR)/man/*.1 $(MW_SRCDIR)/man/*.3 $(MW_SRCDIR)/man/*.7)

.PHONY: lib lib-archives lib-test-programs lib-tests lib-clean install lib-install \
	lib-check-header lib-check-symbols lib-bench

## lib         libmemwatch (build/lib/libmemwatch.{a,so.1}, memwatch.pc) and
##             the memwatch CLI (build/tools/memwatch)
lib: $(MW_A) $(MW_SO) $(MW_PC) $(MW_CLI)
## lib-archives  the static archives the test programs link (libmemwatch.a,
##             libmemwatch-san.a with ASan+UBSan)
lib-archives: $(MW_A) $(MW_A_SAN)

$(MW_LIBOUT)/obj/pic/%.o: $(MW_SRCDIR)/src/%.c $(MW_HDRS)
	@mkdir -p $(@D)
	$(MW_CC) $(MW_WARN) $(MW_CFLAGS) $(MW_CPPFLAGS) -fPIC -c -o $@ $<

$(MW_LIBOUT)/obj/static/%.o: $(MW_SRCDIR)/src/%.c $(MW_HDRS)
	@mkdir -p $(@D)
	$(MW_CC) $(MW_WARN) $(MW_CFLAGS) $(MW_CPPFLAGS) -c -o $@ $<

$(MW_LIBOUT)/obj/san/%.o: $(MW_SRCDIR)/src/%.c $(MW_HDRS)
	@mkdir -p $(@D)
	$(MW_CC) $(MW_WARN) -O1 -g $(MW_SAN) $(MW_CPPFLAGS) -c -o $@ $<

# The static archives hold one object, partially linked from all of them,
# with the hidden (internal mw_*) symbols made local: a program linking
# libmemwatch.a sees only the memwatch_* API, as with the shared library.
$(MW_A): $(MW_OBJ_STATIC)
	@rm -f $@ $(@:.a=.o)
	ld -r -o $(@:.a=.o) $^
	objcopy --localize-hidden $(@:.a=.o)
	ar rcs $@ $(@:.a=.o)

$(MW_A_SAN): $(MW_OBJ_SAN)
	@rm -f $@ $(@:.a=.o)
	ld -r -o $(@:.a=.o) $^
	objcopy --localize-hidden $(@:.a=.o)
	ar rcs $@ $(@:.a=.o)

## lib-check-symbols  fails if either library exports a symbol outside the API
lib-check-symbols: $(MW_A) $(MW_SO)
	@bad=$$( { nm -g --defined-only $(MW_A); nm -D --defined-only $(MW_SO); } | \
		awk 'NF == 3 && $$3 !~ /^memwatch_/ && $$3 !~ /^MEMWATCH_/ { print $$3 }'); \
	if [ -n "$$bad" ]; then \
		echo "lib.mk: libmemwatch exports internal symbols:" $$bad >&2; exit 1; \
	fi

$(MW_SO): $(MW_OBJ_PIC) $(MW_MAP)
	$(MW_CC) -shared -Wl,-soname,libmemwatch.so.$(MW_SOVERSION) \
		-Wl,--version-script=$(MW_MAP) -Wl,-z,defs -o $@ $(MW_OBJ_PIC) -lpthread
	ln -sf libmemwatch.so.$(MW_SOVERSION) $(MW_LIBOUT)/libmemwatch.so

# The uninstalled copy; install writes its own for the PREFIX given then.
$(MW_PC): $(MW_SRCDIR)/memwatch.pc.in
	@mkdir -p $(@D)
	sed -e 's|@PREFIX@|$(MW_PREFIX)|' -e 's|@LIBDIR@|$(MW_LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(MW_INCDIR)|' -e 's|@VERSION@|$(MW_VERSION)|' $< >$@

$(MW_CLI): $(MW_ROOT)/tools/memwatch.c $(MW_A) $(MW_SRCDIR)/include/memwatch.h
	@mkdir -p $(@D)
	$(MW_CC) $(MW_WARN) $(MW_CFLAGS) -I$(MW_SRCDIR)/include -o $@ $< $(MW_A) -lpthread

## lib-test-programs  builds the test programs (make tests) and checks the
##             installed header on stock headers and the exported symbols
##             (lib-check-header, lib-check-symbols); the tests run in make
##             check (lib-tests: its old name, still accepted)
lib-test-programs lib-tests: tests lib-check-header lib-check-symbols

# libmemwatch's outputs measured side by side (lib/README.md).
MW_BENCH := $(MW_OUT)/bench/ww_output_cost
LIB_BENCH_ARGS ?=
LIB_BENCH_KBUILD ?=
$(MW_BENCH): $(MW_ROOT)/bench/ww_output_cost.c $(MW_A) $(MW_SRCDIR)/include/memwatch.h \
		$(MW_ROOT)/bench/bench.h $(MW_ROOT)/tests/include/mw-test.h
	@mkdir -p $(@D)
	$(MW_CC) $(MW_WARN) -O2 -static -I$(MW_SRCDIR)/include -I$(MW_ROOT)/tests/include \
		-o $@ $< $(MW_A) -lpthread
## lib-bench   bench/ww_output_cost (the three outputs of a get) in a release
##             guest under -icount (LIB_BENCH_ARGS, LIB_BENCH_KBUILD)
lib-bench: $(MW_BENCH)
	$(if $(LIB_BENCH_KBUILD),MEMWATCH_KBUILD=$(abspath $(LIB_BENCH_KBUILD)),) \
		$(MW_ROOT)/scripts/vm-run --release --icount --timeout 3600 \
		--add $(MW_BENCH) -- ./ww_output_cost $(LIB_BENCH_ARGS)

## lib-check-header  memwatch.h builds on stock headers with -pedantic
lib-check-header: $(MW_LIBOUT)/header-check.o
$(MW_LIBOUT)/header-check.o: $(MW_SRCDIR)/include/memwatch.h
	@mkdir -p $(@D)
	printf '#include <memwatch.h>\nint main(void) { return 0; }\n' | \
		$(MW_CC) -std=c11 -Wall -Wextra -pedantic -Werror \
		-I$(MW_SRCDIR)/include -x c -c -o $@ -

## install     libmemwatch, memwatch.h, memwatch.pc, the CLI and the man pages
##             (PREFIX, default /usr/local; DESTDIR; lib-install: the same)
install: lib-install
lib-install: lib
	install -d $(DESTDIR)$(MW_INCDIR) $(DESTDIR)$(MW_LIBDIR) \
		$(DESTDIR)$(MW_PCDIR) $(DESTDIR)$(MW_BINDIR_INST) \
		$(DESTDIR)$(MW_MANDIR)/man1 $(DESTDIR)$(MW_MANDIR)/man3 \
		$(DESTDIR)$(MW_MANDIR)/man7
	install -m 644 $(MW_SRCDIR)/include/memwatch.h $(DESTDIR)$(MW_INCDIR)/
	install -m 755 $(MW_SO) $(DESTDIR)$(MW_LIBDIR)/libmemwatch.so.$(MW_VERSION)
	ln -sf libmemwatch.so.$(MW_VERSION) $(DESTDIR)$(MW_LIBDIR)/libmemwatch.so.$(MW_SOVERSION)
	ln -sf libmemwatch.so.$(MW_SOVERSION) $(DESTDIR)$(MW_LIBDIR)/libmemwatch.so
	install -m 644 $(MW_A) $(DESTDIR)$(MW_LIBDIR)/
	sed -e 's|@PREFIX@|$(MW_PREFIX)|' -e 's|@LIBDIR@|$(MW_LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(MW_INCDIR)|' -e 's|@VERSION@|$(MW_VERSION)|' \
	    $(MW_SRCDIR)/memwatch.pc.in >$(DESTDIR)$(MW_PCDIR)/memwatch.pc
	install -m 755 $(MW_CLI) $(DESTDIR)$(MW_BINDIR_INST)/
	for m in $(MW_MANS); do \
		s=$${m##*.}; install -m 644 $$m $(DESTDIR)$(MW_MANDIR)/man$$s/; \
	done

## lib-clean   removes build/lib and build/tools (make clean does too)
lib-clean:
	rm -rf $(MW_LIBOUT) $(MW_OUT)/tools
