# zot: build, test, demo, install.
PREFIX ?= /usr/local
DESTDIR ?=
CARGO ?= cargo
# The binary `make install` copies; INSTALL_DEPS= skips the release build
# (the tests install a debug binary that way). ZOT_GEN is the program run to
# write the man page and the completions: the binary itself, unless it
# cannot run on this machine (a cross-built one), then a native build of the
# same source: make install INSTALL_DEPS= ZOT_BIN=path/to/cross/zot
# ZOT_GEN=target/release/zot.
ZOT_BIN ?= target/release/zot
ZOT_GEN ?= $(ZOT_BIN)
INSTALL_DEPS ?= build
MAN1DIR = $(PREFIX)/share/man/man1
BASHDIR = $(PREFIX)/share/bash-completion/completions
ZSHDIR = $(PREFIX)/share/zsh/site-functions
FISHDIR = $(PREFIX)/share/fish/vendor_completions.d
DEMO_EXTS = --ext examples/rust/weather --ext examples/rust/guard --ext examples/python/notes --ext examples/shell/greet

.PHONY: all build test lint demo install uninstall clean soak bench

all: build

build:
	$(CARGO) build --release

# The Rust example extensions are real processes in the tests. Every test
# binary runs, cargo's output is kept and followed by one total line
# "N passed, N failed, N skipped" (.ci/test-total); on a failure the recipe
# exits with cargo's status, which make reports ("Error 101") before it
# exits 2 itself, as make does for any failed recipe.
# The build without the default features (no remote servers, no HTTP or TLS
# crates) is built and its unit tests run first, so it cannot rot unseen.
test:
	@echo "make test: building zot without its default features, then with them and the example extensions (the first build takes about two minutes on 2 cores)"
	$(CARGO) build --no-default-features
	$(CARGO) test --quiet --no-default-features --lib
	$(CARGO) build --examples
	@echo "make test: running every test file (5 to 8 minutes on 2 cores); each block of dots follows the file's name"
	CARGO="$(CARGO)" .ci/test-total

lint:
	$(CARGO) clippy --all-targets -- -D warnings

# A long soak (tests/soak.rs) in release: mixed calls from several threads
# while extensions crash and the host reloads; prints calls, crashes,
# reloads, threads and fds before/after. 100000 calls, or ZOT_SOAK_CALLS=N
# calls, or ZOT_SOAK_SECS=N seconds.
soak:
	if [ -z "$$ZOT_SOAK_SECS" ]; then export ZOT_SOAK_CALLS=$${ZOT_SOAK_CALLS:-100000}; fi; \
	$(CARGO) test --release --test soak -- --nocapture

# Benchmarks (examples/bench/, std only): the in-process host against the
# raw-pipe floor, and `zot serve` against a relay floor, each interleaved in
# one run, and a remote MCP server through `zot serve` against the Python
# SDK's client (target/mcp-venv; skipped, saying so, without it); prints a
# markdown table with every target's pass/miss, writes target/bench.json.
# Under 4 minutes.
bench:
	$(CARGO) build --release --examples --bin zot
	./target/release/examples/bench

# An interactive session on the bundled examples (Rust, Python, shell).
demo:
	@echo "make demo: building zot and the example extensions (the first build takes about a minute on 2 cores)"
	$(CARGO) build --bin zot --examples
	ZOT_HOME=$${ZOT_HOME:-$(CURDIR)/target/demo-home} ./target/debug/zot --no-ext $(DEMO_EXTS)

# The man page and the completions are written by the binary itself
# (`zot man`, `zot completions SHELL`, run as ZOT_GEN), from the same tables
# as its parser.
install: $(INSTALL_DEPS)
	install -d "$(DESTDIR)$(PREFIX)/bin" "$(DESTDIR)$(MAN1DIR)" "$(DESTDIR)$(BASHDIR)" \
		"$(DESTDIR)$(ZSHDIR)" "$(DESTDIR)$(FISHDIR)"
	install -m 0755 "$(ZOT_BIN)" "$(DESTDIR)$(PREFIX)/bin/zot"
	"$(ZOT_GEN)" man > "$(DESTDIR)$(MAN1DIR)/zot.1"
	"$(ZOT_GEN)" completions bash > "$(DESTDIR)$(BASHDIR)/zot"
	"$(ZOT_GEN)" completions zsh > "$(DESTDIR)$(ZSHDIR)/_zot"
	"$(ZOT_GEN)" completions fish > "$(DESTDIR)$(FISHDIR)/zot.fish"
	chmod 0644 "$(DESTDIR)$(MAN1DIR)/zot.1" "$(DESTDIR)$(BASHDIR)/zot" \
		"$(DESTDIR)$(ZSHDIR)/_zot" "$(DESTDIR)$(FISHDIR)/zot.fish"

uninstall:
	rm -f "$(DESTDIR)$(PREFIX)/bin/zot" "$(DESTDIR)$(MAN1DIR)/zot.1" "$(DESTDIR)$(BASHDIR)/zot" \
		"$(DESTDIR)$(ZSHDIR)/_zot" "$(DESTDIR)$(FISHDIR)/zot.fish"

clean:
	$(CARGO) clean
