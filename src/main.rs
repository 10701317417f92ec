//! The `zot` binary: everything lives in the library (`zot::cli_main`).

fn main() {
    std::process::exit(zot::cli_main())
}
