//! The `zot` binary: everything lives in the library (`zot_host::cli_main`).

fn main() {
    std::process::exit(zot_host::cli_main())
}
