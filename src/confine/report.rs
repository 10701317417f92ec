//! Saying what is enforced (docs/protocol.md §9.3): the rule kinds of a
//! declaration, each either enforced by this kernel or not; the listing's
//! `confinement`, the log line at each start, the console's mark and
//! `zot trust`'s line.

use super::policy::{Declared, Net};
use serde_json::{json, Value};

/// The kinds of one declaration, split by what this kernel enforces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// `None`: nothing declared, full user rights.
    pub confined: bool,
    pub enforced: Vec<&'static str>,
    pub not_enforced: Vec<&'static str>,
    pub landlock_abi: u32,
    /// What it may read and write beyond the base set, as the trust line
    /// shows them (set by [`super::listed`]).
    pub reads: Vec<String>,
    pub writes: Vec<String>,
}

/// What `d` gets on this kernel; `off`: enforcement is off (`--confine off`).
pub fn report(d: Option<&Declared>, off: bool) -> Report {
    let abi = super::landlock::abi();
    let Some(d) = d else {
        return Report { confined: false, enforced: Vec::new(), not_enforced: Vec::new(), landlock_abi: abi, reads: Vec::new(), writes: Vec::new() };
    };
    let seccomp = super::sys::AUDIT_ARCH_NATIVE.is_some();
    let mut kinds = vec![("files", abi >= 1), ("no_new_privs", true), ("metadata", false), ("unix", !d.unix && seccomp), ("syscalls", seccomp), ("scopes", abi >= 6)];
    // `call` is enforced by the host itself, on every kernel.
    kinds.push(("calls", true));
    match d.net {
        Net::Off => kinds.push(("net_off", seccomp)),
        Net::Ports { .. } => kinds.push(("tcp", abi >= 4)),
        Net::Any => {}
    }
    if d.limits.any() {
        kinds.push(("limits", true));
    }
    kinds.push(("procs", super::procs::enforced()));
    if !d.domains.is_empty() {
        kinds.push(("domains", false));
    }
    let (mut enforced, mut not_enforced) = (Vec::new(), Vec::new());
    for (kind, on) in kinds {
        if on && !off { enforced.push(kind) } else { not_enforced.push(kind) }
    }
    Report { confined: !off, enforced, not_enforced, landlock_abi: abi, reads: Vec::new(), writes: Vec::new() }
}

impl Report {
    /// The listing's `confinement`: `null`, or the two lists and the ABI.
    pub fn to_json(&self) -> Value {
        if !self.confined && self.not_enforced.is_empty() {
            return Value::Null;
        }
        let mut v = json!({"enforced": self.enforced, "not_enforced": self.not_enforced, "landlock_abi": self.landlock_abi});
        if self.confined {
            v["reads"] = json!(self.reads);
            v["writes"] = json!(self.writes);
        }
        v
    }

    /// The console's mark.
    pub fn mark(&self) -> &'static str {
        match (self.enforced.contains(&"files"), self.not_enforced.iter().all(|k| *k == "metadata")) {
            (false, _) => "full access",
            (true, true) => "confined",
            (true, false) => "partly confined",
        }
    }

    /// The log line at each start.
    pub fn log_line(&self) -> String {
        if !self.confined && self.not_enforced.is_empty() {
            return "confinement: none declared (full access to the user's files and network)".into();
        }
        let list = |v: &[&str]| if v.is_empty() { "none".to_string() } else { v.join(", ") };
        format!(
            "confinement: enforced: {}; not enforced: {}; landlock ABI {}",
            list(&self.enforced),
            list(&self.not_enforced),
            self.landlock_abi
        )
    }
}

/// `zot trust`'s line for one project extension or server (docs/protocol.md
/// §9.3): `d` the rules in force (`None`: full access), `reads` and
/// `writes` the items of its resolved grants ([`super::resolve::Reach::items`]).
pub fn trust_line(name: &str, d: Option<&Declared>, reads: &[String], writes: &[String]) -> String {
    let Some(d) = d else { return format!("  {name}: full access to your files and network") };
    let list = |v: &[String]| if v.is_empty() { "nothing".to_string() } else { v.join(", ") };
    let net = match &d.net {
        Net::Off => "none".to_string(),
        Net::Any => "any".to_string(),
        Net::Ports { connect, bind } => {
            let mut ports: Vec<String> = Vec::new();
            for p in connect.iter().chain(bind) {
                if !ports.contains(&p.to_string()) {
                    ports.push(p.to_string());
                }
            }
            let tcp = if ports.is_empty() { "none".to_string() } else { ports.join(", ") };
            format!("TCP ports {tcp}; UDP: any")
        }
    };
    let mut line = format!("  {name}: reads {}; writes {}; network: {net}", list(reads), list(writes));
    if d.unix {
        line.push_str("; unix sockets: any");
    }
    if !d.call.is_empty() {
        line.push_str(&format!("; calls: {}", d.call.join(", ")));
    }
    if !d.env.is_empty() {
        line.push_str(&format!("; env: {}", d.env.join(", ")));
    }
    for (on, what) in [(d.watch, "watches folders"), (d.prompt, "steers the model"), (d.namespaces, "user namespaces")] {
        if on {
            line.push_str(&format!("; {what}"));
        }
    }
    line
}

/// `zot ext doctor`'s line on what this kernel can enforce.
pub fn kernel_support() -> String {
    let abi = super::landlock::abi();
    let what = match abi {
        0 => "no Landlock: files, ports and scopes are not enforced",
        1..=3 => "files",
        4 | 5 => "files and TCP ports",
        _ => "files, TCP ports, and the signal and abstract-socket scopes",
    };
    let seccomp = if super::sys::AUDIT_ARCH_NATIVE.is_some() { "yes" } else { "not on this architecture" };
    format!("confinement: Landlock ABI {abi} ({what}); seccomp filter: {seccomp}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn every_kind_in_one_list() {
        let mut d = Declared::everything_default(PathBuf::from("/x"));
        d.limits.memory_mb = Some(64);
        d.domains = vec!["a.example".into()];
        let r = report(Some(&d), false);
        let mut all: Vec<&str> = r.enforced.iter().chain(&r.not_enforced).copied().collect();
        all.sort_unstable();
        assert_eq!(all, ["calls", "domains", "files", "limits", "metadata", "net_off", "no_new_privs", "procs", "scopes", "syscalls", "unix"]);
        assert!(r.not_enforced.contains(&"metadata") && r.not_enforced.contains(&"domains"));
        // `procs` alone is a declared limit too.
        let mut p = Declared::everything_default(PathBuf::from("/x"));
        assert!(!report(Some(&p), false).enforced.contains(&"limits"));
        p.limits.procs = Some(8);
        assert!(report(Some(&p), false).enforced.contains(&"limits"));
        let off = report(Some(&d), true);
        assert!(off.enforced.is_empty() && off.not_enforced.len() == 11);
        assert_eq!(report(None, false).to_json(), Value::Null);
    }

    #[test]
    fn trust_lines() {
        let mut d = Declared::everything_default(PathBuf::from("/x"));
        let (r, w) = (vec!["${PROJECT}".to_string()], vec!["${DATA}".to_string()]);
        assert_eq!(trust_line("a", Some(&d), &r, &w), "  a: reads ${PROJECT}; writes ${DATA}; network: none");
        d.net = Net::Ports { connect: vec![443, 80], bind: vec![] };
        assert_eq!(trust_line("a", Some(&d), &[], &[]), "  a: reads nothing; writes nothing; network: TCP ports 443, 80; UDP: any");
        (d.net, d.unix, d.call, d.env, d.watch, d.prompt, d.namespaces) = (Net::Any, true, vec!["a".into(), "b*".into()], vec!["V".into(), "W".into()], true, true, true);
        assert_eq!(
            trust_line("a", Some(&d), &[], &[]),
            "  a: reads nothing; writes nothing; network: any; unix sockets: any; calls: a, b*; env: V, W; watches folders; steers the model; user namespaces"
        );
        assert_eq!(trust_line("b", None, &[], &[]), "  b: full access to your files and network");
    }
}
