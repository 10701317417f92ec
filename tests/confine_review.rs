//! What reviews of confinement found and what now holds, each through the
//! real binary with a control: a project's VS Code sandbox `denyWrite`
//! path is never granted on its own (not inside zot's home or anything
//! else carved out, not outside a write grant); a disabled server entry
//! hides nothing on the trust line either, so the line is the one of the
//! entry that runs; a server's `${EXT}`, the `cwd` its entry chose, is
//! shown with where it leads; a grant never leads through a link the
//! extension could have made in what it may write (its `${DATA}`), nor
//! through a link of `/proc`, which leads elsewhere in each process; a
//! project changed since it was trusted says where.

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

/// A host of the installed extensions `exts`, its `ZOT_HOME` `<t>/home`.
fn host(t: &common::TempDir, exts: Vec<std::path::PathBuf>) -> zot_host::host::Host {
    let mut cfg = common::host_config(t.path(), exts);
    cfg.cwd = t.path().to_path_buf();
    cfg.confine = zot_host::host::ConfineMode::Declared;
    let (host, _rx) = common::start_host(cfg);
    host.call(zot_host::host::Request::WaitReady).expect("ready");
    host
}

fn probe(h: &zot_host::host::Host, name: &str, op: &str, arg: &str) -> String {
    let req = zot_host::host::Request::Tool { name: format!("{name}_probe"), args: Some(json!({"op": op, "arg": arg})), tool_id: None };
    match h.call(req) {
        Ok(zot_host::host::Response::Tool(r)) => common::text_of(&r.content),
        other => panic!("{name} {op}: {other:?}; {:?}", common::ext_info(h, name)),
    }
}

/// An installed extension granted `write: ["${DATA}/out"]` points that
/// name, which it may make, at `$HOME`-like secrets in one start: the next
/// start does not follow it (before, it wrote and read there, and only
/// then did the listing show where the grant led). The control: `out` made
/// a folder is granted and written.
#[test]
fn a_grant_never_leads_through_a_link_the_extension_made_in_its_data() {
    let t = common::TempDir::new("review-data-link");
    let secret = t.path().join("secret");
    write(&secret.join("id_test"), "PRIVATE KEY\n");
    let exts = t.path().join("exts");
    let confine = json!({"write": ["${DATA}/out"]});
    let linker = common::probe_ext(&exts, "linker", Some(confine.clone()));
    let maker = common::probe_ext(&exts, "maker", Some(confine));
    let h = host(&t, vec![linker.clone(), maker.clone()]);
    assert_eq!(probe(&h, "linker", "data_link", s(&secret)), "ok linked");
    assert_eq!(probe(&h, "maker", "data_mkdir", ""), "ok made");
    h.shutdown();
    let h = host(&t, vec![linker, maker]);
    let data = t.path().join("home/data").canonicalize().expect("data");
    let info = common::ext_info(&h, "linker");
    let want = format!(
        "confine.write[0]: \"${{DATA}}/out\" leads through the link {}, inside {}, which it may write: it could point that link anywhere before its next start; write the path it should reach",
        data.join("linker/out").display(),
        data.join("linker").display()
    );
    assert!(info.error.as_deref().unwrap_or("").ends_with(&want), "{info:?}\nwanted: {want}");
    assert!(info.pid.is_none(), "{info:?}");
    let inside = data.join("maker/out/x");
    assert_eq!(probe(&h, "maker", "write", s(&inside)), format!("ok {}", inside.display()));
    h.shutdown();
    assert_eq!(fs::read_to_string(secret.join("id_test")).expect("kept"), "PRIVATE KEY\n");
}

/// `/proc/self/cwd` is the host's folder when the host resolves it and the
/// child's own when the child does: a grant through a link of `/proc` is
/// an invalid manifest, named; the control, the folder itself, is granted.
#[test]
fn a_grant_through_a_link_of_proc_is_an_invalid_manifest() {
    let t = common::TempDir::new("review-proc-link");
    let exts = t.path().join("exts");
    let folder = t.path().join("folder");
    write(&folder.join("f"), "x");
    let magic = common::probe_ext(&exts, "magic", Some(json!({"read": ["/proc/self/cwd"]})));
    let plain = common::probe_ext(&exts, "plain", Some(json!({"read": [s(&folder)]})));
    let h = host(&t, vec![magic, plain]);
    let info = common::ext_info(&h, "magic");
    let error = info.error.clone().unwrap_or_default();
    assert!(error.contains("confine.read[0]: \"/proc/self/cwd\" leads through /proc/"), "{info:?}");
    assert!(error.ends_with("a link of /proc that leads elsewhere in each process; write the path it should reach"), "{info:?}");
    assert_eq!(probe(&h, "plain", "read", s(&folder.join("f"))), "ok 1");
    h.shutdown();
}

/// A confined project extension granted `write` on the project can edit an
/// unconfined sibling's code (Landlock cannot keep `.zot` read-only inside
/// a write of the project without refusing every new file at its top
/// level). The project then asks to be trusted again, and now says where
/// it changed, in `zot ext list` and in `zot trust`, so that a change
/// nobody made on purpose is seen before it runs: each extension by the
/// name its manifest gives, with its folder (a folder may hold an
/// extension of another name), and each trust line that reads otherwise.
/// The controls: an edit of `.mcp.json` is named as the rest, and an
/// unchanged project names nothing.
#[test]
fn a_project_changed_since_trusted_names_what_changed() {
    let w = World::new("review-changed-parts");
    let probe = common::fixture("probe.py");
    for (folder, name, confine) in [("a", "a", Some(json!({"write": ["${PROJECT}"]}))), ("b", "b", None), ("helper", "c", None)] {
        let mut m = json!({"name": name, "exec": "python3", "args": ["run.py", name]});
        if let Some(c) = confine {
            m["confine"] = c;
        }
        write(&w.exts().join(folder).join("extension.json"), &m.to_string());
        fs::copy(&probe, w.exts().join(folder).join("run.py")).expect("copy");
    }
    fs::create_dir_all(w.proj().join("w")).expect("w");
    let server = json!({"command": "python3", "args": ["-c", "pass"], "confine": {"write": ["w"], "read": ["w/l"]}});
    write(&w.proj().join(".mcp.json"), &json!({"mcpServers": {"s": server}}).to_string());
    let first = w.trust();
    assert!(!first.stdout.contains("changed since"), "{}", first.stdout);
    let again = w.trust();
    assert!(!again.stdout.contains("changed since"), "unchanged: {}", again.stdout);
    // What `a` could write: code into `b` and into the folder `helper`.
    fs::write(w.exts().join("b/run.py"), "import os\nos.system('id')\n").expect("edit");
    fs::write(w.exts().join("helper/run.py"), "import os\nos.system('id')\n").expect("edit");
    let list = w.zot(&["ext", "list"]);
    let all = format!("{}{}", list.stdout, list.stderr);
    assert!(all.contains("has changed since it was trusted: its extensions do not run (run 'zot trust' in it, or pass --trust-project); what changed: b (.zot/extensions/b), c (.zot/extensions/helper)"), "{all}");
    let shown = w.trust();
    assert!(shown.stdout.lines().any(|l| l == "changed since it was last trusted: b (.zot/extensions/b), c (.zot/extensions/helper)"), "{}", shown.stdout);
    // What `s` could make in what it writes: a link its next start follows.
    let secret = w.t.path().join("secret");
    fs::create_dir_all(&secret).expect("secret");
    std::os::unix::fs::symlink(&secret, w.proj().join("w/l")).expect("link");
    let shown = w.trust();
    let now = fs::canonicalize(&secret).expect("real");
    let want = format!("changed since it was last trusted: s: now \"reads w/l (-> {})", now.display());
    assert!(shown.stdout.lines().any(|l| l.starts_with(&want) && (l.contains(" (was \"reads w/l, ") || l.contains(" (was \"reads w/l;"))), "{}\nwanted: {want}", shown.stdout);
    write(&w.proj().join(".mcp.json"), &json!({"mcpServers": {"s": server, "x": {"command": "true"}}}).to_string());
    let shown = w.trust();
    assert!(shown.stdout.contains("changed since it was last trusted: the server files, what they run, or the rest of .zot"), "{}", shown.stdout);
}

/// A project's server whose `cwd` leads into `$ZOT_HOME` never runs there,
/// and `zot trust` shows it as invalid, with why, rather than a reach it
/// would never have; the control, a `cwd` in the project, shows its reach.
#[test]
fn a_projects_server_with_its_cwd_in_zot_home_is_shown_invalid() {
    let w = World::new("review-cwd-home");
    fs::create_dir_all(w.home()).expect("home");
    fs::create_dir_all(w.proj().join("srv")).expect("srv");
    let entry = |cwd: &str| json!({"command": "python3", "args": ["-c", "pass"], "cwd": cwd, "confine": {}});
    write(&w.proj().join(".zot/mcp.json"), &json!({"mcpServers": {"inhome": entry("../../home"), "here": entry("../srv")}}).to_string());
    let shown = w.trust().stdout;
    let line = |n: &str| shown.lines().find(|l| l.starts_with(&format!("  {n}: "))).unwrap_or_else(|| panic!("no {n}: {shown}")).to_string();
    assert!(line("inhome").starts_with("  inhome: invalid: "), "{shown}");
    assert!(line("inhome").ends_with("is inside $ZOT_HOME: a server never runs in zot's own folder; give it a `cwd` elsewhere"), "{shown}");
    assert!(line("here").starts_with("  here: reads "), "{shown}");
}

/// What is derived from where the program or its script really is comes
/// from the same checked walk: a script that is a link in a folder the
/// extension may write, leading to a folder of secrets, fails the start
/// (a review swapped such a link in and out while the start resolved it,
/// and the secrets' folder was granted as "the script it runs"). The
/// control: a program that is a link in that folder to the system's own
/// (`bin/sh -> /bin/sh`, as a virtual environment's `python` is) starts.
#[test]
fn a_derived_grant_never_comes_through_a_link_the_extension_could_have_made() {
    let t = common::TempDir::new("review-derived-link");
    let work = t.path().join("work");
    let secret = t.path().join("secret");
    write(&secret.join("other.py"), "print('secret')\n");
    fs::create_dir_all(work.join("bin")).expect("bin");
    std::os::unix::fs::symlink(secret.join("other.py"), work.join("srv.py")).expect("link");
    std::os::unix::fs::symlink("/bin/sh", work.join("bin/sh")).expect("link");
    let exts = t.path().join("exts");
    let confine = json!({"write": [s(&work)]});
    let script = common::write_manifest(&exts, "script", json!({"name": "script", "exec": "python3", "args": [s(&work.join("srv.py"))], "confine": confine}));
    let sh = common::fixture("sh_ext.sh");
    let venv = common::write_manifest(&exts, "venv", json!({"name": "venv", "exec": s(&work.join("bin/sh")), "args": [s(&sh), "venv"], "confine": confine}));
    let h = host(&t, vec![script, venv]);
    let info = common::ext_info(&h, "script");
    let error = info.error.clone().unwrap_or_default();
    let want = format!("leads through the link {}, inside {}, which it may write", work.join("srv.py").display(), work.display());
    assert!(error.contains(&want) && error.contains("remove the link"), "{info:?}\nwanted: {want}");
    assert!(info.pid.is_none(), "{info:?}");
    let r = h.call(zot_host::host::Request::Tool { name: "sh_echo".into(), args: Some(json!({})), tool_id: None });
    assert!(matches!(r, Ok(zot_host::host::Response::Tool(_))), "{r:?}; {:?}", common::ext_info(&h, "venv"));
    h.shutdown();
}
