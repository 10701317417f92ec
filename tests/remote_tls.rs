//! A remote MCP server over HTTPS (docs/protocol.md §8.5 rule 8): its
//! certificate is checked against the trust store zot is given, the
//! system's or `SSL_CERT_FILE` / `SSL_CERT_DIR`; a certificate that no
//! trusted authority signed fails the server, naming the origin and why,
//! and there is no switch to skip the check. The server is the Python SDK
//! fixture on 127.0.0.1 with a certificate made here by `openssl`.
#![cfg(feature = "remote")]

mod common;
#[path = "common/mcp_serve.rs"]
mod mcp_serve;
#[path = "common/remote_peer.rs"]
mod remote_peer;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::TempDir;
use mcp_serve::*;
use remote_peer::Peer;
use serde_json::json;
use std::path::Path;
use std::process::Command;

/// A certificate authority and a certificate for 127.0.0.1 signed by it,
/// in `dir`: (ca.pem, leaf.pem, leaf.key); None when `openssl` cannot run.
fn certificates(dir: &Path) -> Option<()> {
    let run = |args: &[&str]| Command::new("openssl").args(args).current_dir(dir).output().ok().filter(|o| o.status.success()).map(|_| ());
    std::fs::write(dir.join("leaf.cnf"), "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n").unwrap();
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    run(&[&["req", "-x509"][..], &ec, &["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=zot test authority",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"]].concat())?;
    run(&[&["req"][..], &ec, &["-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=127.0.0.1"]].concat())?;
    run(&["x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "leaf.pem", "-days", "2", "-extfile", "leaf.cnf"])
}

#[test]
fn a_certificate_is_trusted_only_through_the_trust_store_zot_is_given() {
    let t = TempDir::new("remote-tls");
    let certs = t.path().join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    if certificates(&certs).is_none() {
        return common::skip("openssl cannot make a test certificate here");
    }
    let env = [("REMOTE_TLS_CERT", certs.join("leaf.pem")), ("REMOTE_TLS_KEY", certs.join("leaf.key"))];
    let env: Vec<(&str, &Path)> = env.iter().map(|(k, v)| (*k, v.as_path())).collect();
    let peer = match Peer::python_env("http", 0, &t.path().join("seen.jsonl"), &env) {
        Ok(p) => p,
        Err(why) => return common::skip(&why),
    };
    let cfg = write_config(t.path(), "mcp.json", json!({"tls": {"url": peer.https_url("/mcp")}}));
    let store = t.path().join("store");
    std::fs::create_dir_all(&store).unwrap();
    // A folder as OpenSSL reads one: the authority under its subject hash.
    let hash = Command::new("openssl").args(["x509", "-hash", "-noout", "-in"]).arg(certs.join("ca.pem")).output().unwrap();
    let hash = String::from_utf8_lossy(&hash.stdout).trim().to_string();
    std::fs::copy(certs.join("ca.pem"), store.join(format!("{hash}.0"))).unwrap();
    let empty = t.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let ca = certs.join("ca.pem").display().to_string();
    let (store, empty) = (store.display().to_string(), empty.display().to_string());
    // The authority in SSL_CERT_FILE, then in SSL_CERT_DIR: the server is trusted.
    for env in [[("SSL_CERT_FILE", ca.as_str()), ("SSL_CERT_DIR", empty.as_str())], [("SSL_CERT_FILE", "/nonexistent"), ("SSL_CERT_DIR", store.as_str())]] {
        let mut s = Serve::start_env(&t, std::slice::from_ref(&cfg), &["--no-ext"], &env);
        s.note("ready");
        let r = s.tool("mcp__tls__echo", json!({"text": "over tls"}));
        assert_eq!(text(&r), "echo: over tls", "{env:?}: {r}");
        s.shutdown();
    }
    // The control: the same server, the authority in neither; the failure
    // names the origin and the certificate.
    let untrusted = [("SSL_CERT_FILE", "/nonexistent"), ("SSL_CERT_DIR", empty.as_str())];
    let mut s = Serve::start_env(&t, std::slice::from_ref(&cfg), &["--no-ext"], &untrusted);
    s.note("ready");
    let e = s.ext("tls");
    let why = e["error"].as_str().unwrap_or("");
    assert_eq!(e["state"], "failed", "{e}");
    assert!(why.starts_with(&format!("initialize: https://127.0.0.1:{}: ", peer.port)) && why.to_lowercase().contains("certificate"), "{e}");
    s.shutdown();
    // Doctor's try names the transport, the url and the certificate error.
    let out = Command::new(zot_proc::BIN)
        .args(["ext", "doctor", "--no-ext", "--mcp-config", cfg.to_str().unwrap()])
        .envs(untrusted)
        .env("ZOT_HOME", t.path().join("zot-home"))
        .current_dir(cwd_of(&t))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&out.stdout);
    let try1 = out.lines().find(|l| l.starts_with("  try 1 ")).unwrap_or("");
    let want = format!("  try 1    2025-11-25 (initialize) over http to {}: https://127.0.0.1:{}: ", peer.https_url("/mcp"), peer.port);
    assert!(try1.starts_with(&want) && try1.to_lowercase().contains("certificate"), "{out}");
}
