//! `zot ext` end to end through the real binary: install (local folder and
//! git), rollback, symlink rules, list (table and JSON), enable/disable,
//! remove and logs (including `--follow`). Every test has its own
//! `ZOT_HOME` and working directory under the system temp dir.

use serde_json::Value;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_zot");

mod common;
use common::TempDir;

/// One test's world: a zot home, a project directory, a scratch directory.
struct World {
    home: TempDir,
    cwd: TempDir,
    scratch: TempDir,
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl World {
    fn new() -> World {
        World { home: TempDir::new("home"), cwd: TempDir::new("cwd"), scratch: TempDir::new("src") }
    }

    fn ext_root(&self) -> PathBuf {
        self.home.path().join("extensions")
    }

    fn project_root(&self) -> PathBuf {
        self.cwd.path().join(".zot").join("extensions")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .env("ZOT_HOME", self.home.path())
            .env_remove("XDG_STATE_HOME")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .current_dir(self.cwd.path())
            .stdin(Stdio::null());
        c
    }

    fn zot(&self, args: &[&str]) -> Run {
        let out = self.command(args).output().expect("run zot");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs and expects success.
    fn ok(&self, args: &[&str]) -> String {
        let r = self.zot(args);
        assert_eq!(r.code, 0, "{args:?} failed: {}", r.stderr);
        r.stdout
    }

    /// Runs and expects a runtime error: exit 1, one line on stderr.
    fn fails(&self, args: &[&str]) -> String {
        let r = self.zot(args);
        assert_eq!(r.code, 1, "{args:?}: stdout {:?} stderr {:?}", r.stdout, r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{args:?}: {:?}", r.stderr);
        assert!(r.stderr.starts_with("zot: "), "{:?}", r.stderr);
        r.stderr.trim_end().to_string()
    }

    /// Names in `$ZOT_HOME/extensions` (hidden ones too), sorted.
    fn installed(&self) -> Vec<String> {
        let mut v: Vec<String> = match fs::read_dir(self.ext_root()) {
            Ok(rd) => {
                rd.map(|e| e.expect("entry").file_name().to_string_lossy().into_owned()).collect()
            }
            Err(_) => Vec::new(),
        };
        v.sort();
        v
    }
}

fn write(path: &Path, text: &str) {
    if let Some(p) = path.parent() {
        fs::create_dir_all(p).expect("mkdir");
    }
    fs::write(path, text).expect("write");
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).expect("stat").permissions().mode() & 0o7777
}

fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
}

/// An extension folder at `dir` with a manifest called `name`.
fn make_ext(dir: &Path, name: &str, extra: &str) {
    write(
        &dir.join("extension.json"),
        &format!(
            "{{\"name\":{},\"version\":\"1.0.0\",\"exec\":\"./run.sh\"{extra}}}",
            Value::from(name)
        ),
    );
    write(&dir.join("run.sh"), "#!/bin/sh\nexit 0\n");
    chmod(&dir.join("run.sh"), 0o755);
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

// ---------------------------------------------------------------------------
// install

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
        list.lines().any(|l| l.starts_with("global") && l.contains("weather") && l.contains("yes")),
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
    // Not there at all.
    let e = w.fails(&["ext", "install", s(&w.scratch.path().join("nope"))]);
    assert!(e.contains("no such directory"), "{e}");
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

// ---------------------------------------------------------------------------
// list

#[test]
fn list_empty() {
    let w = World::new();
    let out = w.ok(&["ext", "list"]);
    assert_eq!(out, "no extensions installed\ninstall one with: zot ext install <path|git-url>\n");
    let json: Value = serde_json::from_str(&w.ok(&["ext", "list", "--json"])).expect("json");
    assert_eq!(json, Value::Array(vec![]));
}

#[test]
fn list_table_and_json() {
    let w = World::new();
    let p = w.project_root();
    let g = w.ext_root();
    make_ext(&p.join("folder-b"), "beta", ",\"language\":\"go\",\"description\":\"second\"");
    make_ext(
        &p.join("folder-z"),
        "alpha",
        ",\"language\":\"python\",\"description\":\"project alpha\"",
    );
    make_ext(&g.join("zeta"), "zeta", ",\"enabled\":false");
    make_ext(&g.join("alpha"), "alpha", ",\"description\":\"global alpha\"");
    make_ext(
        &g.join("evil"),
        "evil",
        ",\"description\":\"\\u001b[31mRED\\u0007\\u009b2J\\u007f\\u202eok\",\"version\":\"\\u001b]0;t\\u0007\"",
    );
    write(&g.join("broken/extension.json"), "{ nope");
    fs::create_dir_all(g.join(".zot-install-1-0")).expect("hidden staging dir is not listed");

    let out = w.ok(&["ext", "list"]);
    assert!(
        !out.chars().any(|c| c.is_control() && c != '\n'),
        "control characters reached the terminal: {out:?}"
    );
    let lines: Vec<&str> = out.lines().collect();
    let cols = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(
        cols(lines[0]),
        ["SCOPE", "NAME", "VERSION", "ENABLED", "STATE", "LANGUAGE", "DESCRIPTION", "DIRECTORY"]
    );
    let order: Vec<(String, String)> = lines[1..7]
        .iter()
        .map(|l| {
            let c = cols(l);
            (c[0].clone(), c[1].clone())
        })
        .collect();
    let want = [
        ("project", "alpha"),
        ("project", "beta"),
        ("global", "alpha"),
        ("global", "broken"),
        ("global", "evil"),
        ("global", "zeta"),
    ];
    assert_eq!(order, want.map(|(a, b)| (a.to_string(), b.to_string())), "{out}");
    assert_eq!(cols(lines[1])[3], "yes");
    assert_eq!(cols(lines[1])[4], "untrusted", "the project is not trusted: {out}");
    assert_eq!(cols(lines[1])[5], "python");
    assert_eq!(cols(lines[3])[4], "enabled", "global alpha loads, the project's does not: {out}");
    assert_eq!(cols(lines[4])[4], "broken");
    assert_eq!(cols(lines[6])[4], "disabled");
    assert!(lines[1].contains("project alpha"));
    assert!(lines[1].ends_with(s(&p.join("folder-z"))), "{}", lines[1]);
    assert!(lines[6].contains(" no "), "disabled shown: {}", lines[6]);
    assert!(lines[5].contains(" REDok "), "escape sequences removed whole: {}", lines[5]);
    assert!(lines[4].contains("broken manifest"), "{}", lines[4]);
    assert!(out.contains("error: global broken:"), "{out}");
    assert!(out.contains("invalid manifest"), "the error is shown: {out}");
    assert!(!out.contains("shadowed"), "an untrusted extension hides nothing: {out}");

    // JSON.
    let text = w.ok(&["ext", "list", "--json"]);
    assert!(!text.contains('\u{9b}') && !text.contains('\u{1b}') && !text.contains('\u{7f}'));
    let json: Value = serde_json::from_str(&text).expect("json");
    let arr = json.as_array().expect("array");
    assert_eq!(arr.len(), 6);
    let names: Vec<(&str, &str)> = arr
        .iter()
        .map(|o| (o["scope"].as_str().expect("scope"), o["name"].as_str().expect("name")))
        .collect();
    assert_eq!(names, want.to_vec());
    let first = &arr[0];
    for key in ["scope", "name", "version", "enabled", "language", "description", "dir"] {
        assert!(first.get(key).is_some(), "missing {key}: {first}");
    }
    assert!(first.get("error").is_none());
    assert_eq!(first["version"], "1.0.0");
    assert_eq!(first["enabled"], true);
    assert_eq!(first["language"], "python");
    assert_eq!(first["dir"], s(&p.join("folder-z")));
    assert_eq!(arr[5]["enabled"], false);
    assert!(arr[3]["error"].as_str().expect("error").contains("invalid manifest"));
    assert_eq!(arr[3]["enabled"], false);
    // The JSON keeps the real description, escaped.
    assert_eq!(arr[4]["description"], "\u{1b}[31mRED\u{7}\u{9b}2J\u{7f}\u{202e}ok");
    let states: Vec<&str> = arr.iter().map(|o| o["state"].as_str().expect("state")).collect();
    assert_eq!(states, ["untrusted", "untrusted", "enabled", "broken", "enabled", "disabled"]);
    assert!(arr.iter().all(|o| o["source"] == o["scope"]), "{json}");
    assert!(arr[2].get("shadowed_by").is_none(), "{}", arr[2]);

    // Trusted, the project's alpha loads and hides the global one.
    w.ok(&["trust"]);
    let out = w.ok(&["ext", "list"]);
    assert!(out.contains(&format!("note: global alpha ({}) is shadowed by {} and not loaded", s(&g.join("alpha")), s(&p.join("folder-z")))), "{out}");
    let json: Value = serde_json::from_str(&w.ok(&["ext", "list", "--json"])).expect("json");
    let arr = json.as_array().expect("array");
    assert_eq!(arr[0]["state"], "enabled");
    assert_eq!(arr[2]["state"], "shadowed");
    assert_eq!(arr[2]["shadowed_by"], s(&p.join("folder-z")));

    // `--cwd` chooses the project.
    let other = TempDir::new("othercwd");
    let json: Value =
        serde_json::from_str(&w.ok(&["ext", "list", "--json", "--cwd", s(other.path())]))
            .expect("json");
    assert!(json.as_array().expect("array").iter().all(|o| o["scope"] == "global"));
}

#[test]
fn list_states_follow_discovery_and_static_extensions_show_their_files() {
    let w = World::new();
    let (p, g) = (w.project_root(), w.ext_root());
    // A disabled project-local extension hides nothing, even trusted.
    make_ext(&p.join("dup"), "dup", ",\"enabled\":false");
    make_ext(&g.join("dup"), "dup", "");
    write(&g.join("look/extension.json"), r#"{"name":"look","skills":["skills/a"],"theme":"theme.json"}"#);
    write(&g.join("look/skills/a/SKILL.md"), "# a\n");
    write(&g.join("look/theme.json"), "{}");
    w.ok(&["trust"]);
    let json: Value = serde_json::from_str(&w.ok(&["ext", "list", "--json"])).expect("json");
    let row = |scope: &str, name: &str| {
        json.as_array().expect("array").iter().find(|r| r["scope"] == scope && r["name"] == name).cloned().expect("row")
    };
    assert_eq!(row("project", "dup")["state"], "disabled");
    assert_eq!(row("global", "dup")["state"], "enabled");
    assert!(row("global", "dup").get("shadowed_by").is_none());
    let look = row("global", "look");
    let dir = std::fs::canonicalize(g.join("look")).expect("canonical");
    assert_eq!(look["static"], true);
    assert_eq!(look["state"], "enabled");
    assert_eq!(look["skills"], serde_json::json!([s(&dir.join("skills/a"))]));
    assert_eq!(look["theme"], s(&dir.join("theme.json")));
    let out = w.ok(&["ext", "list"]);
    assert!(!out.contains("shadowed"), "{out}");
    let line = out.lines().find(|l| l.contains(" look ")).expect("look row");
    assert_eq!(line.split_whitespace().nth(4), Some("static"), "{out}");
}

// ---------------------------------------------------------------------------
// enable / disable / remove

#[test]
fn enable_disable_round_trip() {
    let w = World::new();
    let dir = w.ext_root().join("rt-folder");
    make_ext(&dir, "x", "");
    let original = "{\n  \"zzz\": [1, {\"enabled\": true}],\n  \"name\": \"rt\",\n  \"exec\": \"./run.sh\",\n  \"enabled\": true,\n    \"aaa\":   \"keep\" ,\"m\":{}\n}\n";
    let manifest = dir.join("extension.json");
    write(&manifest, original);
    chmod(&manifest, 0o644);

    assert_eq!(w.ok(&["ext", "disable", "rt"]), "disabled rt\n");
    let disabled = fs::read_to_string(&manifest).expect("read");
    assert_eq!(
        disabled,
        original.replace("\"enabled\": true,\n    \"aaa\"", "\"enabled\": false,\n    \"aaa\"")
    );
    // A rewritten manifest is a file zot created: 0600 (PROTOCOL §1).
    assert_eq!(mode(&manifest), 0o600);
    let json: Value = serde_json::from_str(&w.ok(&["ext", "list", "--json"])).expect("json");
    assert_eq!(json[0]["enabled"], false);
    assert!(w.ok(&["ext", "list"]).lines().nth(1).expect("row").contains(" no "));

    assert_eq!(w.ok(&["ext", "disable", "rt"]), "rt is already disabled\n");
    assert_eq!(fs::read_to_string(&manifest).expect("read"), disabled);

    assert_eq!(w.ok(&["ext", "enable", "rt"]), "enabled rt\n");
    assert_eq!(fs::read_to_string(&manifest).expect("read"), original, "byte for byte");
    assert_eq!(w.ok(&["ext", "enable", "rt"]), "rt is already enabled\n");

    // No leftovers from the atomic rewrite.
    let files: Vec<_> =
        fs::read_dir(&dir).expect("ls").map(|e| e.expect("e").file_name()).collect();
    assert_eq!(files.len(), 2, "{files:?}");

    // A name in both scopes is ambiguous: refused, naming both folders,
    // both manifests byte-identical.
    make_ext(&w.project_root().join("rt"), "rt", "");
    let local = w.project_root().join("rt/extension.json");
    let local_before = fs::read(&local).expect("read");
    for sub in ["disable", "enable"] {
        let e = w.fails(&["ext", sub, "rt"]);
        assert!(e.contains("rt is ambiguous"), "{e}");
        assert!(e.contains(s(&w.project_root().join("rt"))) && e.contains(s(&dir)), "{e}");
        assert!(e.contains("nothing changed"), "{e}");
        assert_eq!(fs::read(&local).expect("read"), local_before);
        assert_eq!(fs::read_to_string(&manifest).expect("read"), original);
    }
    // The installed folder's name picks one.
    assert_eq!(w.ok(&["ext", "disable", "rt-folder"]), "disabled rt-folder\n");
    assert!(fs::read_to_string(&manifest).expect("read").contains("\"enabled\": false"));
    assert_eq!(fs::read(&local).expect("read"), local_before, "project one untouched");

    let e = w.fails(&["ext", "enable", "nope"]);
    assert_eq!(e, "zot: no extension named nope (see 'zot ext list')");
}

#[test]
fn remove() {
    let w = World::new();
    make_ext(&w.ext_root().join("gone"), "gone", "");
    make_ext(&w.ext_root().join("dup"), "dup", "");
    make_ext(&w.project_root().join("dup"), "dup", "");
    // Read-only directories inside do not stop the removal.
    write(&w.ext_root().join("gone/ro/file"), "x");
    chmod(&w.ext_root().join("gone/ro"), 0o555);

    // Without a terminal and without --yes: refused, nothing removed.
    let e = w.fails(&["ext", "remove", "gone"]);
    assert!(e.contains("--yes"), "{e}");
    assert!(w.ext_root().join("gone").exists());

    let out = w.ok(&["ext", "remove", "gone", "--yes"]);
    assert_eq!(out, format!("removed gone ({})\n", w.ext_root().join("gone").display()));
    assert!(!w.ext_root().join("gone").exists());

    // In both scopes under one name: refused, nothing removed.
    let e = w.fails(&["ext", "remove", "-y", "dup"]);
    assert!(e.contains("dup is ambiguous") && e.contains("(project)") && e.contains("(global)"), "{e}");
    assert!(w.project_root().join("dup").exists() && w.ext_root().join("dup").exists());
    // By folder name: a manifest named otherwise, in its folder "dup2".
    fs::remove_dir_all(w.project_root().join("dup")).expect("rm");
    make_ext(&w.project_root().join("dup2"), "other-name", "");
    w.ok(&["ext", "remove", "-y", "dup2"]);
    assert!(!w.project_root().join("dup2").exists());
    w.ok(&["ext", "remove", "-y", "dup"]);
    assert!(!w.ext_root().join("dup").exists());

    let e = w.fails(&["ext", "remove", "-y", "gone"]);
    assert_eq!(e, "zot: no extension named gone (see 'zot ext list')");

    // A broken extension can be removed by the name `list` shows.
    write(&w.ext_root().join("wreck/extension.json"), "{");
    w.ok(&["ext", "remove", "--yes", "wreck"]);
    assert!(w.installed().is_empty(), "{:?}", w.installed());

    // An extension folder that is a link: the link goes, the target stays.
    let target = w.scratch.path().join("dev-folder");
    make_ext(&target, "linkedext", "");
    fs::create_dir_all(w.ext_root()).expect("mkdir");
    symlink(&target, w.ext_root().join("linkedext")).expect("symlink");
    w.ok(&["ext", "remove", "--yes", "linkedext"]);
    assert!(fs::symlink_metadata(w.ext_root().join("linkedext")).is_err());
    assert!(target.join("extension.json").exists());
}

#[test]
fn hostile_names_are_refused() {
    let w = World::new();
    // Something a path-joining bug would find.
    make_ext(&w.home.path().join("etc"), "etc", "");
    write(&w.home.path().join("logs/ext-x.log"), "log");
    for sub in ["remove", "enable", "disable", "logs"] {
        for name in ["../etc", "..", "a/b", "", "x\u{1b}[2J"] {
            let mut args = vec!["ext", sub, name];
            if sub == "remove" {
                args.push("--yes");
            }
            let e = w.fails(&args);
            assert!(e.starts_with("zot: invalid extension name"), "{sub} {name:?}: {e}");
            assert!(!e.contains('\u{1b}'), "{e:?}");
        }
    }
    assert!(w.home.path().join("etc/extension.json").exists());
    assert_eq!(
        fs::read_to_string(w.home.path().join("etc/extension.json")).expect("read"),
        "{\"name\":\"etc\",\"version\":\"1.0.0\",\"exec\":\"./run.sh\"}"
    );
}

// ---------------------------------------------------------------------------
// logs

#[test]
fn logs() {
    let w = World::new();
    make_ext(&w.ext_root().join("weather"), "weather", "");
    let log = w.home.path().join("logs/ext-weather.log");

    let out = w.ok(&["ext", "logs", "weather"]);
    assert_eq!(out, format!("no log for weather yet ({})\n", log.display()));

    write(&log, "line one\n[zot] exited with status 1\n");
    assert_eq!(w.ok(&["ext", "logs", "weather"]), "line one\n[zot] exited with status 1\n");

    // A log without an extension (removed since) is still shown.
    write(&w.home.path().join("logs/ext-old.log"), "old\n");
    assert_eq!(w.ok(&["ext", "logs", "old"]), "old\n");

    let e = w.fails(&["ext", "logs", "nothing"]);
    assert_eq!(e, "zot: no extension named nothing (see 'zot ext list')");
}

/// Kills the child on drop, so a failed assertion leaves no process behind.
struct Killer(Child);

impl Drop for Killer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Lines from a pipe, through a reader thread.
fn lines_of(r: impl std::io::Read + Send + 'static) -> crossbeam_channel::Receiver<String> {
    let (tx, rx) = crossbeam_channel::unbounded();
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Waits (with a deadline) for a line equal to / containing `want`.
fn expect_line(rx: &crossbeam_channel::Receiver<String>, want: &str, exact: bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) if (exact && l == want) || (!exact && l.contains(want)) => return,
            Ok(_) => continue,
            Err(e) => panic!("no line {want:?} in time: {e}"),
        }
    }
}

fn append(path: &Path, text: &str) {
    let mut f = fs::OpenOptions::new().append(true).create(true).open(path).expect("open log");
    f.write_all(text.as_bytes()).expect("append");
}

#[test]
fn logs_follow() {
    let w = World::new();
    make_ext(&w.ext_root().join("tail"), "tail", "");
    let log = w.home.path().join("logs/ext-tail.log");
    write(&log, "first\n");

    let mut child = w
        .command(&["ext", "logs", "tail", "-f"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let out = lines_of(child.stdout.take().expect("stdout"));
    let err = lines_of(child.stderr.take().expect("stderr"));
    let _guard = Killer(child);

    expect_line(&out, "first", true);
    append(&log, "second\n");
    expect_line(&out, "second", true);

    // Truncation: start again from the beginning.
    fs::OpenOptions::new().write(true).open(&log).expect("open").set_len(0).expect("truncate");
    expect_line(&err, "truncated", false);
    append(&log, "third, after truncation\n");
    expect_line(&out, "third, after truncation", true);

    // Rotation: the path now names a new file. A line written just before
    // is printed too, before the new file's.
    let fresh = log.with_extension("new");
    write(&fresh, "fourth, new file\n");
    append(&log, "late line in the old file\n");
    fs::rename(&log, log.with_extension("log.1")).expect("rotate");
    fs::rename(&fresh, &log).expect("rotate");
    expect_line(&out, "late line in the old file", true);
    expect_line(&out, "fourth, new file", true);
    append(&log, "fifth\n");
    expect_line(&out, "fifth", true);
}

#[test]
fn logs_follow_waits_for_the_log() {
    let w = World::new();
    make_ext(&w.ext_root().join("later"), "later", "");
    let log = w.home.path().join("logs/ext-later.log");
    let mut child = w
        .command(&["ext", "logs", "later", "--follow"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let out = lines_of(child.stdout.take().expect("stdout"));
    let err = lines_of(child.stderr.take().expect("stderr"));
    let _guard = Killer(child);
    expect_line(&err, "waiting for", false);
    write(&log, "hello\n");
    expect_line(&out, "hello", true);
}

// ---------------------------------------------------------------------------
// names and folders, trust in the list, install details

#[test]
fn names_or_folder_names_and_ambiguity_changes_nothing() {
    let w = World::new();
    // Global folder "weather-src" holds "weather"; project folder "tools"
    // holds "tools-ext".
    make_ext(&w.ext_root().join("weather-src"), "weather", "");
    make_ext(&w.project_root().join("tools"), "tools-ext", "");
    let g = w.ext_root().join("weather-src/extension.json");
    let p = w.project_root().join("tools/extension.json");

    // By folder name, in either scope.
    assert_eq!(w.ok(&["ext", "disable", "weather-src"]), "disabled weather-src\n");
    assert!(fs::read_to_string(&g).expect("read").contains("\"enabled\": false"));
    assert_eq!(w.ok(&["ext", "enable", "weather"]), "enabled weather\n");
    assert_eq!(w.ok(&["ext", "disable", "tools"]), "disabled tools\n");
    assert!(fs::read_to_string(&p).expect("read").contains("\"enabled\": false"));
    w.ok(&["ext", "enable", "tools-ext"]);

    // The log is the manifest name's, whichever name is given.
    write(&w.home.path().join("logs/ext-weather.log"), "from weather\n");
    assert_eq!(w.ok(&["ext", "logs", "weather-src"]), "from weather\n");
    assert_eq!(w.ok(&["ext", "logs", "weather"]), "from weather\n");

    // A folder named like another extension's manifest: ambiguous.
    make_ext(&w.project_root().join("weather"), "forecast", "");
    let lp = w.project_root().join("weather/extension.json");
    let (g_before, lp_before) = (fs::read(&g).expect("read"), fs::read(&lp).expect("read"));
    for args in [
        &["ext", "disable", "weather"][..],
        &["ext", "enable", "weather"],
        &["ext", "remove", "--yes", "weather"],
        &["ext", "logs", "weather"],
    ] {
        let e = w.fails(args);
        assert!(e.starts_with("zot: weather is ambiguous: it matches "), "{args:?}: {e}");
        assert!(e.contains(&format!("{} (project)", w.project_root().join("weather").display())), "{e}");
        assert!(e.contains(&format!("{} (global)", w.ext_root().join("weather-src").display())), "{e}");
        assert!(e.ends_with("nothing changed (rename or remove one of them by hand)"), "{e}");
        assert_eq!(fs::read(&g).expect("read"), g_before, "{args:?}");
        assert_eq!(fs::read(&lp).expect("read"), lp_before, "{args:?}");
        assert!(w.ext_root().join("weather-src").is_dir() && w.project_root().join("weather").is_dir());
    }
    // The other names still pick one.
    w.ok(&["ext", "remove", "--yes", "forecast"]);
    assert!(!w.project_root().join("weather").exists());
    // The same name in the project and globally: `logs` refuses too,
    // though both would log to one file.
    make_ext(&w.project_root().join("again"), "weather", "");
    let e = w.fails(&["ext", "logs", "weather"]);
    assert!(e.starts_with("zot: weather is ambiguous: it matches "), "{e}");
    assert!(e.contains(&format!("{} (project)", w.project_root().join("again").display())), "{e}");
    w.ok(&["ext", "remove", "--yes", "again"]);
    w.ok(&["ext", "remove", "--yes", "weather"]);
    assert!(!w.ext_root().join("weather-src").exists());
}

#[test]
fn list_shows_the_projects_trust_and_an_exec_that_cannot_run() {
    let w = World::new();
    make_ext(&w.project_root().join("local"), "local", "");
    make_ext(&w.ext_root().join("noexec"), "noexec", "");
    chmod(&w.ext_root().join("noexec/run.sh"), 0o644);
    write(&w.ext_root().join("skills-only/extension.json"), r#"{"name":"skills-only","skills":["s"]}"#);

    let out = w.ok(&["ext", "list"]);
    let note = format!(
        "note: project {} is not trusted: its extensions do not run (run 'zot trust' in it, or pass --trust-project)",
        w.cwd.path().display()
    );
    assert!(out.lines().any(|l| l == note), "{out}");
    assert!(
        out.lines().any(|l| l.starts_with("error: global noexec cannot start: exec not executable: ")),
        "{out}"
    );
    assert!(!out.contains("warning: global skills-only"), "a static extension runs nothing: {out}");
    let json: Value = serde_json::from_str(&w.ok(&["ext", "list", "--json"])).expect("json");
    let row = |n: &str| json.as_array().expect("array").iter().find(|r| r["name"] == n).expect("row").clone();
    assert_eq!(row("local")["trusted"], false);
    assert!(row("noexec").get("trusted").is_none(), "only project rows: {}", row("noexec"));
    assert!(row("noexec")["exec_error"].as_str().expect("exec_error").contains("not executable"));
    assert!(row("local").get("exec_error").is_none());
    assert_eq!(row("skills-only")["static"], true);

    w.ok(&["trust"]);
    let out = w.ok(&["ext", "list"]);
    assert!(out.contains(&format!("note: project {} is trusted: its extensions run", w.cwd.path().display())), "{out}");
    let json: Value = serde_json::from_str(&w.ok(&["ext", "list", "--json"])).expect("json");
    assert_eq!(json.as_array().expect("array").iter().find(|r| r["name"] == "local").expect("row")["trusted"], true);
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
