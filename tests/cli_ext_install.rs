//! `zot ext install` end to end through the real binary: a local folder
//! or a manifest path, git, rollback of a failed install, the symlink
//! rules, what is skipped (build output, dependencies), and git's own
//! reason on a failed clone. Every test has its own `ZOT_HOME` and working
//! directory under the system temp dir.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;
#[path = "common/ext_world.rs"]
mod ext_world;
use ext_world::*;

#[test]
fn install_local_folder() {
    let w = World::new();
    let src = w.scratch.path().join("some-folder");
    write(
        &src.join("extension.json"),
        r#"{"name":"weather","version":"1.2.3","exec":"./weather.sh","language":"shell"}"#,
    );
    write(&src.join("weather.sh"), "#!/bin/sh\necho hi\n");
    chmod(&src.join("weather.sh"), 0o755);
    write(&src.join("data/notes.txt"), "private");
    chmod(&src.join("data/notes.txt"), 0o640);
    write(&src.join("data/deep/er/file"), "deep");
    chmod(&src.join("data/deep"), 0o750);
    write(&src.join(".hidden"), "dotfile");
    write(&src.join(".git/HEAD"), "ref: refs/heads/main\n");

    let out = w.ok(&["ext", "install", s(&src)]);
    let dest = w.ext_root().join("weather");
    assert_eq!(out, format!("installed weather 1.2.3 to {}\n", dest.display()));
    assert_eq!(w.installed(), vec!["weather"], "named after the manifest, nothing else left");
    assert_eq!(fs::read_to_string(dest.join("weather.sh")).expect("read"), "#!/bin/sh\necho hi\n");
    assert_eq!(mode(&dest.join("weather.sh")), 0o755);
    assert_eq!(mode(&dest.join("data/notes.txt")), 0o640);
    assert_eq!(mode(&dest.join("data/deep")), 0o750);
    assert_eq!(fs::read_to_string(dest.join("data/deep/er/file")).expect("read"), "deep");
    assert_eq!(fs::read_to_string(dest.join(".hidden")).expect("read"), "dotfile");
    assert!(!dest.join(".git").exists(), "a top-level .git is not copied");
    // The source is untouched.
    assert!(src.join("weather.sh").exists());

    // It is listed, enabled.
    let list = w.ok(&["ext", "list"]);
    assert!(
        list.lines().any(|l| l.starts_with("global") && l.contains("weather") && l.contains(" enabled ")),
        "{list}"
    );

    // Installing it again is refused, and changes nothing.
    let e = w.fails(&["ext", "install", s(&src)]);
    assert!(e.contains("weather is already installed at"), "{e}");
    assert!(e.contains("zot ext remove weather"), "{e}");
    assert_eq!(w.installed(), vec!["weather"]);

    // The name is taken whatever the folder is called, and a folder that
    // exists is never replaced, whatever it holds.
    let w3 = World::new();
    make_ext(&w3.ext_root().join("bar"), "foo", "");
    make_ext(&w3.cwd.path().join("src-foo"), "foo", "");
    let e = w3.fails(&["ext", "install", s(&w3.cwd.path().join("src-foo"))]);
    let bar = std::fs::canonicalize(w3.ext_root().join("bar")).expect("canonical");
    assert!(e.contains(&format!("foo is already installed at {}", bar.display())), "{e}");
    make_ext(&w3.cwd.path().join("src-bar"), "bar", "");
    let e = w3.fails(&["ext", "install", s(&w3.cwd.path().join("src-bar"))]);
    assert!(e.contains("already exists and holds extension \"foo\""), "{e}");
    assert!(!w3.ext_root().join("foo").exists());

    // Relative paths work too (relative to the process's directory).
    let w2 = World::new();
    make_ext(&w2.cwd.path().join("rel"), "relative", "");
    w2.ok(&["ext", "install", "rel"]);
    assert_eq!(w2.installed(), vec!["relative"]);

    // An exec that cannot run yet is installed, its last line saying so.
    let noexec = w2.scratch.path().join("noexec");
    make_ext(&noexec, "noexec", "");
    chmod(&noexec.join("run.sh"), 0o644);
    let r = w2.zot(&["ext", "install", s(&noexec)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("installed noexec 1.0.0 to "), "{}", r.stdout);
    assert_eq!(
        r.stdout.lines().last(),
        Some(format!("broken: noexec cannot start: exec not executable: {}/noexec/run.sh (chmod +x it)", w2.ext_root().display()).as_str()),
        "{}",
        r.stdout
    );
    assert_eq!(mode(&w2.ext_root().join("noexec/run.sh")), 0o644);
}

#[test]
fn install_refuses_bad_sources_and_leaves_nothing() {
    let w = World::new();
    // No extension.json.
    let empty = w.scratch.path().join("empty");
    write(&empty.join("README"), "hi");
    let e = w.fails(&["ext", "install", s(&empty)]);
    assert!(e.contains("holds no extension.json"), "{e}");
    assert!(e.contains("(give its folder, its extension.json, or a git URL)"), "{e}");
    // A file of the extension, not its folder: every accepted form named.
    write(&empty.join("main.py"), "print(1)");
    let e = w.fails(&["ext", "install", s(&empty.join("main.py"))]);
    assert!(e.ends_with("main.py: not an extension: give its folder (holding extension.json), its extension.json, or a git URL"), "{e}");
    // Not there at all.
    let e = w.fails(&["ext", "install", s(&w.scratch.path().join("nope"))]);
    assert!(e.contains("no such directory (give an extension's folder, its extension.json, or a git URL)"), "{e}");
    // Invalid manifests.
    let bad = w.scratch.path().join("bad");
    write(&bad.join("extension.json"), r#"{"name":"bad","version":"1"}"#);
    let e = w.fails(&["ext", "install", s(&bad)]);
    assert!(e.contains("exec, theme, or skills is required"), "{e}");
    write(&bad.join("extension.json"), "{ not json");
    let e = w.fails(&["ext", "install", s(&bad)]);
    assert!(e.contains("invalid manifest"), "{e}");
    // A hostile name.
    for name in ["../evil", "a/b", "..", ".hidden/x", "x\u{1b}[2J"] {
        let hostile = w.scratch.path().join("hostile");
        make_ext(&hostile, name, "");
        let e = w.fails(&["ext", "install", s(&hostile)]);
        assert!(e.contains("invalid name"), "{name}: {e}");
        assert!(!e.contains('\u{1b}'), "{e:?}");
    }
    assert!(!w.home.path().join("evil").exists());
    assert!(w.installed().is_empty(), "left behind: {:?}", w.installed());
}

#[test]
fn symlinks() {
    let w = World::new();
    // Internal links are kept as links.
    let src = w.scratch.path().join("linked");
    make_ext(&src, "linked", "");
    write(&src.join("lib/real.txt"), "real");
    symlink("lib/real.txt", src.join("alias")).expect("symlink");
    symlink("../run.sh", src.join("lib/up")).expect("symlink");
    symlink("lib", src.join("libdir")).expect("symlink");
    symlink("./lib/../run.sh", src.join("roundabout")).expect("symlink");
    symlink("lib/missing", src.join("dangling")).expect("symlink");
    w.ok(&["ext", "install", s(&src)]);
    let dest = w.ext_root().join("linked");
    for (link, target) in [
        ("alias", "lib/real.txt"),
        ("lib/up", "../run.sh"),
        ("libdir", "lib"),
        ("roundabout", "./lib/../run.sh"),
        ("dangling", "lib/missing"),
    ] {
        let p = dest.join(link);
        assert!(fs::symlink_metadata(&p).expect("lstat").file_type().is_symlink(), "{link}");
        assert_eq!(fs::read_link(&p).expect("readlink"), PathBuf::from(target), "{link}");
    }
    assert_eq!(fs::read_to_string(dest.join("alias")).expect("read"), "real");

    // Links leaving the source are refused, and the install leaves nothing.
    let outside = w.scratch.path().join("secret.txt");
    write(&outside, "secret");
    let cases: &[(&str, &str)] = &[
        ("zz-escape", "../secret.txt"),
        ("zz-deep/escape", "../../secret.txt"),
        ("zz-abs", s(&outside)),
        ("zz-dot", ".."),
    ];
    for (i, (link, target)) in cases.iter().enumerate() {
        let src = w.scratch.path().join(format!("evil{i}"));
        make_ext(&src, &format!("evil{i}"), "");
        // Plenty of files before the link, so the copy is well under way.
        for j in 0..20 {
            write(&src.join(format!("a{j:02}/file")), "x");
        }
        let lp = src.join(link);
        fs::create_dir_all(lp.parent().expect("parent")).expect("mkdir");
        symlink(target, &lp).expect("symlink");
        let e = w.fails(&["ext", "install", s(&src)]);
        assert!(e.contains("symbolic link"), "{link}: {e}");
        assert!(e.contains(s(&lp)), "the link is named: {e}");
        assert_eq!(w.installed(), vec!["linked"], "{link}: left behind");
    }

    // `..` after passing through another link is refused: `d/../x` would
    // really resolve from the link's target's parent.
    let src = w.scratch.path().join("chain");
    make_ext(&src, "chain", "");
    symlink(".", src.join("d")).expect("symlink");
    symlink("d/../secret.txt", src.join("e")).expect("symlink");
    let e = w.fails(&["ext", "install", s(&src)]);
    assert!(e.contains("through another link"), "{e}");
    assert_eq!(w.installed(), vec!["linked"]);
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdin(Stdio::null())
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn have_git() -> bool {
    Command::new("git")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A bare repository holding the files `setup` writes into a work tree.
fn bare_repo(w: &World, name: &str, setup: impl FnOnce(&Path)) -> PathBuf {
    let work = w.scratch.path().join(format!("{name}-work"));
    fs::create_dir_all(&work).expect("mkdir");
    setup(&work);
    git(&work, &["init", "-q"]);
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "init"]);
    let bare = w.scratch.path().join(format!("{name}.git"));
    git(w.scratch.path(), &["clone", "-q", "--bare", s(&work), s(&bare)]);
    bare
}

#[test]
fn install_from_git() {
    if !have_git() {
        common::skip("install_from_git: git is not on PATH");
        return;
    }
    let w = World::new();
    let bare = bare_repo(&w, "repo-folder", |work| {
        make_ext(work, "gitext", ",\"description\":\"from git\"");
        write(&work.join("lib/a.txt"), "a");
        symlink("lib/a.txt", work.join("alias")).expect("symlink");
    });
    let url = format!("file://{}", bare.display());
    let out = w.ok(&["ext", "install", &url]);
    let dest = w.ext_root().join("gitext");
    assert_eq!(out, format!("installed gitext 1.0.0 to {}\n", dest.display()));
    assert_eq!(w.installed(), vec!["gitext"]);
    assert_eq!(mode(&dest.join("run.sh")) & 0o111, 0o111, "executable bit kept");
    assert_eq!(fs::read_link(dest.join("alias")).expect("link"), PathBuf::from("lib/a.txt"));
    assert!(dest.join(".git").is_dir(), "a git install keeps its shallow clone");

    // Again: refused.
    let e = w.fails(&["ext", "install", &url]);
    assert!(e.contains("already installed"), "{e}");
    assert_eq!(w.installed(), vec!["gitext"]);

    // A repository without a valid manifest: cloned, refused, rolled back.
    let bad = bare_repo(&w, "bad", |work| write(&work.join("extension.json"), r#"{"name":"bad"}"#));
    let e = w.fails(&["ext", "install", &format!("file://{}", bad.display())]);
    assert!(e.contains("exec, theme, or skills is required"), "{e}");
    assert!(!e.contains(".zot-install"), "errors name the source, not the staging dir: {e}");
    assert_eq!(w.installed(), vec!["gitext"]);

    // A repository with a link leaving it: refused, rolled back.
    let evil = bare_repo(&w, "evil", |work| {
        make_ext(work, "evil", "");
        symlink("../../../etc/passwd", work.join("passwd")).expect("symlink");
    });
    let e = w.fails(&["ext", "install", &format!("file://{}", evil.display())]);
    assert!(e.contains("symbolic link"), "{e}");
    assert_eq!(w.installed(), vec!["gitext"]);

    // A URL that is not a repository.
    let e =
        w.fails(&["ext", "install", &format!("file://{}/nothing.git", w.scratch.path().display())]);
    assert!(e.contains("git clone"), "{e}");
    assert_eq!(w.installed(), vec!["gitext"]);
}

#[test]
fn install_takes_a_manifest_path_and_skips_build_output_and_dependencies() {
    let w = World::new();
    let src = w.scratch.path().join("rusty");
    write(
        &src.join("extension.json"),
        r#"{"name":"rusty","exec":"./target/release/rusty","args":["node_modules/keep.js"]}"#,
    );
    write(&src.join("target/release/rusty"), "#!/bin/sh\nexit 0\n");
    chmod(&src.join("target/release/rusty"), 0o755);
    write(&src.join("target/debug/huge"), "junk");
    write(&src.join("target/release/deps/junk"), "junk");
    write(&src.join("node_modules/keep.js"), "keep");
    write(&src.join("node_modules/dep/index.js"), "dep");
    write(&src.join(".git/HEAD"), "ref\n");
    write(&src.join("src/target/inner"), "nested folders of that name are kept");

    let r = w.zot(&["ext", "install", s(&src.join("extension.json"))]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let dest = w.ext_root().join("rusty");
    assert_eq!(r.stdout, format!("installed rusty to {}\n", dest.display()));
    assert!(r.stderr.contains("not copied: target/, node_modules/"), "{}", r.stderr);
    let mut files = Vec::new();
    fn walk(root: &Path, d: &Path, out: &mut Vec<String>) {
        for e in fs::read_dir(d).expect("ls") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).expect("inside").display().to_string());
            }
        }
    }
    walk(&dest, &dest, &mut files);
    files.sort();
    assert_eq!(
        files,
        ["extension.json", "node_modules/keep.js", "src/target/inner", "target/release/rusty"],
        "only what the manifest runs from target/ and node_modules/"
    );
    assert_eq!(mode(&dest.join("target/release/rusty")), 0o755);

    // `install extension.json` from inside the folder.
    let w2 = World::new();
    make_ext(&w2.cwd.path().join("x"), "from-manifest", "");
    let r = w2.zot(&["ext", "install", "x/extension.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(w2.installed(), vec!["from-manifest"]);
}

#[test]
fn git_install_errors_show_gits_reason_and_no_temporary_path() {
    if !have_git() {
        common::skip("git_install_errors_show_gits_reason_and_no_temporary_path: git is not on PATH");
        return;
    }
    let w = World::new();
    let e = w.fails(&["ext", "install", &format!("file://{}/nothing.git", w.scratch.path().display())]);
    assert!(e.contains("): fatal: "), "git's fatal line: {e}");
    assert!(!e.contains("repository exists"), "not git's last hint line: {e}");

    let bare = bare_repo(&w, "nomanifest", |work| write(&work.join("README"), "hi"));
    let url = format!("file://{}", bare.display());
    let e = w.fails(&["ext", "install", &url]);
    assert_eq!(e, format!("zot: {url} holds no extension.json: not an extension"));
    assert!(!e.contains(".zot-install") && !e.contains(s(&w.ext_root())), "no temporary path: {e}");
    assert!(w.installed().is_empty(), "{:?}", w.installed());
}
