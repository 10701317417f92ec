//! The embedding example (examples/embed.rs) hosts a real extension
//! through the library's public API and calls its tool.

mod common;

use common::TempDir;
use std::path::Path;
use std::process::Command;

#[test]
fn a_program_of_ones_own_hosts_an_extension_in_thirty_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let built = Command::new(cargo).args(["build", "--examples", "--quiet"]).current_dir(root).status().expect("cargo");
    assert!(built.success());
    let source = std::fs::read_to_string(root.join("examples/embed.rs")).expect("examples/embed.rs");
    assert!(source.lines().count() <= 30, "the example stays small");
    let t = TempDir::new("embed");
    let out = Command::new(root.join("target/debug/examples/embed"))
        .args(["examples/rust/weather", "weather", r#"{"city":"Oslo"}"#])
        .current_dir(root)
        .env("ZOT_HOME", t.path())
        .output()
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [
            r#"ready: ["weather"], errors: []"#,
            "tool weather (weather): Get current weather for a city.",
            r#"weather → [{"text":"Oslo: sunny, 21°C (fake)","type":"text"}]"#,
        ]
    );
}
