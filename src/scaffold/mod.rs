//! `zot ext new <name> [--lang L] [--dir DIR]`: writes a working extension
//! folder `<dir>/<name>/` (manifest, source, a three-line README) in one of
//! six languages. Every template speaks the modern handshake (send `hello`,
//! wait for `hello_ack`, then register, then `ready`), registers one command
//! (`/<name>`, which displays its arguments) and one tool
//! (`<name>_echo`, which echoes its optional `text` argument), answers
//! `shutdown` with `shutdown_ack`, and logs to stderr only.
//!
//! The folder is written under a temporary sibling name and renamed into
//! place, so a failure leaves nothing behind; an existing folder is never
//! overwritten.
//!
//! Decisions:
//! - The tool's name is `<name>_echo` with `.` and `-` turned into `_`
//!   (model APIs accept `[A-Za-z0-9_-]` tool names at most).
//! - Rust: a standalone Cargo project (an empty `[workspace]`, so it builds
//!   even inside another workspace) that speaks the protocol with
//!   `serde_json` alone, like the Go one with its standard library: it
//!   builds anywhere the registry is reachable, with no SDK crate to find
//!   or keep in step; the package and binary name is `<name>` with `.`
//!   turned into `_`.
//! - Go: standard library only, `go build -o <name>`.
//!
//! The templates themselves live in `templates`.

mod templates;

use crate::home::validate_name;
use crate::manage::sanitize;
use serde_json::json;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use templates::{CARGO_TOML, GO, GO_MOD, NODE, PYTHON, RUST, SHELL, TYPESCRIPT};

/// The languages `zot ext new` writes.
pub const LANGS: [&str; 6] = ["python", "node", "typescript", "shell", "rust", "go"];

/// What `zot ext new` was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewOptions {
    pub name: String,
    /// One of [`LANGS`].
    pub lang: String,
    /// Where to create the folder; `None`: the current directory.
    pub dir: Option<PathBuf>,
}

/// `zot ext new --help`.
pub const HELP: &str = "Usage: zot ext new <name> [--lang LANG] [--dir DIR]

Writes a working extension into <DIR>/<name>/ (default: ./<name>/): the
manifest extension.json, the source and a short README.md. It registers the
command /<name> and the tool <name>_echo (. and - made _), follows the
handshake (hello, wait for hello_ack, register, ready) and answers shutdown. An existing folder is
never overwritten; <name> must be [A-Za-z0-9._-], at most 64 bytes.

Options:
  --lang LANG   python (default; stdlib only), node (plain JS), typescript
                (run with tsx), shell (POSIX sh and sed), rust (a Cargo
                project using serde_json only), go (standard library only)
  --dir DIR     the existing directory to create <name>/ in

Then: zot ext check <DIR>/<name>   and   zot --ext <DIR>/<name>
";

/// One file of a scaffold.
struct File {
    path: &'static str,
    text: String,
    executable: bool,
}

/// Runs `zot ext new`; returns the exit code.
pub fn run(opts: &NewOptions) -> i32 {
    match create(opts) {
        Ok(report) => {
            print!("{report}");
            0
        }
        Err(e) => {
            eprintln!("zot: {}", sanitize(&e));
            1
        }
    }
}

/// Writes the extension; returns what to print (the files and how to run it).
pub fn create(opts: &NewOptions) -> Result<String, String> {
    let name = opts.name.as_str();
    validate_name(name).map_err(|e| format!("invalid extension name {name:?}: {e}"))?;
    // Every command printed afterwards would read it as an option.
    if name.starts_with('-') {
        return Err(format!("invalid extension name {name:?}: must not start with '-'"));
    }
    if !LANGS.contains(&opts.lang.as_str()) {
        return Err(format!("unknown language {:?} (one of: {})", opts.lang, LANGS.join(", ")));
    }
    let parent = match &opts.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir()
            .map_err(|e| format!("cannot determine the current directory: {e}"))?,
    };
    match fs::metadata(&parent) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(format!("{}: not a directory", parent.display())),
        Err(e) => return Err(format!("{}: {}", parent.display(), io_msg(&e))),
    }
    let dest = parent.join(name);
    if fs::symlink_metadata(&dest).is_ok() {
        return Err(format!("{} already exists; not overwriting it", dest.display()));
    }
    let files = files(name, &opts.lang);
    let tmp = parent.join(format!(".{name}.zot-new-{}", std::process::id()));
    let written = write_all(&tmp, &files).and_then(|()| {
        if fs::symlink_metadata(&dest).is_ok() {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, "appeared meanwhile"));
        }
        fs::rename(&tmp, &dest)
    });
    if let Err(e) = written {
        let _ = fs::remove_dir_all(&tmp);
        return Err(format!("cannot write {}: {}", dest.display(), io_msg(&e)));
    }
    Ok(report(name, &opts.lang, &dest, opts.dir.is_some(), &files))
}

fn io_msg(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "no such directory".into(),
        _ => e.to_string(),
    }
}

fn write_all(dir: &Path, files: &[File]) -> io::Result<()> {
    fs::create_dir(dir)?;
    for f in files {
        let p = dir.join(f.path);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(&p, &f.text)?;
        if f.executable {
            fs::set_permissions(&p, fs::Permissions::from_mode(0o755))?;
        }
    }
    Ok(())
}

fn report(name: &str, lang: &str, dest: &Path, explicit_dir: bool, files: &[File]) -> String {
    // Shown relative to the current directory when created there.
    let shown = if explicit_dir { dest.display().to_string() } else { name.to_string() };
    let mut s = format!("created {shown}/ ({lang}):\n");
    for f in files {
        s.push_str(&format!("  {shown}/{}\n", f.path));
    }
    match lang {
        "rust" => s.push_str(&format!(
            "build it:  (cd {shown} && cargo build --release)\n"
        )),
        "go" => s.push_str(&format!("build it:  (cd {shown} && go build -o {name})\n")),
        "typescript" => s.push_str("needs:     tsx on PATH (npm install -g tsx)\n"),
        _ => {}
    }
    s.push_str(&format!("check it:  zot ext check {shown}\n"));
    s.push_str(&format!("run it:    zot --ext {shown}\n"));
    s.push_str(&format!("           then /{name} hi, or /tool {} {{\"text\":\"hi\"}}\n", tool_name(name)));
    s
}

/// The tool every scaffold registers.
pub fn tool_name(name: &str) -> String {
    format!("{}_echo", name.replace(['.', '-'], "_"))
}

/// The Rust package and binary name: `name` with `.` turned into `_`, and
/// prefixed `ext_` where Cargo would refuse it (a leading digit or `-`, a
/// reserved name).
fn bin_name(name: &str) -> String {
    const RESERVED: [&str; 12] =
        ["test", "deps", "examples", "build", "incremental", "core", "std", "alloc", "proc_macro", "self", "super", "crate"];
    let n = name.replace('.', "_");
    let ok_start = n.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    if ok_start && !RESERVED.contains(&n.as_str()) {
        n
    } else {
        format!("ext_{n}")
    }
}

fn manifest(name: &str, lang: &str, exec: &str, args: &[&str]) -> String {
    let m = json!({
        "name": name,
        "version": "0.1.0",
        "exec": exec,
        "args": args,
        "language": lang,
        "description": format!("/{name} and the {} tool", tool_name(name)),
        "enabled": true,
        // A crash brings it back (docs/protocol.md §7.1); a clean exit does not.
        "restart": "on-failure",
        // What its own code needs (docs/protocol.md §9.1): its folder, its data,
        // no network; tsx talks to its own child over a Unix socket.
        "confine": {"read": ["${EXT}"], "write": ["${DATA}"], "net": false, "unix": lang == "typescript"},
    });
    // Serializing a Value cannot fail.
    let mut s = serde_json::to_string_pretty(&m).unwrap_or_default();
    s.push('\n');
    s
}

fn readme(name: &str, lang: &str, build: Option<&str>) -> String {
    let tool = tool_name(name);
    let first = format!("# {name}\n");
    let second = match build {
        Some(b) => format!("A zot extension in {lang} with the command `/{name}` and the tool `{tool}`. {b}\n"),
        None => format!("A zot extension in {lang} with the command `/{name}` and the tool `{tool}`.\n"),
    };
    let third = "Run it with `zot --ext .`, check it with `zot ext check .`, install it with `zot ext install .`.\n";
    format!("{first}{second}{third}")
}

/// Replaces `@NAME@`, `@TOOL@`, `@BIN@` and `@VERSION@` in a template.
fn fill(template: &str, name: &str) -> String {
    template
        .replace("@NAME@", name)
        .replace("@TOOL@", &tool_name(name))
        .replace("@BIN@", &bin_name(name))
        .replace("@VERSION@", env!("CARGO_PKG_VERSION"))
}

fn files(name: &str, lang: &str) -> Vec<File> {
    let f = |path, template: &str, executable| File { path, text: fill(template, name), executable };
    let plain = |path, text: String| File { path, text, executable: false };
    match lang {
        "python" => vec![
            plain("extension.json", manifest(name, "python", "./main.py", &[])),
            f("main.py", PYTHON, true),
            plain("README.md", readme(name, "Python (stdlib only)", None)),
        ],
        "node" => vec![
            plain("extension.json", manifest(name, "node", "node", &["index.js"])),
            f("index.js", NODE, false),
            plain("README.md", readme(name, "JavaScript (Node, no dependencies)", None)),
        ],
        "typescript" => vec![
            plain("extension.json", manifest(name, "typescript", "tsx", &["index.ts"])),
            f("index.ts", TYPESCRIPT, false),
            plain("README.md", readme(name, "TypeScript", Some("It runs with `tsx` (`npm install -g tsx`)."))),
        ],
        "shell" => vec![
            plain("extension.json", manifest(name, "shell", "./main.sh", &[])),
            f("main.sh", SHELL, true),
            plain("README.md", readme(name, "POSIX sh (sed only, no jq)", None)),
        ],
        "rust" => {
            let exec = format!("./target/release/{}", bin_name(name));
            let build = "Build it with `cargo build --release` (it needs serde_json only).";
            vec![
                plain("extension.json", manifest(name, "rust", &exec, &[])),
                f("Cargo.toml", CARGO_TOML, false),
                f("src/main.rs", RUST, false),
                plain("README.md", readme(name, "Rust (serde_json only)", Some(build))),
                plain(".gitignore", "/target\n".into()),
            ]
        }
        _ => {
            let build = format!("Build it with `go build -o {name}` (standard library only).");
            vec![
                plain("extension.json", manifest(name, "go", &format!("./{name}"), &[])),
                f("go.mod", GO_MOD, false),
                f("main.go", GO, false),
                plain("README.md", readme(name, "Go", Some(&build))),
                plain(".gitignore", format!("/{name}\n")),
            ]
        }
    }
}
