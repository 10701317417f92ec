//! The layer check (`.ci/layers`): no cycle between the top-level modules
//! of src/, and the check itself on small trees made for it, each rule with
//! its control (the same tree without the cycle, the same allow-list entry
//! on a real cycle).

mod common;

use common::TempDir;
use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Runs the check on `src`, with `allow` as its allow-list when given:
/// (exit code, stdout).
fn layers(src: &Path, allow: Option<&Path>, edges: bool) -> (Option<i32>, String) {
    let mut cmd = Command::new(Path::new(ROOT).join(".ci/layers"));
    if edges {
        cmd.arg("--edges");
    }
    cmd.arg(src);
    if let Some(a) = allow {
        cmd.env("LAYERS_ALLOW", a);
    }
    let out = cmd.output().expect("run .ci/layers");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.code(), stdout + &String::from_utf8_lossy(&out.stderr))
}

/// A src/ of `files` (path, text) in `t`.
fn tree(t: &TempDir, files: &[(&str, &str)]) -> std::path::PathBuf {
    let src = t.path().join("src");
    for (path, text) in files {
        let p = src.join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, text).expect("write");
    }
    src
}

#[test]
fn the_modules_of_src_form_no_cycle() {
    let (code, out) = layers(&Path::new(ROOT).join("src"), None, false);
    assert_eq!(code, Some(0), "{out}");
}

#[test]
fn a_cycle_between_modules_fails_and_is_named() {
    let t = TempDir::new("layers-cycle");
    let files = [
        ("lib.rs", "mod a;\nmod b;\npub const VERSION: &str = \"1\";\n"),
        ("a.rs", "use crate::b::x;\nfn f() { crate::VERSION; }\n"),
        ("b/mod.rs", "pub fn x() {}\n"),
        ("b/deep.rs", "// crate::a in a comment is no edge\nfn g() { crate::a::h() }\n"),
    ];
    let src = tree(&t, &files);
    let (code, out) = layers(&src, Some(Path::new("/dev/null")), true);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(out, "a -> b\nb -> a\ncycle: a -> b, b -> a\n");
    // Control: without the path back from b, the same tree passes.
    std::fs::write(src.join("b/deep.rs"), "// crate::a in a comment is no edge\nfn g() {}\n").expect("write");
    let (code, out) = layers(&src, Some(Path::new("/dev/null")), true);
    assert_eq!((code, out.as_str()), (Some(0), "a -> b\n"));
}

#[test]
fn an_allow_listed_edge_that_closes_no_cycle_fails() {
    let t = TempDir::new("layers-allow");
    let src = tree(&t, &[("a.rs", "use crate::b;\n"), ("b.rs", "use crate::c;\n"), ("c.rs", "use crate::a;\n")]);
    let allow = t.path().join("allow");
    // A listed edge of the cycle lets it pass.
    std::fs::write(&allow, "# being broken\nc -> a  # on a branch\n").expect("write");
    let (code, out) = layers(&src, Some(&allow), false);
    assert_eq!(code, Some(0), "{out}");
    // Control: the cycle gone, the entry is stale and the check fails.
    std::fs::write(src.join("c.rs"), "").expect("write");
    let (code, out) = layers(&src, Some(&allow), false);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("stale: c -> a"), "{out}");
    // So is an edge that exists but is on no cycle.
    std::fs::write(&allow, "a -> b\n").expect("write");
    let (code, out) = layers(&src, Some(&allow), false);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("stale: a -> b"), "{out}");
}
