//! The base set of a confined process (docs/protocol.md §9.2) for the programs
//! people really run: each confined extension must start and answer, and
//! still be refused what lies outside its grants. A pyenv-style Python in
//! a home folder, Node and a `node_modules/.bin` tool outside the
//! extension's folder, a `#!/bin/sh` script, a static Go binary.

mod common;

use common::{host_config, start_host, write_exec, write_manifest, TempDir};
use serde_json::json;
use std::path::{Path, PathBuf};
use zot_host::host::{Host, Request, Response};

fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(name)).find(|p| p.is_file())
}

/// Calls `<name>_probe` with `{"op": "read", "arg": path}`.
fn read(host: &Host, name: &str, path: &Path) -> String {
    let req = Request::Tool { name: format!("{name}_probe"), args: Some(json!({"op": "read", "arg": path.display().to_string()})), tool_id: None };
    match host.call(req) {
        Ok(Response::Tool(r)) => common::text_of(&r.content),
        other => panic!("{name}: {other:?}; {:?}", common::ext_info(host, name)),
    }
}

/// Starts `exts` (each a confined manifest), waits for the load, and for
/// each checks that it answers and cannot read `outside`.
fn starts_and_answers(t: &TempDir, exts: Vec<(String, PathBuf)>) {
    let outside = t.path().join("outside.txt");
    std::fs::write(&outside, "x").expect("write");
    let (host, _rx) = start_host(host_config(t.path(), exts.iter().map(|e| e.1.clone()).collect()));
    host.call(Request::WaitReady).expect("ready");
    for (name, dir) in &exts {
        let own = dir.join("extension.json");
        assert!(read(&host, name, &own).starts_with("ok"), "{name} cannot read its own folder");
        assert_eq!(read(&host, name, &outside).split(' ').next(), Some("errno"), "{name} read outside its grants");
    }
    host.shutdown();
}

/// A zot extension in JavaScript whose tool reads a file.
const NODE_EXT: &str = r#"const name = process.argv[2];
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
out({ type: "hello", name, version: "1", capabilities: ["tools"] });
require("readline").createInterface({ input: process.stdin }).on("line", (l) => {
  const m = JSON.parse(l);
  if (m.type === "hello_ack") {
    out({ type: "register_tool", name: name + "_probe", description: "p", schema: { type: "object" } });
    out({ type: "ready" });
  } else if (m.type === "tool_call") {
    let t;
    try { t = "ok " + require("fs").readFileSync(m.args.arg, "utf8").length; } catch (e) { t = "errno " + e.code; }
    out({ type: "tool_result", id: m.id, content: [{ type: "text", text: t }] });
  } else if (m.type === "shutdown") {
    out({ type: "shutdown_ack" });
    process.exit(0);
  }
});
"#;

#[test]
fn python_from_the_system_and_from_a_pyenv_style_prefix_in_a_home_folder() {
    if !common::landlock() {
        return common::skip("this kernel has no Landlock");
    }
    // The system's Python: its standard library lies in the base set, so a
    // copy of it whose library is linked entry by entry starts only if its
    // own prefix is readable as a folder.
    let system = Path::new("/usr/bin/python3");
    let py = std::process::Command::new(system).args(["-c", "import sys, sysconfig; print(sys.executable); print(sysconfig.get_paths()['stdlib'])"]).output();
    let Some((exe, stdlib)) = py.ok().and_then(|o| {
        let s = String::from_utf8(o.stdout).ok()?;
        let mut l = s.lines();
        Some((PathBuf::from(l.next()?), PathBuf::from(l.next()?)))
    }) else {
        return common::skip("no /usr/bin/python3");
    };
    let t = TempDir::new("base-pyenv");
    // A fake home (beside ZOT_HOME, not in it) with ~/.pyenv/versions/X/{bin/python3, lib/pythonX.Y/*}:
    // the binary copied, the standard library linked entry by entry, so
    // that it starts only if its prefix is readable as a folder.
    let prefix = t.path().join("user/.pyenv/versions/fake");
    let lib = prefix.join("lib").join(stdlib.file_name().expect("pythonX.Y"));
    std::fs::create_dir_all(prefix.join("bin")).expect("mkdir");
    std::fs::create_dir_all(&lib).expect("mkdir");
    std::fs::copy(exe.canonicalize().expect("python3"), prefix.join("bin/python3")).expect("copy python3");
    for e in std::fs::read_dir(&stdlib).expect("stdlib").flatten() {
        std::os::unix::fs::symlink(e.path(), lib.join(e.file_name())).expect("link");
    }
    let name = "pyenvext".to_string();
    let dir = write_manifest(
        t.path(),
        &name,
        json!({"name": name, "exec": prefix.join("bin/python3"), "args": [common::fixture("probe.py"), name], "confine": {}}),
    );
    let sys_name = "sysext".to_string();
    let sys_dir = write_manifest(t.path(), &sys_name, json!({"name": sys_name, "exec": system, "args": [common::fixture("probe.py"), sys_name], "confine": {}}));
    starts_and_answers(&t, vec![(name, dir), (sys_name, sys_dir)]);
}

#[test]
fn node_and_a_node_modules_bin_tool_and_a_sh_script() {
    if !common::landlock() {
        return common::skip("this kernel has no Landlock");
    }
    let t = TempDir::new("base-node");
    let mut exts = Vec::new();
    if which("node").is_some() {
        let d = write_manifest(t.path(), "nodeext", json!({"name": "nodeext", "exec": "node", "args": ["index.js", "nodeext"], "confine": {}}));
        std::fs::write(d.join("index.js"), NODE_EXT).expect("write");
        exts.push(("nodeext".to_string(), d));
        // A tool installed in a node_modules outside the extension's folder,
        // run through its .bin link, loading a module of its own package.
        let pkg = t.path().join("tools/node_modules/bintool");
        std::fs::create_dir_all(pkg.join("bin")).expect("mkdir");
        std::fs::create_dir_all(pkg.join("lib")).expect("mkdir");
        std::fs::write(pkg.join("lib/ext.js"), NODE_EXT).expect("write");
        write_exec(&pkg.join("bin/cli.js"), "#!/usr/bin/env node\nrequire('../lib/ext.js');\n");
        let bin = t.path().join("tools/node_modules/.bin");
        std::fs::create_dir_all(&bin).expect("mkdir");
        std::os::unix::fs::symlink("../bintool/bin/cli.js", bin.join("bintool")).expect("link");
        let d = write_manifest(t.path(), "bintool", json!({"name": "bintool", "exec": bin.join("bintool"), "args": ["bintool"], "confine": {}}));
        exts.push(("bintool".to_string(), d));
    } else {
        common::skip("node is not on PATH: its part of the base-set test");
    }
    let d = write_manifest(t.path(), "shext", json!({"name": "shext", "exec": "./run.sh", "confine": {}}));
    write_exec(&d.join("run.sh"), SH_EXT);
    exts.push(("shext".to_string(), d));
    starts_and_answers(&t, exts);
}

/// A zot extension in POSIX sh whose tool reads a file with `cat`.
const SH_EXT: &str = r#"#!/bin/sh
printf '{"type":"hello","name":"shext","version":"1","capabilities":["tools"]}\n'
while IFS= read -r line; do
    case $line in
    *'"type":"hello_ack"'*)
        printf '{"type":"register_tool","name":"shext_probe","description":"p","schema":{"type":"object"}}\n{"type":"ready"}\n' ;;
    *'"type":"tool_call"'*)
        id=$(printf '%s\n' "$line" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
        path=$(printf '%s\n' "$line" | sed -n 's/.*"arg":"\([^"]*\)".*/\1/p')
        if cat "$path" >/dev/null 2>&1; then r="ok"; else r="errno 13"; fi
        printf '{"type":"tool_result","id":"%s","content":[{"type":"text","text":"%s"}]}\n' "$id" "$r" ;;
    *'"type":"shutdown"'*)
        printf '{"type":"shutdown_ack"}\n'; exit 0 ;;
    esac
done
"#;

/// A zot extension in Go whose tool reads a file.
const GO_EXT: &str = r#"package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	out := json.NewEncoder(os.Stdout)
	out.Encode(map[string]any{"type": "hello", "name": "goext", "version": "1", "capabilities": []string{"tools"}})
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var m map[string]any
		if json.Unmarshal(in.Bytes(), &m) != nil {
			continue
		}
		switch m["type"] {
		case "hello_ack":
			out.Encode(map[string]any{"type": "register_tool", "name": "goext_probe", "description": "p", "schema": map[string]any{"type": "object"}})
			out.Encode(map[string]any{"type": "ready"})
		case "tool_call":
			args, _ := m["args"].(map[string]any)
			path, _ := args["arg"].(string)
			text := "ok"
			if _, err := os.ReadFile(path); err != nil {
				text = fmt.Sprintf("errno %v", err)
			}
			out.Encode(map[string]any{"type": "tool_result", "id": m["id"], "content": []any{map[string]any{"type": "text", "text": text}}})
		case "shutdown":
			out.Encode(map[string]any{"type": "shutdown_ack"})
			return
		}
	}
}
"#;

#[test]
fn a_static_go_binary() {
    if !common::landlock() {
        return common::skip("this kernel has no Landlock");
    }
    let Some(go) = which("go") else {
        return common::skip("go is not on PATH: the static Go binary of the base-set test");
    };
    let t = TempDir::new("base-go");
    let d = write_manifest(t.path(), "goext", json!({"name": "goext", "exec": "./goext", "confine": {}}));
    std::fs::write(d.join("main.go"), GO_EXT).expect("write");
    std::fs::write(d.join("go.mod"), "module goext\n\ngo 1.21\n").expect("write");
    let built = std::process::Command::new(go)
        .args(["build", "-o", "goext", "."])
        .current_dir(&d)
        .env("CGO_ENABLED", "0")
        .env("GOCACHE", t.path().join("gocache"))
        .env("GOFLAGS", "-mod=mod")
        .output()
        .expect("go build");
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    starts_and_answers(&t, vec![("goext".to_string(), d)]);
}
