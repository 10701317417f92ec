# zot: build, test, demo, install.
PREFIX ?= /usr/local
DESTDIR ?=
CARGO ?= cargo
DEMO_EXTS = --ext examples/rust/weather --ext examples/rust/guard --ext examples/python/notes --ext examples/shell/greet

.PHONY: all build test lint demo install uninstall clean soak bench

all: build

build:
	$(CARGO) build --release

# The Rust example extensions are real processes in the tests.
test:
	$(CARGO) build --examples --quiet
	$(CARGO) test --quiet -- --test-threads=4

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
# one run; prints a markdown table with every target's pass/miss, writes
# target/bench.json. Under 3 minutes.
bench:
	$(CARGO) build --release --examples --bin zot
	./target/release/examples/bench

# An interactive session on the bundled examples (Rust, Python, shell).
demo:
	$(CARGO) build --quiet --bin zot --examples
	ZOT_HOME=$${ZOT_HOME:-$(CURDIR)/target/demo-home} ./target/debug/zot --no-ext $(DEMO_EXTS)

install: build
	install -d "$(DESTDIR)$(PREFIX)/bin"
	install -m 0755 target/release/zot "$(DESTDIR)$(PREFIX)/bin/zot"

uninstall:
	rm -f "$(DESTDIR)$(PREFIX)/bin/zot"

clean:
	$(CARGO) clean
