# terp: plain GNU make. `make` builds ./terp, `make check` runs every
# test (C unit tests under ASan+UBSan, then pytest on the real binary),
# `make demo` runs the main job. V=1 shows the commands.
#
# The documented targets (make, demo, check, unit, integration, bench,
# fuzz) first install the Debian packages they need when some are missing
# (scripts/deps.sh), then run a second make for the work: pkg-config's
# answers below are read when a make starts, so only a make started after
# the install sees the libraries. The steps of each run in order, also
# under -j (the second make gets the job slots: $(MAKE) must appear
# literally in its recipe line for that).

PREFIX	?= /usr/local
BINDIR	?= $(PREFIX)/bin
MANDIR	?= $(PREFIX)/share/man
DATADIR	?= $(PREFIX)/share/terp
# the shell completions, where bash-completion, zsh and fish look
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
DESTDIR	?=
# pytest's python: the first of python3 on PATH and /usr/bin/python3 that has
# what the tests import (deps.sh installs them for Debian's), chosen when
# a recipe runs (after need-deps), not when the Makefile is read.
PYTHON	?= $(or $(firstword $(foreach p,python3 /usr/bin/python3,$(shell $(p) -c \
	   'import pytest, matplotlib, nbformat, sys; print(sys.executable)' 2>/dev/null))),python3)

CC	?= cc
PKGS	:= ncursesw libcurl libcjson libpng zlib libseccomp readline
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# wslay (WebSocket framing, src/net/ws.c): Debian ships no pkg-config file.
# libcurl is not linked: src/net/curl_lazy.c loads it at its first use
# (its libraries cost every start, and `terp exec` does not use it).
PKG_LIBS   := $(filter-out -lcurl,$(shell pkg-config --libs $(PKGS) 2>/dev/null)) \
	      -lwslay -ldl -lpthread

WARN	:= -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	   -Wno-unused-parameter
CFLAGS	?= -O2 -g
T_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) -Iinclude -Ibuild/gen $(PKG_CFLAGS) \
	    -DTERP_DATADIR='"$(DATADIR)"'
T_LIBS	:= $(PKG_LIBS) -lm

SAN	:= -fsanitize=address,undefined -fno-omit-frame-pointer \
	   -fno-sanitize-recover=undefined

# Sources by layer folder (README's Layout): src/main.c, src/LAYER/*.c and
# the kernel backends' own folders, src/kernel/BACKEND/*.c.
SRCS	:= $(sort $(wildcard src/*.c src/*/*.c src/*/*/*.c))
OBJS	:= $(SRCS:src/%.c=build/obj/%.o)
LIBOBJS	:= $(filter-out build/obj/main.o,$(OBJS))
SANOBJS	:= $(LIBOBJS:build/obj/%=build/san/%)
UNIT	:= $(sort $(wildcard tests/unit/*.c))
THEMES	:= $(sort $(wildcard themes/*.theme))
GEN	:= build/gen/driver_py.h build/gen/egress_fwd_py.h build/gen/themes.h \
	   build/gen/seccomp_bpf.h

ifeq ($(V),1)
Q :=
else
Q := @
endif

.PHONY: all check unit integration demo bench install uninstall clean deps \
	fuzz run-unit run-integration have-libs have-criterion

# A recipe that fails leaves no half-written target behind (a failed link
# would otherwise leave a ./terp that the next make takes as built).
.DELETE_ON_ERROR:
# The generated headers are prerequisites of a pattern rule, which makes
# them intermediate: make would delete them after each build, and the
# next build would remake them. They are order-only prerequisites: the
# compiler's dependency files (-MMD) name the objects that include them.
.SECONDARY: $(GEN)

ENTRY	:= all demo check unit integration bench fuzz deps
ifneq ($(filter $(ENTRY),$(or $(MAKECMDGOALS),all)),)
# `make -j demo check` must not install packages twice at once nor build
# ./terp in two makes at once: goals run one after the other; each second
# make still builds in parallel.
.NOTPARALLEL:
endif

all:
	$(Q)sh scripts/deps.sh --if-missing build
	$(Q)$(MAKE) --no-print-directory terp

# Without the libraries (a direct `make terp` or `make install` on a fresh
# machine) stop with one line, before the compiler's pages of errors.
have-libs:
	@pkg-config --exists $(PKGS) 2>/dev/null && echo '#include <wslay/wslay.h>' | \
	$(CC) -E -x c - >/dev/null 2>&1 || \
	{ echo "terp: the libraries to build with are missing (pkg-config: $(PKGS); \
	wslay); run make deps, or make, which installs them" >&2; exit 1; }

have-criterion:
	@pkg-config --exists criterion 2>/dev/null || { echo "terp: criterion \
	is missing (the unit tests' library); run make unit, which installs it, \
	or make deps" >&2; exit 1; }

# The Python that runs inside the sandbox, as C arrays named after the
# file (driver_py, egress_fwd_py), and each one's SHA-256 (the driver's
# names its compiled code's cache file, kernel_code.h).
vpath %.py src/kernel/local src/egress
build/gen/%_py.h: %.py
	@mkdir -p $(dir $@)
	$(Q){ echo 'static const unsigned char $*_py[] = {'; \
	  od -An -v -tx1 $< | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '};'; \
	  echo "static const char $*_py_sha256[] __attribute__((unused)) = \"$$(sha256sum < $< | cut -c1-64)\";"; \
	  } > $@.tmp && mv $@.tmp $@

# The shipped themes, built in (tui_theme.c): a theme works from any
# folder without make install. One byte array per file, then a table.
build/gen/themes.h: $(THEMES)
	@mkdir -p $(dir $@)
	$(Q){ i=0; for f in $(THEMES); do \
	  echo "static const unsigned char theme_file_$$i[] = {"; \
	  od -An -v -tx1 $$f | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '};'; i=$$((i + 1)); done; \
	  echo 'static const struct theme_shipped {'; \
	  echo '	const char *name; const unsigned char *text; size_t len;'; \
	  echo '} theme_shipped[] = {'; \
	  i=0; for f in $(THEMES); do n=$$(basename $$f .theme); \
	  echo "	{ \"$$n\", theme_file_$$i, sizeof theme_file_$$i },"; \
	  i=$$((i + 1)); done; \
	  echo '};'; } > $@.tmp && mv $@.tmp $@

# The seccomp programs, built once here (scripts/seccomp_gen.c). Where
# libseccomp cannot build them at build time the header is empty and
# terp builds them at every start, as it does when the library differs.
build/seccomp-gen: scripts/seccomp_gen.c src/sandbox/sandbox_filter.c src/base/util.c \
		include/terp/sandbox_filter.h | have-libs
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(T_CFLAGS) $(CFLAGS) -DTERP_SECCOMP_GEN -o $@ scripts/seccomp_gen.c \
	    src/sandbox/sandbox_filter.c src/base/util.c $(T_LIBS)

build/gen/seccomp_bpf.h: build/seccomp-gen
	@mkdir -p $(dir $@)
	$(Q)./build/seccomp-gen > $@.tmp || \
	  printf '#define SECCOMP_BUILT_VERSION 0\n#define SECCOMP_BUILT_API 0\n' > $@.tmp
	$(Q)mv $@.tmp $@

build/obj/%.o: src/%.c | $(GEN) have-libs
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(T_CFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

build/san/%.o: src/%.c | $(GEN) have-libs
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC-SAN  $<")
	$(Q)$(CC) $(T_CFLAGS) -O1 -g $(SAN) -MMD -MP -c -o $@ $<

# The sources that bake DATADIR in (-DTERP_DATADIR) are rebuilt when it
# changes: `make install PREFIX=/opt/x` after a build for /usr/local
# must not keep /usr/local/share/terp. The stamp holds the value and is
# rewritten only when it differs.
DATADIR_USERS := llm/llm_config tui/tui_theme
build/datadir.stamp: FORCE
	@mkdir -p build
	@echo '$(DATADIR)' | cmp -s - $@ || echo '$(DATADIR)' > $@
$(foreach u,$(DATADIR_USERS),build/obj/$(u).o build/san/$(u).o): build/datadir.stamp
FORCE:
.PHONY: FORCE

terp: $(OBJS)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(OBJS) $(T_LIBS)

build/unit-tests: $(UNIT) $(SANOBJS) | have-criterion
	@$(if $(Q),echo "  LD-SAN  $@")
	$(Q)$(CC) $(T_CFLAGS) -O1 -g $(SAN) -o $@ $(UNIT) $(SANOBJS) $(T_LIBS) \
	    $(shell pkg-config --libs criterion)

-include $(OBJS:.o=.d) $(SANOBJS:.o=.d)

# Installs every Debian package any target needs (apt-get; sudo when not
# root). The other targets install only their own group, when missing.
deps:
	$(Q)sh scripts/deps.sh all

unit:
	$(Q)sh scripts/deps.sh --if-missing check
	$(Q)$(MAKE) --no-print-directory run-unit

integration:
	$(Q)sh scripts/deps.sh --if-missing check
	$(Q)$(MAKE) --no-print-directory run-integration

check:
	$(Q)sh scripts/deps.sh --if-missing check
	$(Q)$(MAKE) --no-print-directory run-unit
	$(Q)$(MAKE) --no-print-directory run-integration

demo:
	$(Q)sh scripts/deps.sh --if-missing build
	$(Q)$(MAKE) --no-print-directory terp
	$(Q)sh scripts/demo.sh

bench:
	$(Q)sh scripts/deps.sh --if-missing bench
	$(Q)$(MAKE) --no-print-directory terp build/egress-bench
	$(Q)sh bench/run.sh

run-unit: build/unit-tests
	$(Q)ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    ./build/unit-tests --jobs 2

# The JSON printer the backend harnesses share, compiled into each one.
HARNESS_PRINT := tests/integration/harness_print.c tests/integration/harness_print.h

# The test programs of modules not in ./terp yet are built here, not by
# the tests themselves (one make at a time).
HARNESSES := build/egress-harness build/pyenv-harness build/aca-harness \
    build/jupyter-harness

run-integration: terp $(HARNESSES)
	$(Q)$(PYTHON) -m pytest -q tests/integration

install: terp
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(DATADIR)/themes
	install -m 755 terp $(DESTDIR)$(BINDIR)/terp
	install -m 644 man/terp.1 $(DESTDIR)$(MANDIR)/man1/terp.1
	install -m 644 examples/demo.json $(DESTDIR)$(DATADIR)/demo.json
	for t in themes/*.theme; do [ -e "$$t" ] || continue; \
	    install -m 644 "$$t" $(DESTDIR)$(DATADIR)/themes/; done
	install -d $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) \
	    $(DESTDIR)$(FISHCOMPDIR)
	install -m 644 completions/terp.bash $(DESTDIR)$(BASHCOMPDIR)/terp
	install -m 644 completions/_terp $(DESTDIR)$(ZSHCOMPDIR)/_terp
	install -m 644 completions/terp.fish $(DESTDIR)$(FISHCOMPDIR)/terp.fish

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/terp $(DESTDIR)$(MANDIR)/man1/terp.1
	rm -f $(DESTDIR)$(BASHCOMPDIR)/terp $(DESTDIR)$(ZSHCOMPDIR)/_terp \
	    $(DESTDIR)$(FISHCOMPDIR)/terp.fish
	rm -rf $(DESTDIR)$(DATADIR)

# libFuzzer targets (clang), one per parser of outside input. Run one
# with e.g. ./build/fuzz/fuzz_sse -max_total_time=60 tests/fuzz/corpus/sse
FUZZ	:= $(patsubst tests/fuzz/%.c,build/fuzz/%,$(wildcard tests/fuzz/*.c))
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -Iinclude -Ibuild/gen $(PKG_CFLAGS) -g -O1 \
	    -DTERP_DATADIR='"$(DATADIR)"'
FUZZOBJS := $(LIBOBJS:build/obj/%=build/fuzzobj/%)
# Named only in a pattern rule, they would be deleted after each link as
# intermediate files and all rebuilt after any change.
.SECONDARY: $(FUZZOBJS)

build/fuzzobj/%.o: src/%.c $(GEN) | have-libs
	@mkdir -p $(dir $@)
	$(Q)clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -c -o $@ $<

build/fuzz/%: tests/fuzz/%.c $(FUZZOBJS)
	@mkdir -p $(dir $@)
	$(Q)clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $< \
	    $(FUZZOBJS) $(T_LIBS)

fuzz:
	$(Q)sh scripts/deps.sh --if-missing fuzz
	$(Q)$(MAKE) --no-print-directory $(or $(FUZZ),have-libs)

clean:
	rm -rf build terp

# Number tracing benchmark (issue 11): us per cell indexed and per
# answer traced over 100 cells of 4 KB pandas-style output.
build/bench-numtrace: bench/numtrace.c $(LIBOBJS)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(T_CFLAGS) $(CFLAGS) -o $@ $< $(LIBOBJS) $(T_LIBS)

# Context budget benchmark (issue 11): us of bookkeeping per turn over a
# 100-question session in an 8k window (bench/context.c), with the
# conversation builder the context tests use (tests/unit/convo.c).
build/bench-context: bench/context.c tests/unit/convo.c tests/unit/convo.h $(LIBOBJS)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(T_CFLAGS) -Itests/unit $(CFLAGS) -o $@ $(filter %.c,$^) $(LIBOBJS) $(T_LIBS)

# libcurl's own cost of POSTing the same bodies terp sends, the peer of
# the per-question CPU row (bench/journal.py). Links curl directly (terp
# loads it at its first request).
build/bench-curlpost: bench/curlpost.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(T_CFLAGS) $(CFLAGS) -o $@ $< -lcurl

# The egress proxy alone (src/egress/egress.c) on a Unix socket, printing its
# ledger as JSON: built under ASan+UBSan for tests/integration/test_egress.py,
# optimised for bench/egress.py.
build/egress-harness: tests/integration/egress_harness.c $(HARNESS_PRINT) $(SANOBJS)
	@$(if $(Q),echo "  LD-SAN  $@")
	$(Q)$(CC) $(T_CFLAGS) -O1 -g $(SAN) -o $@ $(filter %.c,$^) $(SANOBJS) $(T_LIBS)

build/egress-bench: tests/integration/egress_harness.c $(HARNESS_PRINT) $(LIBOBJS)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(T_CFLAGS) $(CFLAGS) -o $@ $(filter %.c,$^) $(LIBOBJS) $(T_LIBS)

bench-egress: terp build/egress-bench
	$(Q)$(PYTHON) bench/egress.py

.PHONY: bench-egress

# The test driver of src/sandbox/pyenv.c (tests/integration/test_pyenv.py):
# resolves and probes an interpreter and prints the result as JSON.
build/pyenv-harness: tests/integration/pyenv_harness.c $(LIBOBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(T_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIBOBJS) $(T_LIBS)

# Start-up steps timed in-process (issue 14's diagnosis; bench/startup.c).
build/bench-startup: bench/startup.c $(LIBOBJS)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(T_CFLAGS) $(CFLAGS) -o $@ $< $(LIBOBJS) $(T_LIBS)

# LD_PRELOAD shim that lets terp run under valgrind (bench/vgshim.c).
build/vgshim.so: bench/vgshim.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -O2 -Wall -Wextra -shared -fPIC -o $@ $< -ldl

# The session pool backend alone (src/kernel/aca/kernel_aca.c) against tests/fake_aca.py,
# printing its callbacks as JSON: built under ASan+UBSan for
# tests/integration/test_aca.py.
build/aca-harness: tests/integration/aca_harness.c $(HARNESS_PRINT) $(SANOBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD-SAN  $@")
	$(Q)$(CC) $(T_CFLAGS) -O1 -g $(SAN) -o $@ $(filter %.c,$^) $(SANOBJS) $(T_LIBS)

# The Jupyter server backend alone (src/kernel/jupyter/kernel_jupyter.c), driven by
# commands on stdin and printing its callbacks as JSON lines: built under
# ASan+UBSan for tests/integration/test_jupyter.py, optimised for
# bench/jupyter_backend.py.
build/jupyter-harness: tests/integration/jupyter_harness.c $(HARNESS_PRINT) $(SANOBJS)
	@$(if $(Q),echo "  LD-SAN  $@")
	$(Q)$(CC) $(T_CFLAGS) -O1 -g $(SAN) -o $@ $(filter %.c,$^) $(SANOBJS) $(T_LIBS)

build/jupyter-bench: tests/integration/jupyter_harness.c $(HARNESS_PRINT) $(LIBOBJS)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(T_CFLAGS) $(CFLAGS) -o $@ $(filter %.c,$^) $(LIBOBJS) $(T_LIBS)
