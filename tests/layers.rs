//! The layer check (`.ci/layers`): no cycle between the top-level modules
//! of src/ nor between the files of any folder, and the check itself on
//! small trees made for it, each rule with its control (the same tree
//! without the cycle, the same allow-list entry on a real cycle).

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

#[test]
fn a_circle_between_the_files_of_a_folder_fails_and_is_named() {
    let t = TempDir::new("layers-folder");
    let files = [
        ("lib.rs", "mod f;\n"),
        ("f/mod.rs", "mod a;\nmod b;\nmod c;\n"),
        ("f/a.rs", "use super::b::X;\n"),
        ("f/b.rs", "pub struct X;\nfn g() { crate::f::c::h() }\n"),
        ("f/c.rs", "use super::{a, b::X};\npub fn h() {}\n"),
    ];
    let src = tree(&t, &files);
    let (code, out) = layers(&src, Some(Path::new("/dev/null")), true);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(
        out,
        "f/a -> f/b\nf/b -> f/c\nf/c -> f/a\nf/c -> f/b\nf/mod -> f/a\nf/mod -> f/b\nf/mod -> f/c\n\
         cycle: f/a -> f/b, f/b -> f/c, f/c -> f/a, f/c -> f/b\n"
    );
    // Control: c names neither, and the files stand in one order.
    std::fs::write(src.join("f/c.rs"), "pub fn h() {}\n").expect("write");
    let (code, out) = layers(&src, Some(Path::new("/dev/null")), false);
    assert_eq!((code, out.as_str()), (Some(0), ""));
}

#[test]
fn a_child_naming_an_item_of_its_folders_top_closes_a_circle_and_a_re_export_does_not() {
    let t = TempDir::new("layers-top");
    let files = [
        ("lib.rs", "mod f;\n"),
        ("f/mod.rs", "mod a;\nmod b;\npub use b::Shared;\npub struct Top;\n#[cfg(test)]\nmod tests;\n"),
        ("f/a.rs", "use super::Top;\n"),
        ("f/b.rs", "pub struct Shared;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n"),
        // A test of the folder may read all of it.
        ("f/tests.rs", "use super::*;\nuse crate::f::a;\n"),
    ];
    let src = tree(&t, &files);
    let (code, out) = layers(&src, Some(Path::new("/dev/null")), false);
    assert_eq!((code, out.as_str()), (Some(1), "cycle: f/a -> f/mod, f/mod -> f/a\n"));
    // Control: the same child names what mod.rs re-exports from b: the
    // edge goes to b, where it is written, and the folder passes.
    std::fs::write(src.join("f/a.rs"), "use super::Shared;\nfn g() -> crate::f::Shared { super::Shared }\n").expect("write");
    let (code, out) = layers(&src, Some(Path::new("/dev/null")), true);
    assert_eq!((code, out.as_str()), (Some(0), "f/a -> f/b\nf/mod -> f/a\nf/mod -> f/b\n"));
}

#[test]
fn a_sub_folder_is_one_node_of_its_folder() {
    let t = TempDir::new("layers-sub");
    let files = [
        ("lib.rs", "mod f;\n"),
        ("f/mod.rs", "mod a;\nmod d;\n"),
        ("f/a.rs", "use super::d::x;\n"),
        ("f/d/mod.rs", "pub mod x;\nmod y;\n"),
        ("f/d/x.rs", "use super::y::Y;\n"),
        ("f/d/y.rs", "pub struct Y;\nfn g() { super::super::a::h(); }\n"),
    ];
    let src = tree(&t, &files);
    let (code, out) = layers(&src, Some(Path::new("/dev/null")), false);
    assert_eq!((code, out.as_str()), (Some(1), "cycle: f/a -> f/d, f/d -> f/a\n"));
    // Control: without the path back up from deep inside d.
    std::fs::write(src.join("f/d/y.rs"), "pub struct Y;\n").expect("write");
    let (code, out) = layers(&src, Some(Path::new("/dev/null")), true);
    assert_eq!(
        (code, out.as_str()),
        (Some(0), "f/a -> f/d\nf/d/mod -> f/d/x\nf/d/mod -> f/d/y\nf/d/x -> f/d/y\nf/mod -> f/a\nf/mod -> f/d\n")
    );
}

#[test]
fn an_allow_listed_folder_passes_only_while_it_holds_a_circle() {
    let t = TempDir::new("layers-allow-folder");
    let files = [
        ("lib.rs", "mod f;\n"),
        ("f/mod.rs", "mod a;\nmod d;\n"),
        ("f/a.rs", ""),
        ("f/d/mod.rs", "mod x;\nmod y;\n"),
        ("f/d/x.rs", "use super::y::Y;\n"),
        ("f/d/y.rs", "pub struct Y;\nfn g() { super::x::h(); }\n"),
    ];
    let src = tree(&t, &files);
    let allow = t.path().join("allow");
    // The circle is in f/d; listing f/ (or f/d/) holds it, on stderr.
    std::fs::write(&allow, "f/   # being broken\n").expect("write");
    let (code, out) = layers(&src, Some(&allow), false);
    assert_eq!((code, out.as_str()), (Some(0), "allowed, being broken: cycle: f/d/x -> f/d/y, f/d/y -> f/d/x\n"));
    // Control: another folder listed, the circle fails.
    std::fs::write(&allow, "g/\n").expect("write");
    let (code, out) = layers(&src, Some(&allow), false);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("cycle: f/d/x -> f/d/y, f/d/y -> f/d/x"), "{out}");
    assert!(out.contains("stale: g/ is allow-listed"), "{out}");
    // The circle gone, the entry is stale: the list only shrinks.
    std::fs::write(src.join("f/d/y.rs"), "pub struct Y;\n").expect("write");
    std::fs::write(&allow, "f/d/\n").expect("write");
    let (code, out) = layers(&src, Some(&allow), false);
    assert_eq!((code, out.as_str()), (Some(1), "stale: f/d/ is allow-listed but has no cycle: remove it from the list\n"));
}
