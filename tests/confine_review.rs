//! What reviews of confinement found and what now holds, each through the
//! real binary with a control: a project's VS Code sandbox `denyWrite`
//! path is never granted on its own (not inside zot's home or anything
//! else carved out, not outside a write grant); a disabled server entry
//! hides nothing on the trust line either, so the line is the one of the
//! entry that runs; a server's `${EXT}`, the `cwd` its entry chose, is
//! shown with where it leads.

mod common;
#[path = "common/trust_world.rs"]
mod trust_world;

use serde_json::json;
use std::fs;
use std::path::Path;
use std::time::Duration;
use trust_world::{s, World};

const READER: &str = "import sys\nfor p in sys.argv[1:]:\n    try:\n        sys.stderr.write('READ ' + p + ': ' + open(p).read().strip() + '\\n')\n    except OSError as e:\n        sys.stderr.write('DENIED ' + p + ': ' + e.strerror + '\\n')\n";

fn write(p: &Path, text: &str) {
    if let Some(d) = p.parent() {
        fs::create_dir_all(d).expect("mkdir");
    }
    fs::write(p, text).expect("write");
}

/// Starts `zot serve` in the project, waits until the server `name`'s log
/// holds a `READ` or `DENIED` line for `file`, and gives that line.
fn attempt(w: &World, name: &str, file: &Path) -> String {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_zot"));
    c.args(["serve", "--cwd", s(&w.proj())]).current_dir(w.proj()).env("ZOT_HOME", w.home()).env_remove("XDG_STATE_HOME").env_remove("ZOT_CONFINE");
    c.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    let mut child = c.spawn().expect("zot serve");
    let log = w.home().join(format!("logs/mcp-{name}.log"));
    let needle = format!(" {}: ", file.display());
    let line = || fs::read_to_string(&log).unwrap_or_default().lines().find(|l| l.contains(&needle) && (l.contains("READ ") || l.contains("DENIED "))).map(str::to_string);
    let found = common::wait_until(Duration::from_secs(60), || line().is_some());
    drop(child.stdin.take());
    let _ = child.wait();
    assert!(found, "{}", fs::read_to_string(&log).unwrap_or_default());
    line().unwrap_or_default()
}

#[test]
fn a_deny_write_path_is_not_granted_inside_zots_home_or_outside_a_write_grant() {
    for sandboxed in [true, false] {
        let w = World::new("review-denywrite");
        let token = w.home().join("auth/t.json");
        write(&token, "OAUTH-TOKEN\n");
        let entry = json!({"servers": {"vs": {
            "type": "stdio", "command": "python3", "args": ["-c", READER, s(&token)],
            "sandboxEnabled": sandboxed,
            "sandbox": {"filesystem": {"denyWrite": [s(&w.home().join("auth"))]}, "network": {"allowedDomains": []}},
        }}});
        write(&w.proj().join(".vscode/mcp.json"), &entry.to_string());
        w.trust();
        let got = attempt(&w, "vs", &token);
        if sandboxed {
            assert!(got.contains("DENIED"), "{got}");
        } else {
            assert!(got.contains("READ") && got.contains("OAUTH-TOKEN"), "the control reads it: {got}");
        }
    }
}

#[test]
fn a_disabled_entry_hides_nothing_on_the_trust_line_either() {
    for disabled in [true, false] {
        let w = World::new("review-disabled");
        let confined = json!({"mcpServers": {"s": {"command": "python3", "args": ["-c", "pass"], "disabled": disabled, "confine": {}}}});
        write(&w.proj().join(".zot/mcp.json"), &confined.to_string());
        let open = json!({"mcpServers": {"s": {"command": "python3", "args": ["-c", "pass"]}}});
        write(&w.proj().join(".mcp.json"), &open.to_string());
        let shown = w.trust().stdout;
        let lines: Vec<&str> = shown.lines().filter(|l| l.starts_with("  s: ")).collect();
        assert_eq!(lines.len(), 1, "{shown}");
        if disabled {
            // What runs is .mcp.json's entry, unconfined: the line says so.
            assert_eq!(lines[0], "  s: full access to your files and network", "{shown}");
        } else {
            assert!(lines[0].contains("; writes nothing; network: none"), "{shown}");
        }
    }
}

#[test]
fn a_servers_ext_is_shown_with_the_folder_its_entry_chose() {
    let w = World::new("review-ext");
    let elsewhere = w.t.path().join("elsewhere");
    fs::create_dir_all(&elsewhere).expect("mkdir");
    let entry = json!({"mcpServers": {"helper": {"command": "python3", "args": ["-c", "pass"], "cwd": s(&elsewhere), "confine": {"write": ["${EXT}"]}}}});
    write(&w.proj().join(".mcp.json"), &entry.to_string());
    let shown = w.trust().stdout;
    let real = fs::canonicalize(&elsewhere).expect("real");
    let want = format!("; writes ${{EXT}} (-> {}); network: none", s(&real));
    assert!(shown.lines().any(|l| l.starts_with("  helper: ") && l.ends_with(&want)), "{want}\nnot in\n{shown}");
    // The control: a declared path that is not ${EXT} and leads nowhere
    // else is shown as written, with no arrow.
    let entry = json!({"mcpServers": {"helper": {"command": "python3", "args": ["-c", "pass"], "cwd": s(&elsewhere), "confine": {"write": [s(&real)]}}}});
    write(&w.proj().join(".mcp.json"), &entry.to_string());
    let shown = w.trust().stdout;
    let want = format!("; writes {}; network: none", s(&real));
    assert!(shown.lines().any(|l| l.starts_with("  helper: ") && l.ends_with(&want)), "{want}\nnot in\n{shown}");
}

/// `.zot/extensions/b` a committed link to `../../config`: confined, `b`
/// reads its own folder, which is the project's `config/` with whatever
/// untracked key lies there; the line says so, with where it leads. The
/// control: a folder of its own in `.zot/extensions` reads nothing more
/// than the line says (`reads nothing`).
#[test]
fn an_extension_folder_linked_elsewhere_in_the_project_is_shown_where_it_leads() {
    for linked in [true, false] {
        let w = World::new("review-own-link");
        let manifest = json!({"name": "b", "exec": "python3", "args": ["-c", "pass"], "confine": {}}).to_string();
        let real = if linked { w.proj().join("config") } else { w.exts().join("b") };
        write(&real.join("extension.json"), &manifest);
        write(&real.join("master.key"), "KEY\n");
        if linked {
            std::os::unix::fs::symlink("../../config", w.exts().join("b")).expect("symlink");
        }
        let shown = w.trust().stdout;
        let line = shown.lines().find(|l| l.starts_with("  b: ")).unwrap_or_default().to_string();
        let target = fs::canonicalize(&real).expect("real");
        let arrow = format!("${{EXT}} (-> {})", s(&target));
        assert_eq!(line.contains(&arrow), linked, "{line}");
    }
}
