# zot: build, test, demo, install.
PREFIX ?= /usr/local
DESTDIR ?=
CARGO ?= cargo
DEMO_EXTS = --ext examples/rust/weather --ext examples/rust/guard --ext examples/python/notes --ext examples/shell/greet

.PHONY: all build test lint demo install uninstall clean

all: build

build:
	$(CARGO) build --release

# The Rust example extensions are real processes in the tests.
test:
	$(CARGO) build --examples --quiet
	$(CARGO) test --quiet -- --test-threads=4

lint:
	$(CARGO) clippy --all-targets -- -D warnings

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
