//! What a manifest or an `mcp.json` entry declares (docs/protocol.md §9.1):
//! the `confine` field read and validated, each error naming its field by
//! path, and VS Code's `sandboxEnabled` + `sandbox` mapped onto it.

use serde_json::{Map, Value};
use std::path::PathBuf;

/// The network a confined process may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Net {
    /// No `socket()` of an internet family (the default).
    Off,
    /// Any.
    Any,
    /// TCP to (`connect`) and on (`bind`) these ports only; UDP stays.
    Ports { connect: Vec<u16>, bind: Vec<u16> },
}

/// `limits`: each set soft and hard.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Limits {
    pub memory_mb: Option<u64>,
    pub open_files: Option<u64>,
    pub cpu_seconds: Option<u64>,
    /// Processes (threads included) of the extension and its descendants;
    /// [`DEFAULT_PROCS`] when not declared.
    pub procs: Option<u64>,
}

/// `limits.procs` when a confined extension does not declare it (§9.2).
pub const DEFAULT_PROCS: u64 = 512;

impl Limits {
    /// Whether any limit is declared, `procs` alone included (the rule
    /// kind `limits`, docs/protocol.md §9.3).
    pub fn any(&self) -> bool {
        self.memory_mb.is_some() || self.open_files.is_some() || self.cpu_seconds.is_some() || self.procs.is_some()
    }

    /// The process bound in force: declared, else [`DEFAULT_PROCS`].
    pub fn procs(&self) -> u64 {
        self.procs.unwrap_or(DEFAULT_PROCS)
    }
}

/// A declaration, its paths as written (expanded at each start).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    pub read: Vec<String>,
    pub write: Vec<String>,
    pub deny: Vec<String>,
    /// VS Code's `denyWrite`: inside a write grant, left readable only.
    pub read_only: Vec<String>,
    pub net: Net,
    pub unix: bool,
    pub limits: Limits,
    pub required: bool,
    /// `call`: the tools it may reach with `call_tool`, exact names or
    /// prefixes ending in `*`; none by default.
    pub call: Vec<String>,
    /// `watch`: may watch folders (`inotify_add_watch`).
    pub watch: bool,
    /// `env`: names of the host's variables it gets beyond the small set.
    pub env: Vec<String>,
    /// `prompt`: may steer the model (`submit`, `submit_slash`,
    /// `system_prompt`).
    pub prompt: bool,
    /// `namespaces`: may create user namespaces.
    pub namespaces: bool,
    /// VS Code's `allowedDomains`: never enforced (the kernel knows ports).
    pub domains: Vec<String>,
    /// Where relative paths start: the manifest's folder, or the config file's.
    pub base: PathBuf,
    /// Said in the log at each start (a `sandbox` that `confine` overrides).
    pub note: Option<String>,
}

impl Declared {
    /// What `--confine all` gives an extension or server that declares
    /// nothing: the base set, read on the project, write on its data.
    pub fn everything_default(base: PathBuf) -> Declared {
        Declared {
            read: vec!["${PROJECT}".into()],
            write: vec!["${DATA}".into()],
            deny: Vec::new(),
            read_only: Vec::new(),
            net: Net::Off,
            unix: false,
            limits: Limits::default(),
            required: false,
            call: Vec::new(),
            watch: false,
            env: Vec::new(),
            prompt: false,
            namespaces: false,
            domains: Vec::new(),
            base,
            note: None,
        }
    }
}

/// Reads `confine` (and, for a server entry, `sandboxEnabled` +
/// `sandbox`) from a manifest or entry object. `Ok(None)`: nothing declared.
pub fn from_object(obj: &Map<String, Value>, base: PathBuf) -> Result<Option<Declared>, String> {
    let sandbox = match obj.get("sandboxEnabled") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => None,
        Some(Value::Bool(true)) => Some(sandbox(obj.get("sandbox"), base.clone())?),
        Some(_) => return Err("sandboxEnabled: must be true or false".into()),
    };
    match obj.get("confine") {
        None | Some(Value::Null) => Ok(sandbox),
        Some(v) => {
            let mut d = parse(v, base)?;
            if sandbox.is_some() {
                d.note = Some("both `confine` and `sandbox` are declared: `confine` wins".into());
            }
            Ok(Some(d))
        }
    }
}

/// Reads a `confine` value.
pub fn parse(v: &Value, base: PathBuf) -> Result<Declared, String> {
    let obj = v.as_object().ok_or("confine: must be an object")?;
    let mut d = Declared::everything_default(base);
    (d.read, d.write) = (Vec::new(), Vec::new());
    for (key, v) in obj {
        let at = format!("confine.{key}");
        match key.as_str() {
            "read" => d.read = paths(v, &at)?,
            "write" => d.write = paths(v, &at)?,
            "deny" => d.deny = paths(v, &at)?,
            "net" => d.net = net(v)?,
            "unix" => d.unix = flag(v, &at)?,
            "required" => d.required = flag(v, &at)?,
            "limits" => d.limits = limits(v)?,
            "call" => d.call = tools(v, &at)?,
            "watch" => d.watch = flag(v, &at)?,
            "env" => d.env = names(v, &at)?,
            "prompt" => d.prompt = flag(v, &at)?,
            "namespaces" => d.namespaces = flag(v, &at)?,
            _ => return Err(unknown(&at, key, &["read", "write", "deny", "net", "unix", "required", "limits", "call", "watch", "env", "prompt", "namespaces"])),
        }
    }
    Ok(d)
}

/// `confine.raed: unknown field (did you mean "read"?)`.
fn unknown(at: &str, key: &str, known: &[&str]) -> String {
    match crate::nearest::nearest(key, known, crate::nearest::slip(key)) {
        Some(k) => format!("{at}: unknown field (did you mean {k:?}?)"),
        None => format!("{at}: unknown field"),
    }
}

fn flag(v: &Value, at: &str) -> Result<bool, String> {
    v.as_bool().ok_or_else(|| format!("{at}: must be true or false"))
}

fn paths(v: &Value, at: &str) -> Result<Vec<String>, String> {
    let bad = || format!("{at}: must be an array of paths");
    let items = v.as_array().ok_or_else(bad)?;
    items
        .iter()
        .enumerate()
        .map(|(i, p)| match p.as_str() {
            Some("") => Err(format!("{at}[{i}]: must not be empty")),
            Some(s) if s.contains('\0') => Err(format!("{at}[{i}]: holds a NUL byte")),
            Some(s) => Ok(s.to_string()),
            None => Err(bad()),
        })
        .collect()
}

/// `call`: tool names, or prefixes ending in `*` (a lone `*` is every tool).
fn tools(v: &Value, at: &str) -> Result<Vec<String>, String> {
    let bad = || format!("{at}: must be an array of tool names");
    let items = v.as_array().ok_or_else(bad)?;
    items
        .iter()
        .enumerate()
        .map(|(i, t)| match t.as_str() {
            Some("") => Err(format!("{at}[{i}]: must not be empty")),
            Some(s) if s.strip_suffix('*').unwrap_or(s).contains('*') => Err(format!("{at}[{i}]: \"{s}\": `*` may only end a name")),
            Some(s) => Ok(s.to_string()),
            None => Err(bad()),
        })
        .collect()
}

/// `env`: variable names.
fn names(v: &Value, at: &str) -> Result<Vec<String>, String> {
    let bad = || format!("{at}: must be an array of variable names");
    let items = v.as_array().ok_or_else(bad)?;
    items
        .iter()
        .enumerate()
        .map(|(i, t)| match t.as_str() {
            Some(s) if !s.is_empty() && !s.contains(['=', '\0']) => Ok(s.to_string()),
            Some(s) => Err(format!("{at}[{i}]: \"{s}\" is not a variable name")),
            None => Err(bad()),
        })
        .collect()
}

impl Declared {
    /// Whether `call` lets it reach `tool`.
    pub fn may_call(&self, tool: &str) -> bool {
        self.call.iter().any(|c| match c.strip_suffix('*') {
            Some(prefix) => tool.starts_with(prefix),
            None => c == tool,
        })
    }
}

fn net(v: &Value) -> Result<Net, String> {
    match v {
        Value::Bool(false) => Ok(Net::Off),
        Value::Bool(true) => Ok(Net::Any),
        Value::Object(o) => {
            let (mut connect, mut bind) = (Vec::new(), Vec::new());
            for (key, v) in o {
                let at = format!("confine.net.{key}");
                match key.as_str() {
                    "connect" => connect = ports(v, &at)?,
                    "bind" => bind = ports(v, &at)?,
                    _ => return Err(unknown(&at, key, &["connect", "bind"])),
                }
            }
            Ok(Net::Ports { connect, bind })
        }
        _ => Err("confine.net: must be false, true or {\"connect\": [ports], \"bind\": [ports]}".into()),
    }
}

fn ports(v: &Value, at: &str) -> Result<Vec<u16>, String> {
    let items = v.as_array().ok_or_else(|| format!("{at}: must be an array of ports"))?;
    items
        .iter()
        .map(|p| match p.as_u64() {
            Some(n) if (1..=65535).contains(&n) => Ok(n as u16),
            Some(n) => Err(format!("{at}: port {n} is outside 1-65535")),
            None if p.is_i64() || p.is_f64() => Err(format!("{at}: port {p} is outside 1-65535")),
            None => Err(format!("{at}: {p} is not a port")),
        })
        .collect()
}

fn limits(v: &Value) -> Result<Limits, String> {
    let obj = v.as_object().ok_or("confine.limits: must be an object")?;
    let mut l = Limits::default();
    for (key, v) in obj {
        let at = format!("confine.limits.{key}");
        let slot = match key.as_str() {
            "memory_mb" => &mut l.memory_mb,
            "open_files" => &mut l.open_files,
            "cpu_seconds" => &mut l.cpu_seconds,
            "procs" => &mut l.procs,
            _ => return Err(unknown(&at, key, &["memory_mb", "open_files", "cpu_seconds", "procs"])),
        };
        *slot = Some(v.as_u64().filter(|n| (1..=1 << 40).contains(n)).ok_or_else(|| format!("{at}: must be a whole number above 0"))?);
    }
    Ok(l)
}

/// VS Code's form: its reads are a deny-list, so `read` is `/` less
/// `denyRead`; `write` is `allowWrite` less `denyWrite` (left readable);
/// a domain list is network on, the domains reported as not enforced.
fn sandbox(v: Option<&Value>, base: PathBuf) -> Result<Declared, String> {
    let empty = Map::new();
    let obj = match v {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(o)) => o,
        Some(_) => return Err("sandbox: must be an object".into()),
    };
    let section = |key: &str| match obj.get(key) {
        None | Some(Value::Null) => Ok(&empty),
        Some(Value::Object(o)) => Ok(o),
        Some(_) => Err(format!("sandbox.{key}: must be an object")),
    };
    let list = |o: &Map<String, Value>, at: &str, key: &str| match o.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(v) => paths(v, &format!("sandbox.{at}.{key}")),
    };
    let (fs, network) = (section("filesystem")?, section("network")?);
    let domains = list(network, "network", "allowedDomains")?;
    let mut d = Declared::everything_default(base);
    d.read = vec!["/".into()];
    d.write = list(fs, "filesystem", "allowWrite")?;
    d.deny = list(fs, "filesystem", "denyRead")?;
    d.read_only = list(fs, "filesystem", "denyWrite")?;
    d.net = if domains.is_empty() { Net::Off } else { Net::Any };
    d.domains = domains;
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(v: Value) -> String {
        parse(&v, PathBuf::from("/x")).unwrap_err()
    }

    #[test]
    fn errors_name_the_field_by_its_path() {
        assert_eq!(err(json!({"net": {"connect": [70000]}})), "confine.net.connect: port 70000 is outside 1-65535");
        assert_eq!(err(json!({"net": {"bind": [0]}})), "confine.net.bind: port 0 is outside 1-65535");
        assert_eq!(err(json!({"reed": []})), r#"confine.reed: unknown field (did you mean "read"?)"#);
        assert_eq!(err(json!({"zzzzzz": []})), "confine.zzzzzz: unknown field");
        assert_eq!(err(json!({"limits": {"proc": 1}})), r#"confine.limits.proc: unknown field (did you mean "procs"?)"#);
        assert_eq!(err(json!({"read": "x"})), "confine.read: must be an array of paths");
        assert_eq!(err(json!({"limits": {"memory_mb": -1}})), "confine.limits.memory_mb: must be a whole number above 0");
        assert_eq!(err(json!({"net": "none"})).split(':').next(), Some("confine.net"));
        assert_eq!(err(json!([])), "confine: must be an object");
    }

    #[test]
    fn call_watch_env_prompt_namespaces_and_procs() {
        let d = parse(&json!({"call": ["mcp__github__*", "weather"], "watch": true, "env": ["API_KEY"], "prompt": true, "namespaces": true, "limits": {"procs": 8}}), PathBuf::from("/x")).unwrap();
        assert!(d.may_call("mcp__github__issues") && d.may_call("weather") && !d.may_call("weather2") && !d.may_call("bash"));
        assert_eq!((d.watch, d.env, d.prompt, d.namespaces, d.limits.procs()), (true, vec!["API_KEY".to_string()], true, true, 8));
        let d = parse(&json!({}), PathBuf::from("/x")).unwrap();
        assert!(!d.may_call("anything") && !d.watch && !d.prompt && !d.namespaces && d.env.is_empty());
        assert_eq!(d.limits.procs(), DEFAULT_PROCS);
        assert_eq!(err(json!({"call": ["a*b"]})), "confine.call[0]: \"a*b\": `*` may only end a name");
        assert_eq!(err(json!({"env": ["A=B"]})), "confine.env[0]: \"A=B\" is not a variable name");
        assert_eq!(err(json!({"watch": 1})), "confine.watch: must be true or false");
        assert_eq!(err(json!({"limits": {"procs": 0}})), "confine.limits.procs: must be a whole number above 0");
    }

    #[test]
    fn defaults_are_no_network_and_no_unix() {
        let d = parse(&json!({"read": ["a"]}), PathBuf::from("/x")).unwrap();
        assert_eq!((d.net, d.unix, d.required), (Net::Off, false, false));
        let d = parse(&json!({"net": {"connect": [443, 80]}}), PathBuf::from("/x")).unwrap();
        assert_eq!(d.net, Net::Ports { connect: vec![443, 80], bind: vec![] });
    }

    #[test]
    fn vscode_sandbox_maps_and_confine_wins() {
        let entry = json!({"sandboxEnabled": true, "sandbox": {"filesystem": {"allowWrite": ["/w"], "denyRead": ["~/.ssh"], "denyWrite": ["/w/ro"]}, "network": {"allowedDomains": ["example.com"]}}});
        let d = from_object(entry.as_object().unwrap(), PathBuf::from("/x")).unwrap().unwrap();
        assert_eq!((d.read, d.write, d.deny, d.read_only), (vec!["/".to_string()], vec!["/w".to_string()], vec!["~/.ssh".to_string()], vec!["/w/ro".to_string()]));
        assert_eq!((d.net, d.domains), (Net::Any, vec!["example.com".to_string()]));
        let entry = json!({"sandboxEnabled": true, "sandbox": {}, "confine": {"read": ["/r"]}});
        let d = from_object(entry.as_object().unwrap(), PathBuf::from("/x")).unwrap().unwrap();
        assert_eq!((d.read, d.net, d.note.is_some()), (vec!["/r".to_string()], Net::Off, true));
        let off = json!({"sandboxEnabled": false, "sandbox": {}});
        assert_eq!(from_object(off.as_object().unwrap(), PathBuf::from("/x")).unwrap(), None);
    }
}
