//! The `zot` binary: everything lives in the library ([`zot::cli`]).

fn main() {
    std::process::exit(zot::cli::main())
}
