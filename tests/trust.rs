//! What the trust fingerprint covers (PROTOCOL §7.3), through the real
//! binary: every change after `zot trust` that could change what runs makes
//! the project ask again, `zot ext disable`/`enable` do not, old records and
//! oversized projects are never trusted, and a warm check is fast. Every
//! test has its own `ZOT_HOME` and project.

mod common;
#[path = "common/trust_world.rs"]
mod trust_world;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{write_exec, write_manifest};
use trust_world::{s, World};
use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_zot");

#[test]
fn retargeting_a_symlink_the_extension_runs_asks_again() {
    let w = World::new("fp-link");
    let d = write_manifest(&w.exts(), "x", json!({"name": "x", "exec": "./run"}));
    symlink("/bin/echo", d.join("run")).expect("symlink");
    w.trust();
    assert_eq!(w.state(), "trusted");
    fs::remove_file(d.join("run")).expect("rm");
    symlink("/bin/sh", d.join("run")).expect("symlink");
    w.assert_asks_again("run -> /bin/sh");
    // A link elsewhere in the folder, to a file outside the project: its
    // target's content counts too.
    let outside = w.t.path().join("data.txt");
    fs::write(&outside, "one").expect("write");
    symlink(&outside, d.join("data")).expect("symlink");
    w.assert_asks_again("a new link");
    fs::write(&outside, "two").expect("write");
    w.assert_asks_again("what the link points to");
}

#[test]
fn a_zot_folder_linked_outside_the_project_is_named_and_its_content_counts() {
    let w = World::new("fp-dotzot");
    let real = w.t.path().join("elsewhere");
    let d = write_manifest(&real.join("extensions"), "x", json!({"name": "x", "exec": "./run.sh"}));
    write_exec(&d.join("run.sh"), "#!/bin/sh\nexit 0\n");
    fs::remove_dir_all(w.proj().join(".zot")).expect("rm");
    symlink(&real, w.proj().join(".zot")).expect("symlink");
    let r = w.trust();
    assert!(
        r.stdout.contains(&format!("links outside the project: .zot -> {}", s(&real))),
        "{}",
        r.stdout
    );
    assert_eq!(w.state(), "trusted");
    write_exec(&d.join("run.sh"), "#!/bin/sh\necho changed >&2\nexit 0\n");
    w.assert_asks_again("the script behind the linked .zot");
    // An extension folder linked outside is named the same way.
    fs::remove_file(w.proj().join(".zot")).expect("rm");
    fs::create_dir_all(w.exts()).expect("mkdir");
    symlink(&d, w.exts().join("x")).expect("symlink");
    let r = w.trust();
    assert!(r.stdout.contains(&format!(".zot/extensions/x -> {}", s(&d))), "{}", r.stdout);
}

#[test]
fn editing_a_helper_module_or_a_data_file_asks_again() {
    let w = World::new("fp-helper");
    let d = write_manifest(&w.exts(), "py", json!({"name": "py", "exec": "python3", "args": ["main.py"]}));
    fs::write(d.join("main.py"), "import helper\nhelper.run()\n").expect("write");
    fs::write(d.join("helper.py"), "def run():\n    pass\n").expect("write");
    fs::create_dir_all(d.join("data/deep")).expect("mkdir");
    fs::write(d.join("data/deep/table.json"), "[1]").expect("write");
    w.trust();
    fs::write(d.join("helper.py"), "def run():\n    import os\n").expect("write");
    w.assert_asks_again("helper.py");
    fs::write(d.join("data/deep/table.json"), "[2]").expect("write");
    w.assert_asks_again("data file");
    fs::set_permissions(d.join("helper.py"), fs::Permissions::from_mode(0o755)).expect("chmod");
    w.assert_asks_again("mode of helper.py");
    fs::create_dir_all(d.join("data/new")).expect("mkdir");
    w.assert_asks_again("a new folder");
    // .git/ is left out.
    fs::create_dir_all(d.join(".git")).expect("mkdir");
    fs::write(d.join(".git/HEAD"), "ref").expect("write");
    assert_eq!(w.state(), "trusted", ".git/ counted");
}

#[test]
fn a_new_extension_folder_or_mcp_json_after_trust_asks_again() {
    let w = World::new("fp-new");
    let d = write_manifest(&w.exts(), "a", json!({"name": "a", "exec": "./run.sh"}));
    write_exec(&d.join("run.sh"), "#!/bin/sh\nexit 0\n");
    w.trust();
    let b = write_manifest(&w.exts(), "b", json!({"name": "b", "exec": "./run.sh"}));
    write_exec(&b.join("run.sh"), "#!/bin/sh\nexit 0\n");
    w.assert_asks_again("a new extension folder");
    fs::write(w.proj().join(".zot/mcp.json"), r#"{"mcpServers": {}}"#).expect("write");
    w.assert_asks_again("a new .zot/mcp.json");
    fs::write(w.proj().join(".zot/mcp.json"), r#"{"mcpServers": {"s": {"command": "sh"}}}"#).expect("write");
    w.assert_asks_again("a server added to .zot/mcp.json");
}

#[test]
fn editing_what_a_project_mcp_server_runs_asks_again() {
    let w = World::new("fp-mcp-run");
    let zot = w.proj().join(".zot");
    fs::write(zot.join("srv.py"), "import helper\n").expect("write");
    fs::write(zot.join("helper.py"), "pass\n").expect("write");
    let outside = w.t.path().join("outside.py");
    fs::write(&outside, "pass\n").expect("write");
    let config = json!({"mcpServers": {
        "s": {"command": "python3", "args": ["srv.py"]},
        "o": {"command": "python3", "args": [s(&outside)]},
        "x": {"command": "./bin/run.sh"}
    }});
    fs::write(zot.join("mcp.json"), config.to_string()).expect("write");
    fs::create_dir_all(zot.join("bin")).expect("mkdir");
    write_exec(&zot.join("bin/run.sh"), "#!/bin/sh\nexit 0\n");
    let r = w.trust();
    assert!(r.stdout.contains("(3 MCP server(s): o, s, x)"), "servers not named as servers: {}", r.stdout);
    assert_eq!(w.state(), "trusted");
    fs::write(zot.join("srv.py"), "import helper\nimport os\n").expect("write");
    w.assert_asks_again("the script of a server");
    fs::write(zot.join("helper.py"), "import os\n").expect("write");
    w.assert_asks_again("a helper module beside the script");
    fs::write(&outside, "import os\n").expect("write");
    w.assert_asks_again("a server's script outside the project");
    write_exec(&zot.join("bin/run.sh"), "#!/bin/sh\necho x\n");
    w.assert_asks_again("a server's command");
}

#[test]
fn a_remote_server_runs_nothing_so_zot_trust_names_nothing_not_covered() {
    // A project whose only server is a remote url entry: no interpreter,
    // so its root is not "found by the interpreter"; the url still counts.
    let w = World::new("fp-mcp-remote");
    let remote = json!({"mcpServers": {"github": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${GITHUB_PAT}"}}}});
    fs::write(w.proj().join(".mcp.json"), remote.to_string()).expect("write");
    let r = w.trust();
    assert!(r.stdout.contains("  github: remote http://127.0.0.1:9/mcp; sends $GITHUB_PAT\n"), "{}", r.stdout);
    assert!(r.stdout.contains("(1 MCP server(s): github)"), "{}", r.stdout);
    assert!(!r.stdout.contains("not covered"), "{}", r.stdout);
    let moved = json!({"mcpServers": {"github": {"type": "http", "url": "http://127.0.0.1:10/mcp", "headers": {"Authorization": "Bearer ${GITHUB_PAT}"}}}});
    fs::write(w.proj().join(".mcp.json"), moved.to_string()).expect("write");
    w.assert_asks_again("a remote server's url");
    // Control: a stdio server run from the project root is named.
    let stdio = json!({"mcpServers": {"local": {"command": "python3", "args": ["-m", "srv"]}}});
    fs::write(w.proj().join(".mcp.json"), stdio.to_string()).expect("write");
    let r = w.trust();
    let want = format!("not covered: {} (found by the interpreter, not fingerprinted)", s(&w.proj()));
    assert!(r.stdout.contains(&want), "{}", r.stdout);
}

#[test]
fn a_module_an_extension_loads_from_beside_its_folder_asks_again() {
    // node looks for node_modules in every folder above the script, .zot's
    // own among them.
    let w = World::new("fp-beside");
    let d = write_manifest(&w.exts(), "js", json!({"name": "js", "exec": "node", "args": ["main.js"]}));
    fs::write(d.join("main.js"), "require('helper');\n").expect("write");
    let helper = w.proj().join(".zot/node_modules/helper");
    fs::create_dir_all(&helper).expect("mkdir");
    fs::write(helper.join("index.js"), "module.exports = 1;\n").expect("write");
    w.trust();
    assert_eq!(w.state(), "trusted");
    fs::write(helper.join("index.js"), "require('fs');\n").expect("write");
    w.assert_asks_again("a module in .zot/node_modules");
    fs::write(w.proj().join(".zot/lib.js"), "").expect("write");
    w.assert_asks_again("a new file in .zot");
    // Beside the extension folders: a loose file and a hidden folder
    // (require('../common.js'), require('../.shared/x.js')).
    fs::write(w.exts().join("common.js"), "").expect("write");
    w.assert_asks_again("a file in .zot/extensions");
    fs::create_dir_all(w.exts().join(".shared")).expect("mkdir");
    fs::write(w.exts().join(".shared/x.js"), "").expect("write");
    w.assert_asks_again("a hidden folder in .zot/extensions");
    fs::write(w.exts().join(".shared/x.js"), "require('fs');\n").expect("write");
    w.assert_asks_again("a file in a hidden folder in .zot/extensions");
}

/// A project extension that says hello and waits for its shutdown.
const WAITER: &str = r#"#!/bin/sh
printf '{"type":"hello","name":"w","version":"1","capabilities":["tools"]}\n'
IFS= read -r _ack
printf '{"type":"ready"}\n'
while IFS= read -r line; do case $line in *shutdown*) printf '{"type":"shutdown_ack"}\n'; exit 0;; esac; done
"#;

#[test]
fn a_project_extension_changed_while_running_is_not_started_again() {
    let w = World::new("fp-restart");
    let d = write_manifest(&w.exts(), "w", json!({"name": "w", "exec": "./run.sh", "restart": "on-failure"}));
    write_exec(&d.join("run.sh"), WAITER);
    w.trust();
    let mut args = zot_proc::strings(&["serve", "--cwd", s(&w.proj())]);
    args.extend(zot_proc::strings(&zot_proc::FAST));
    let home = w.home();
    let mut z = zot_proc::Zot::spawn(w.t.path(), &args, &[("ZOT_HOME", s(&home))]);
    z.wait_line("w ready", |l| l.contains(r#""type":"extension_ready""#) && l.contains(r#""extension":"w""#));
    z.send(r#"{"type":"list","id":1}"#);
    let list = z.wait_line("list", |l| l.contains(r#""id":1"#));
    let v: Value = serde_json::from_str(&list).expect("json");
    let pid = v["result"]["extensions"][0]["pid"].as_i64().unwrap_or_else(|| panic!("no pid: {list}"));
    // What it runs changes after zot trust, then it crashes.
    let marker = w.t.path().join("ran-after-edit");
    write_exec(&d.join("run.sh"), &format!("#!/bin/sh\ntouch '{}'\n{}", s(&marker), &WAITER["#!/bin/sh\n".len()..]));
    // SAFETY: kill has no memory effects.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0, "kill");
    let err = z.wait_line("the restart refused", |l| l.contains(r#""type":"extension_error""#));
    assert!(err.contains("has changed since it was trusted"), "{err}");
    // Asked for by name: refused the same way.
    z.send(r#"{"type":"restart","id":2,"name":"w"}"#);
    let r = z.wait_line("restart answer", |l| l.contains(r#""id":2"#));
    assert!(r.contains(r#""ok":false"#) && r.contains("has changed since it was trusted"), "{r}");
    assert!(!marker.exists(), "the changed script ran without a new zot trust");
    // Trusted anew, it starts again.
    w.trust();
    z.send(r#"{"type":"restart","id":3,"name":"w"}"#);
    let r = z.wait_line("restart answer", |l| l.contains(r#""id":3"#));
    assert!(r.contains(r#""ok":true"#), "{r}");
    assert!(marker.exists(), "not started after zot trust");
}

#[test]
fn a_fifo_as_the_project_mcp_json_or_a_manifest_hangs_nothing() {
    let w = World::new("fp-fifo-mcp");
    fs::create_dir_all(w.exts().join("a")).expect("mkdir");
    for fifo in [w.proj().join(".zot/mcp.json"), w.exts().join("a/extension.json")] {
        let c = std::ffi::CString::new(s(&fifo)).expect("cstring");
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
    }
    for args in [&["ext", "list"][..], &["trust"], &["serve", "--trust-project"]] {
        let mut child = Command::new(BIN)
            .args(args)
            .current_dir(w.proj())
            .env("ZOT_HOME", w.home())
            .env_remove("XDG_STATE_HOME")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run zot");
        let exited = common::wait_until(Duration::from_secs(30), || child.try_wait().is_ok_and(|s| s.is_some()));
        if !exited {
            let _ = child.kill();
        }
        let out = child.wait_with_output().expect("wait");
        assert!(exited, "zot {args:?} hung on a FIFO");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let refused = text.matches("not a regular file").count();
        assert!(args[0] == "trust" || refused == 2, "zot {args:?}: {text}");
    }
}

#[test]
fn disable_and_enable_keep_trust() {
    let w = World::new("fp-enable");
    for n in ["a", "b"] {
        let d = write_manifest(&w.exts(), n, json!({"name": n, "exec": "./run.sh"}));
        write_exec(&d.join("run.sh"), "#!/bin/sh\nexit 0\n");
    }
    w.trust();
    let r = w.zot(&["ext", "disable", "b"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(w.state(), "trusted", "after zot ext disable b");
    let list = w.zot(&["ext", "list", "--json"]);
    let rows: Value = serde_json::from_str(&list.stdout).expect("json");
    let a = rows.as_array().expect("array").iter().find(|r| r["name"] == "a").expect("a listed").clone();
    assert_eq!((a["state"].as_str(), a["trusted"].as_bool()), (Some("enabled"), Some(true)), "{a}");
    let r = w.zot(&["ext", "enable", "b"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(w.state(), "trusted", "after zot ext enable b");
}

#[test]
fn a_record_of_an_older_fingerprint_format_asks_again() {
    let w = World::new("fp-version");
    let d = write_manifest(&w.exts(), "a", json!({"name": "a", "exec": "./run.sh"}));
    write_exec(&d.join("run.sh"), "#!/bin/sh\nexit 0\n");
    w.trust();
    let path = w.home().join("trust.json");
    let current: Value = serde_json::from_slice(&fs::read(&path).expect("read")).expect("json");
    assert_eq!(current["projects"][0]["fingerprint_version"], 6, "{current}");
    // The same fingerprint, recorded as format 1 (file and record): never trusted.
    let mut old = current.clone();
    old["version"] = json!(1);
    old["projects"][0].as_object_mut().expect("object").remove("fingerprint_version");
    fs::write(&path, serde_json::to_vec(&old).expect("json")).expect("write");
    assert_eq!(w.state(), "changed");
    for format in [1, 3, 5] {
        let mut old = current.clone();
        old["projects"][0]["fingerprint_version"] = json!(format);
        fs::write(&path, serde_json::to_vec(&old).expect("json")).expect("write");
        assert_eq!(w.state(), "changed", "format {format}");
    }
    // A session does not run it either.
    let r = w.zot(&["ext", "list", "--json"]);
    assert!(r.stdout.contains("\"trusted\": false"), "{}", r.stdout);
    w.trust();
    assert_eq!(w.state(), "trusted");
}

#[test]
fn a_project_too_large_to_fingerprint_is_refused() {
    let w = World::new("fp-size");
    let d = write_manifest(&w.exts(), "big", json!({"name": "big", "exec": "./run.sh"}));
    write_exec(&d.join("run.sh"), "#!/bin/sh\nexit 0\n");
    // More than 256 MiB (a sparse file: nothing needs reading to know).
    let f = fs::File::create(d.join("blob")).expect("create");
    f.set_len(257 << 20).expect("set_len");
    let r = w.zot(&["trust"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("too large to fingerprint") && r.stderr.contains("256 MiB"), "{}", r.stderr);
    assert!(!fs::read_to_string(w.home().join("trust.json")).unwrap_or_default().contains(s(&w.proj())), "recorded");
    fs::remove_file(d.join("blob")).expect("rm");
    // More than 20,000 entries.
    for i in 0..41 {
        let sub = d.join(format!("d{i}"));
        fs::create_dir(&sub).expect("mkdir");
        for j in 0..500 {
            fs::write(sub.join(format!("{j}")), "").expect("write");
        }
    }
    let r = w.zot(&["trust"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("too large to fingerprint") && r.stderr.contains("20000"), "{}", r.stderr);
    assert!(w.state().starts_with("other"), "recorded");
}

/// The time `zot trust --list` takes for the project, less the time it
/// takes for a trusted project with no extensions: the fingerprint check.
fn check_time(w: &World, empty: &World, runs: usize) -> Duration {
    let best = |w: &World| {
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                assert_eq!(w.zot(&["trust", "--list"]).code, 0);
                t.elapsed()
            })
            .min()
            .expect("runs")
    };
    best(w).saturating_sub(best(empty))
}

#[test]
fn a_warm_check_of_five_extensions_of_2000_files_is_fast() {
    let w = World::new("fp-speed");
    for e in 0..5 {
        let d = write_manifest(&w.exts(), &format!("e{e}"), json!({"name": format!("e{e}"), "exec": "python3", "args": ["main.py"]}));
        for m in 0..20 {
            let sub = d.join(format!("m{m}"));
            fs::create_dir(&sub).expect("mkdir");
            for f in 0..99 {
                fs::write(sub.join(format!("f{f}.py")), format!("x = {m} + {f}\n")).expect("write");
            }
        }
        fs::write(d.join("main.py"), "print(1)\n").expect("write");
    }
    let empty = World::new("fp-speed-empty");
    w.trust();
    empty.trust();
    assert_eq!(w.state(), "trusted");
    let t = check_time(&w, &empty, 5);
    eprintln!("warm trust check, 5 extensions x 2000 files: {t:?}");
    // The budget is 30 ms for an optimised build on an idle machine; this
    // bound only catches a check that re-reads every file (a debug build on
    // a loaded machine, generously).
    assert!(t < Duration::from_secs(5), "warm check took {t:?}");
    // And what it caches is private.
    let cache = fs::read_dir(w.home().join("cache")).expect("cache dir").next().expect("a cache file").expect("entry");
    assert_eq!(cache.metadata().expect("stat").permissions().mode() & 0o777, 0o600);
    // A changed file is seen even when its size and mtime are put back.
    let f = w.exts().join("e3/m7/f5.py");
    let meta = fs::metadata(&f).expect("stat");
    fs::write(&f, "y = 7 + 5\n").expect("write");
    let mtime = meta.modified().expect("mtime");
    fs::File::options().write(true).open(&f).expect("open").set_modified(mtime).expect("set mtime");
    assert_eq!(w.state(), "changed", "an edit with the old size and mtime went unseen");
}
