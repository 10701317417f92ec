//! MCP server configuration files (docs/protocol.md §8.1): the
//! `{"mcpServers": {"NAME": {...}}}` format other MCP hosts share, read
//! into one [`ServerSpec`] per server, and each turned into the manifest
//! the host runs it by.
//!
//! Decisions where the protocol is silent:
//! - A server entry with a field of the wrong type (or no `command`) is
//!   still a server of that name: it is listed `failed` with the reason,
//!   like an unsupported transport, and nothing else breaks. A missing
//!   `command`, one that starts with `~` (nothing expands it), one that
//!   names no program and an unset variable in `env` name the file and
//!   the field.
//! - A file whose JSON is broken, or without an `mcpServers` object, is
//!   one failed entry named `mcp.json` in listings; given with
//!   `--mcp-config` it is an error at start instead.
//! - Servers of one file load in the order of their names (byte order),
//!   as the folders of extensions do.
//! - `idleTimeout: 0` means never, as the default does.

use crate::home::validate_name;
use crate::manifest::{Manifest, RestartPolicy};
use serde_json::{Map, Value};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// The file name of project and global MCP configuration.
pub const MCP_FILE: &str = "mcp.json";

/// `connectTimeout` when the entry gives none.
pub const DEFAULT_CONNECT: Duration = Duration::from_secs(30);

/// The fields of a server entry the host reads.
pub const KNOWN: [&str; 22] = [
    "command",
    "args",
    "env",
    "cwd",
    "transport",
    "type",
    "url",
    "disabled",
    "enabledTools",
    "disabledTools",
    "connectTimeout",
    "requestTimeout",
    "idleTimeout",
    "restart",
    "roots",
    "protocol",
    "confine",
    "sandboxEnabled",
    "sandbox",
    "headers",
    "bearerTokenEnvVar",
    "oauth",
];

/// How a remote server is reached (docs/protocol.md §8.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// `http` / `streamable-http`.
    Http,
    /// `sse`: the 2024-11-05 HTTP+SSE transport.
    Sse,
    /// A `url` with no `type`: Streamable HTTP, one `sse` try when the
    /// `initialize` POST is refused as a 2024-11-05 server refuses it.
    Auto,
}

/// A remote server's entry: where and how it is reached, unexpanded.
#[derive(Debug, Clone, PartialEq)]
pub struct Remote {
    /// `url` as the entry wrote it, before `${VAR}` expansion.
    pub url: String,
    /// `type` (or `transport`), or [`Transport::Auto`] for a bare `url`.
    pub transport: Transport,
    /// `headers`, unexpanded: their values are never shown.
    pub headers: Vec<(String, String)>,
    /// `bearerTokenEnvVar`.
    pub bearer_env: Option<String>,
    /// `oauth`: signing in through the browser (`zot mcp login NAME`).
    pub oauth: Option<OAuth>,
    /// The `url` as an editor's file wrote it (`${env:VAR}`), where its
    /// variables were rewritten for the expansion: what listings show.
    pub written: Option<String>,
}

/// A remote entry's `oauth` (Claude Code's fields).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OAuth {
    /// `clientId`: no dynamic registration.
    pub client_id: Option<String>,
    /// `clientSecret`.
    pub client_secret: Option<String>,
    /// `scopes`, space-separated.
    pub scopes: Option<String>,
    /// `callbackPort`: the loopback port of the redirect.
    pub callback_port: Option<u16>,
    /// `authServerMetadataUrl`.
    pub auth_server_metadata_url: Option<String>,
}

impl Remote {
    /// The url and headers with their variables expanded from the
    /// environment; `bearerTokenEnvVar` as `Authorization`. Errors name
    /// the header and the variable, never a value: what keeps the server
    /// from connecting, known before it is tried.
    pub fn expand(&self) -> Result<(String, Vec<(String, String)>), String> {
        let lookup = |name: &str| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
        let why = |what: String, e: crate::envexpand::ExpandError| match e {
            crate::envexpand::ExpandError::Unset { var, .. } => format!("{what}: variable {var} is not set"),
            crate::envexpand::ExpandError::Syntax { msg, .. } => format!("{what}: {msg}"),
        };
        let url = crate::envexpand::expand("url", &self.url, &lookup).map_err(|e| why("url".into(), e))?;
        let mut headers = Vec::new();
        for (k, v) in &self.headers {
            let value = crate::envexpand::expand(k, v, &lookup).map_err(|e| why(format!("header {k}"), e))?;
            if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                return Err(format!("header {k}: its value holds a line break"));
            }
            headers.push((k.clone(), value));
        }
        if let Some(var) = &self.bearer_env {
            let token = lookup(var).filter(|t| !t.is_empty()).ok_or_else(|| format!("bearerTokenEnvVar: variable {var} is not set"))?;
            headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
            headers.push(("Authorization".into(), format!("Bearer {token}")));
        }
        Ok((url, headers))
    }

    /// The url as listings show it: as written, without user information,
    /// a query string or a fragment.
    pub fn shown_url(&self) -> String {
        shown(self.written.as_deref().unwrap_or(&self.url))
    }

    /// `transport` in listings.
    pub fn transport_name(&self) -> &'static str {
        match self.transport {
            Transport::Sse => "sse",
            Transport::Http | Transport::Auto => "http",
        }
    }

    /// Whether a kept login can serve it: an `oauth` entry, or one that
    /// sends no credentials of its own (one with headers keeps to them).
    pub fn may_log_in(&self) -> bool {
        self.oauth.is_some() || self.auth_name() == "none"
    }

    /// `auth` in listings.
    pub fn auth_name(&self) -> &'static str {
        // User information in the url is sent as basic authentication.
        let userinfo = shown(&self.url) != self.url.split(['?', '#']).next().unwrap_or("");
        if self.oauth.is_some() {
            "oauth"
        } else if self.bearer_env.is_some() || !self.headers.is_empty() || userinfo {
            "headers"
        } else {
            "none"
        }
    }

    /// The variables its `url`, `headers` and `bearerTokenEnvVar` expand.
    pub fn variables(&self) -> Vec<String> {
        let mut out = Vec::new();
        for v in std::iter::once(&self.url).chain(self.headers.iter().map(|(_, v)| v)) {
            let mut rest = v.as_str();
            while let Some(i) = rest.find("${") {
                let body = &rest[i + 2..];
                let Some(end) = body.find('}') else { break };
                let name = body[..end].split(":-").next().unwrap_or("").to_string();
                if !name.is_empty() && !out.contains(&name) {
                    out.push(name);
                }
                rest = &body[end..];
            }
        }
        if let Some(b) = &self.bearer_env {
            if !out.contains(b) {
                out.push(b.clone());
            }
        }
        out
    }
}

/// The era a server is spoken to in (docs/protocol.md §8.4.3 rule 11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// `initialize` first, one modern try when the server refuses it.
    #[default]
    Auto,
    /// `2026-07-28` only.
    Modern,
    /// `2025-11-25`: the handshake era only.
    Legacy,
}

/// Which roots a server is told of (docs/protocol.md §8.2).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Roots {
    /// None declared: `roots/list` gets -32601 (the default).
    #[default]
    Off,
    /// `true`: the project folder (`--cwd`).
    Project,
    /// These folders, absolute.
    Dirs(Vec<PathBuf>),
}

/// One server of a configuration file.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    /// The server's name (its key in `mcpServers`).
    pub name: String,
    /// The configuration file it came from (absolute).
    pub file: PathBuf,
    /// `command` as given.
    pub command: String,
    /// `args`.
    pub args: Vec<String>,
    /// `env`, unexpanded.
    pub env: Vec<(String, String)>,
    /// The folder it runs in: `cwd` against the file's folder, or the
    /// default of its file (docs/protocol.md §8.1).
    pub cwd: PathBuf,
    /// Whether the entry names its `cwd` (not the default).
    pub cwd_given: bool,
    /// Why it cannot run at all (an unsupported transport, a bad field).
    pub error: Option<String>,
    /// `disabled`.
    pub disabled: bool,
    /// `enabledTools`: only these of its tools are offered.
    pub enabled_tools: Option<Vec<String>>,
    /// `disabledTools`: these are not offered.
    pub disabled_tools: Vec<String>,
    /// `connectTimeout`: spawn to the `initialize` answer.
    pub connect_timeout: Duration,
    /// `requestTimeout`: per call; the tool timeout when `None`.
    pub request_timeout: Option<Duration>,
    /// `idleTimeout`: stopped after this long unused; never when `None`.
    pub idle_timeout: Option<Duration>,
    /// `restart`, default `on-failure`.
    pub restart: RestartPolicy,
    /// `roots`.
    pub roots: Roots,
    /// `protocol`.
    pub protocol: Protocol,
    /// Fields the host does not know, to log once.
    pub unknown: Vec<String>,
    /// `confine`, or VS Code's `sandbox` mapped onto it (docs/protocol.md §9.1).
    pub(crate) confine: Option<crate::confine::Declared>,
    /// A remote server (`url`): no process runs for it.
    pub remote: Option<Remote>,
    /// The host's variables its `command`, `args` and `cwd` were expanded
    /// from when the file was read (the client files of §8.6 expand them
    /// there): a confined start that withholds one of them does not run,
    /// as its `env` would not expand it.
    pub expanded_vars: Vec<String>,
}

impl ServerSpec {
    /// Whether the server offers tool `name` (its own name for it).
    pub fn offers(&self, name: &str) -> bool {
        if self.disabled_tools.iter().any(|t| t == name) {
            return false;
        }
        self.enabled_tools.as_ref().is_none_or(|only| only.iter().any(|t| t == name))
    }

    /// The program to run: its `command` resolved as a manifest's `exec`
    /// (docs/protocol.md §1) against the file's folder; the error names the
    /// file and the field, and the path once (twice only when the command
    /// as written is not the path tried).
    pub fn resolve_command(&self) -> Result<PathBuf, String> {
        if let Some(why) = &self.error {
            return Err(why.clone());
        }
        self.manifest().resolve_exec().map_err(|e| match e {
            crate::manifest::ManifestError::Exec { msg, exec, .. } => {
                let file = self.file.display();
                match msg.strip_prefix(&format!("{exec}: ")) {
                    Some(why) if exec == self.command => format!("{file}: field `command`: {exec}: {why}"),
                    _ => format!("{file}: field `command` {:?}: {msg}", self.command),
                }
            }
            other => other.to_string(),
        })
    }

    /// Why its `env` cannot be expanded, naming the file and the field.
    pub(crate) fn env_error(&self, e: &crate::envexpand::ExpandError) -> String {
        let why = e.to_string();
        format!("{}: field `env`: {}", self.file.display(), why.strip_prefix("env ").unwrap_or(&why))
    }

    /// The manifest the host runs the server by: its command (a path with
    /// a `/` made absolute against the file's folder), args, env, restart
    /// policy and folder.
    pub fn manifest(&self) -> Manifest {
        let base = self.file.parent().unwrap_or(Path::new("/"));
        let exec = if self.command.is_empty() {
            // Never run (the entry's error says why), and never static.
            "(no command)".to_string()
        } else if self.command.contains('/') && !Path::new(&self.command).is_absolute() {
            join_clean(base, &self.command).display().to_string()
        } else {
            self.command.clone()
        };
        Manifest {
            name: self.name.clone(),
            version: String::new(),
            exec,
            args: self.args.clone(),
            language: String::new(),
            description: String::new(),
            enabled: !self.disabled,
            skills: Vec::new(),
            theme: None,
            env: self.env.clone(),
            restart: self.restart,
            dir: self.cwd.clone(),
            confine: self.confine.clone(),
            unknown: Vec::new(),
        }
    }
}

/// What one configuration file holds.
#[derive(Debug, Default)]
pub struct ConfigFile {
    /// Its servers, by name.
    pub servers: Vec<ServerSpec>,
    /// Entries whose name is not a safe file-name component: the name as
    /// given and why.
    pub bad_names: Vec<(String, String)>,
}

/// Reads `path`: `Ok(None)` when it does not exist, `Err` when it cannot be
/// read or is not a configuration file. Relative paths and the default
/// `cwd` are the file's folder's; [`crate::mcpserver::files`] reads a file
/// as the client that wrote it would.
pub fn read_file(path: &Path) -> Result<Option<ConfigFile>, String> {
    match read_bytes(path)? {
        Some(bytes) => parse(&bytes, path).map(Some),
        None => Ok(None),
    }
}

/// The bytes of `path`: `Ok(None)` when it does not exist; a FIFO or
/// anything else but a regular file is refused without waiting on it.
pub fn read_bytes(path: &Path) -> Result<Option<Vec<u8>>, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: a FIFO put where the file belongs (a project's
    // .zot/mcp.json) must not hang every start in that folder.
    let opened = std::fs::File::options().read(true).custom_flags(libc::O_NONBLOCK).open(path);
    let mut f = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read: {e}")),
    };
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return Err("cannot read: not a regular file".to_string());
    }
    let mut bytes = Vec::new();
    if let Err(e) = f.read_to_end(&mut bytes) {
        return Err(format!("cannot read: {e}"));
    }
    Ok(Some(bytes))
}

/// Checks a `--mcp-config FILE` at start: it must exist and be a
/// configuration file. The error is the `<why>` of `zot: --mcp-config
/// FILE: <why>`.
pub fn check_given(path: &Path) -> Result<(), String> {
    match read_file(path)? {
        Some(_) => Ok(()),
        None => Err("no such file or directory".into()),
    }
}

/// Parses a configuration file's bytes (JSONC, docs/protocol.md §8.6);
/// `path` (absolute) anchors relative paths, the default `cwd`, and names
/// the file.
pub fn parse(bytes: &[u8], path: &Path) -> Result<ConfigFile, String> {
    let v = crate::jsonc::parse(bytes)?;
    let Value::Object(top) = v else { return Err("not a JSON object".into()) };
    let dir = path.parent().unwrap_or(Path::new("/"));
    from_object(top, "mcpServers", path, dir, dir)
}

/// The servers of a file's top-level object `top`, under `key`: relative
/// `command`, `cwd` and `roots` against `base`, a server without `cwd` in
/// `default_cwd`.
pub fn from_object(mut top: Map<String, Value>, key: &str, path: &Path, base: &Path, default_cwd: &Path) -> Result<ConfigFile, String> {
    let servers = match top.remove(key) {
        Some(Value::Object(m)) => m,
        Some(_) => return Err(format!("`{key}` must be an object")),
        None => return Err(format!("no `{key}` object")),
    };
    let mut out = ConfigFile::default();
    for (name, entry) in servers {
        if let Err(e) = validate_name(&name) {
            out.bad_names.push((name, e.to_string()));
            continue;
        }
        out.servers.push(server(name, entry, path, base, default_cwd));
    }
    Ok(out)
}

fn server(name: String, entry: Value, file: &Path, base: &Path, default_cwd: &Path) -> ServerSpec {
    let base = base.to_path_buf();
    let mut spec = ServerSpec {
        name,
        file: file.to_path_buf(),
        command: String::new(),
        args: Vec::new(),
        env: Vec::new(),
        cwd: default_cwd.to_path_buf(),
        cwd_given: false,
        error: None,
        disabled: false,
        enabled_tools: None,
        disabled_tools: Vec::new(),
        connect_timeout: DEFAULT_CONNECT,
        request_timeout: None,
        idle_timeout: None,
        restart: RestartPolicy::OnFailure,
        roots: Roots::Off,
        protocol: Protocol::Auto,
        unknown: Vec::new(),
        confine: None,
        remote: None,
        expanded_vars: Vec::new(),
    };
    let Value::Object(obj) = entry else {
        spec.error = Some("its entry must be a JSON object".into());
        return spec;
    };
    spec.unknown = obj.keys().filter(|k| !KNOWN.contains(&k.as_str())).cloned().collect();
    if let Err(e) = fill(&mut spec, &obj, &base, file) {
        spec.error = Some(e);
        if spec.remote.is_none() {
            spec.remote = sketch(&obj);
        }
    }
    spec
}

/// What listings show of an invalid entry that names a `url` (its
/// `transport`, `url` and `auth`, docs/protocol.md §8.5): what of it reads.
fn sketch(obj: &Map<String, Value>) -> Option<Remote> {
    let url = obj.get("url").and_then(Value::as_str).filter(|u| !u.is_empty())?.to_string();
    let kind = obj.get("type").or_else(|| obj.get("transport")).and_then(Value::as_str);
    let transport = match kind {
        Some("sse") => Transport::Sse,
        Some("http" | "streamable-http") => Transport::Http,
        _ => Transport::Auto,
    };
    let headers = match obj.get("headers") {
        Some(Value::Object(h)) => h.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect(),
        _ => Vec::new(),
    };
    let bearer_env = obj.get("bearerTokenEnvVar").and_then(Value::as_str).map(str::to_string);
    // Only whether it has `oauth` shows (as `auth`).
    let oauth = obj.get("oauth").is_some_and(Value::is_object).then(OAuth::default);
    Some(Remote { url, transport, headers, bearer_env, oauth, written: None })
}

fn fill(spec: &mut ServerSpec, obj: &Map<String, Value>, base: &Path, file: &Path) -> Result<(), String> {
    // The disabled flag is read first: a disabled entry is listed as such
    // whatever else is wrong with it.
    if let Some(v) = obj.get("disabled") {
        spec.disabled = v.as_bool().ok_or("field `disabled` must be a boolean")?;
    }
    let text = |key: &str| match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("field `{key}` must be a string")),
    };
    let transport = match (text("type")?, text("transport")?) {
        (Some(a), Some(b)) if a != b => return Err(format!("type {a:?} and transport {b:?} differ")),
        (a, b) => a.or(b),
    };
    if let Some(t) = transport.as_deref() {
        if !matches!(t, "stdio" | "http" | "streamable-http" | "sse") {
            return Err(format!("type {t:?} is not supported (stdio, http, streamable-http, sse)"));
        }
    }
    let command = match obj.get("command") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(_) => return Err("field `command` must be a non-empty string".into()),
    };
    let url = text("url")?;
    if url.is_some() && command.is_some() {
        return Err("url and command cannot both be set".into());
    }
    let remote = match (transport.as_deref(), &url) {
        (Some("http" | "streamable-http"), _) => Some(Transport::Http),
        (Some("sse"), _) => Some(Transport::Sse),
        (None, Some(_)) => Some(Transport::Auto),
        _ => None,
    };
    if let Some(kind) = remote {
        return remote_entry(spec, obj, kind, url);
    }
    match (transport.as_deref(), &command) {
        // Nothing expands `~` in a command (no shell runs it): said here
        // rather than as a file that does not exist.
        (_, Some(c)) if c.starts_with('~') => {
            let home = std::env::var("HOME").ok().filter(|h| h.starts_with('/'));
            let full = match (home, c.strip_prefix("~/")) {
                (Some(h), Some(rest)) => format!(" ({}/{rest})", h.trim_end_matches('/')),
                _ => String::new(),
            };
            return Err(format!("{}: field `command` {c:?}: `~` is not expanded: write the absolute path{full}", file.display()));
        }
        (_, Some(c)) => spec.command = c.clone(),
        (_, None) => {
            return Err(format!("{}: field `command` is missing: the program that runs the server", file.display()))
        }
    }
    spec.args = strings(obj, "args")?.unwrap_or_default();
    if let Some(v) = obj.get("env") {
        let Value::Object(env) = v else { return Err("field `env` must be an object of strings".into()) };
        for (k, v) in env {
            let Value::String(s) = v else { return Err(format!("field `env`: {k} must be a string")) };
            if k.is_empty() || k.contains('=') || k.contains('\0') || s.contains('\0') {
                return Err(format!("field `env`: invalid entry {k:?}"));
            }
            spec.env.push((k.clone(), s.clone()));
        }
    }
    match obj.get("cwd") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if !s.is_empty() => {
            spec.cwd = join_clean(base, s);
            spec.cwd_given = true;
        }
        Some(_) => return Err("field `cwd` must be a non-empty string".into()),
    }
    common(spec, obj, base)?;
    spec.idle_timeout = secs(obj, "idleTimeout", true)?;
    spec.confine = crate::confine::policy::from_object(obj, base.to_path_buf())?;
    Ok(())
}

/// The fields stdio and remote entries share: `protocol`, the tool
/// filters, the timeouts, `restart` and `roots`.
fn common(spec: &mut ServerSpec, obj: &Map<String, Value>, base: &Path) -> Result<(), String> {
    spec.protocol = protocol(obj)?;
    spec.enabled_tools = strings(obj, "enabledTools")?;
    spec.disabled_tools = strings(obj, "disabledTools")?.unwrap_or_default();
    if let Some(d) = secs(obj, "connectTimeout", false)? {
        spec.connect_timeout = d;
    }
    spec.request_timeout = secs(obj, "requestTimeout", false)?;
    match obj.get("restart") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => {
            spec.restart = RestartPolicy::parse(s)
                .ok_or_else(|| format!("field `restart` must be never, on-failure or always, not {s:?}"))?
        }
        Some(_) => return Err("field `restart` must be a string".into()),
    }
    spec.roots = match obj.get("roots") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => Roots::Off,
        Some(Value::Bool(true)) => Roots::Project,
        Some(Value::Array(_)) => {
            let dirs = strings(obj, "roots")?.unwrap_or_default();
            Roots::Dirs(dirs.iter().map(|d| join_clean(base, d)).collect())
        }
        Some(_) => return Err("field `roots` must be true or an array of folders".into()),
    };
    Ok(())
}

fn protocol(obj: &Map<String, Value>) -> Result<Protocol, String> {
    Ok(match obj.get("protocol") {
        None | Some(Value::Null) => Protocol::Auto,
        Some(Value::String(s)) if s == "auto" => Protocol::Auto,
        Some(Value::String(s)) if s == "2026-07-28" => Protocol::Modern,
        Some(Value::String(s)) if s == "2025-11-25" => Protocol::Legacy,
        Some(v) => return Err(format!("protocol {v} is not supported (auto, 2026-07-28, 2025-11-25)")),
    })
}

/// A url as listings show it: without query, fragment or user information.
fn shown(url: &str) -> String {
    let mut u = url.split(['?', '#']).next().unwrap_or("").to_string();
    if let Some(scheme_end) = u.find("://") {
        let rest = &u[scheme_end + 3..];
        let host_end = rest.find('/').unwrap_or(rest.len());
        if let Some(at) = rest[..host_end].rfind('@') {
            u = format!("{}{}", &u[..scheme_end + 3], &rest[at + 1..]);
        }
    }
    u
}

/// A remote entry (docs/protocol.md §8.5): `url`, `headers`,
/// `bearerTokenEnvVar`, and none of the fields of a process.
fn remote_entry(spec: &mut ServerSpec, obj: &Map<String, Value>, transport: Transport, url: Option<String>) -> Result<(), String> {
    let Some(url) = url.filter(|u| !u.is_empty()) else { return Err("field `url` is missing: the server's address".into()) };
    let mut remote = Remote { url: url.clone(), transport, headers: Vec::new(), bearer_env: None, oauth: None, written: None };
    for field in ["confine", "sandboxEnabled", "sandbox", "command", "args", "env", "cwd", "idleTimeout"] {
        if obj.get(field).is_some_and(|v| !v.is_null()) {
            return Err(format!("{field}: a remote server runs no process here"));
        }
    }
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://") || url.starts_with("${")) {
        return Err(format!("field `url` must start with http:// or https://, not {:?}", remote.shown_url()));
    }
    if let Some(v) = obj.get("headers").filter(|v| !v.is_null()) {
        let Value::Object(h) = v else { return Err("field `headers` must be an object of strings".into()) };
        for (k, v) in h {
            let Value::String(s) = v else { return Err(format!("field `headers`: {k} must be a string")) };
            let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
            if k.is_empty() || !k.chars().all(token) {
                return Err(format!("field `headers`: {k:?} is not a header name"));
            }
            remote.headers.push((k.clone(), s.clone()));
        }
    }
    match obj.get("bearerTokenEnvVar") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if !s.is_empty() => remote.bearer_env = Some(s.clone()),
        Some(_) => return Err("field `bearerTokenEnvVar` must be the name of a variable".into()),
    }
    let oauth = oauth(obj);
    remote.oauth = oauth.as_ref().ok().cloned().flatten();
    spec.remote = Some(remote);
    let base = spec.cwd.clone();
    common(spec, obj, &base)?;
    oauth?;
    if cfg!(not(feature = "remote")) {
        return Err("this zot was built without remote servers".into());
    }
    Ok(())
}

/// A remote entry's `oauth` object.
fn oauth(obj: &Map<String, Value>) -> Result<Option<OAuth>, String> {
    let o = match obj.get("oauth") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(o)) => o,
        Some(_) => return Err("field `oauth` must be an object".into()),
    };
    let text = |k: &str| match o.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
        Some(_) => Err(format!("field `oauth.{k}` must be a non-empty string")),
    };
    let scopes = match o.get("scopes") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.split_whitespace().collect::<Vec<_>>().join(" ")),
        Some(Value::Array(_)) => strings(o, "scopes").map_err(|_| "field `oauth.scopes` must be an array of strings or one string".to_string())?.map(|v| v.join(" ")),
        Some(_) => return Err("field `oauth.scopes` must be an array of strings or one string".into()),
    };
    let callback_port = match o.get("callbackPort") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().and_then(|p| u16::try_from(p).ok()).filter(|&p| p > 0).ok_or("field `oauth.callbackPort` must be a port (1-65535)")?),
    };
    let metadata = text("authServerMetadataUrl")?;
    if let Some(m) = &metadata {
        let l = m.to_ascii_lowercase();
        if !(l.starts_with("https://") || l.starts_with("http://")) {
            return Err("field `oauth.authServerMetadataUrl` must start with https:// or http://".into());
        }
    }
    Ok(Some(OAuth {
        client_id: text("clientId")?,
        client_secret: text("clientSecret")?,
        scopes: scopes.filter(|s| !s.is_empty()),
        callback_port,
        auth_server_metadata_url: metadata,
    }))
}

fn strings(obj: &Map<String, Value>, key: &str) -> Result<Option<Vec<String>>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().map(str::to_string).ok_or_else(|| format!("field `{key}` must be an array of strings")))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(format!("field `{key}` must be an array of strings")),
    }
}

/// A duration in seconds: a positive number up to 86400 (`zero_is_none`:
/// 0 means "never").
fn secs(obj: &Map<String, Value>, key: &str, zero_is_none: bool) -> Result<Option<Duration>, String> {
    let least = if zero_is_none { "0 for never" } else { "more than 0" };
    let bad = || format!("field `{key}` must be a number of seconds ({least}, at most 86400)");
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => {
            let s = n.as_f64().ok_or_else(bad)?;
            if s == 0.0 && zero_is_none {
                return Ok(None);
            }
            if !(s > 0.0 && s <= 86400.0) {
                return Err(bad());
            }
            Ok(Some(Duration::from_secs_f64(s)))
        }
        Some(_) => Err(bad()),
    }
}

/// `rel` against `base` (an absolute `rel` as is), without `.` parts and
/// with `..` taken lexically.
fn join_clean(base: &Path, rel: &str) -> PathBuf {
    let mut p = if Path::new(rel).is_absolute() { PathBuf::new() } else { base.to_path_buf() };
    for c in Path::new(rel).components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                p.pop();
            }
            other => p.push(other.as_os_str()),
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(json: &str) -> ServerSpec {
        let f = parse(json.as_bytes(), Path::new("/cfg/dir/mcp.json")).unwrap();
        f.servers.into_iter().next().unwrap()
    }

    #[test]
    fn every_field_is_read() {
        let s = one(
            r#"{"mcpServers":{"fs":{"command":"./bin/srv","args":["a"],"env":{"K":"${V:-x}"},"cwd":"sub",
            "enabledTools":["read"],"disabledTools":["write"],"connectTimeout":2.5,"requestTimeout":9,
            "idleTimeout":0,"restart":"never","roots":["../r"],"extra":1}}}"#,
        );
        assert_eq!(s.error, None);
        assert_eq!(s.args, vec!["a"]);
        assert_eq!(s.env, vec![("K".to_string(), "${V:-x}".to_string())]);
        assert_eq!(s.cwd, PathBuf::from("/cfg/dir/sub"));
        assert!(s.offers("read") && !s.offers("write") && !s.offers("other"));
        assert_eq!(s.connect_timeout, Duration::from_millis(2500));
        assert_eq!(s.request_timeout, Some(Duration::from_secs(9)));
        assert_eq!(s.idle_timeout, None);
        assert_eq!(s.restart, RestartPolicy::Never);
        assert_eq!(s.roots, Roots::Dirs(vec![PathBuf::from("/cfg/r")]));
        assert_eq!(s.unknown, vec!["extra"]);
        let m = s.manifest();
        assert_eq!(m.exec, "/cfg/dir/bin/srv");
        assert_eq!(m.dir, PathBuf::from("/cfg/dir/sub"));
        assert_eq!(m.restart, RestartPolicy::Never);
    }

    #[test]
    fn remote_entries() {
        let s = one(
            r#"{"mcpServers":{"web":{"url":"https://u:p@${HOST}/mcp?key=1#f","headers":{"X-Key":"${K}","A":"b ${L:-x}"},
            "bearerTokenEnvVar":"TOK","requestTimeout":3}}}"#,
        );
        let r = s.remote.clone().unwrap();
        assert_eq!(r.transport, Transport::Auto);
        assert_eq!((r.shown_url().as_str(), r.transport_name(), r.auth_name()), ("https://${HOST}/mcp", "http", "headers"));
        assert_eq!(r.variables(), vec!["HOST", "L", "K", "TOK"]);
        assert_eq!(s.request_timeout, Some(Duration::from_secs(3)));
        if cfg!(feature = "remote") {
            assert_eq!(s.error, None);
        } else {
            assert_eq!(s.error.as_deref(), Some("this zot was built without remote servers"));
        }
        let s = one(r#"{"mcpServers":{"web":{"type":"sse","url":"http://h/sse?q=1"}}}"#);
        let r = s.remote.unwrap();
        assert_eq!((r.transport, r.transport_name(), r.auth_name()), (Transport::Sse, "sse", "none"));
        let r = one(r#"{"mcpServers":{"web":{"url":"http://u:${P}@h/mcp"}}}"#).remote.unwrap();
        assert_eq!((r.shown_url().as_str(), r.auth_name()), ("http://h/mcp", "headers"));
        let r = one(r#"{"mcpServers":{"web":{"url":"http://h/mcp","oauth":{"clientId":"c","scopes":["a","b"],"callbackPort":8976}}}}"#).remote.unwrap();
        let o = r.oauth.clone().unwrap();
        assert_eq!((r.auth_name(), o.client_id.as_deref(), o.scopes.as_deref(), o.callback_port), ("oauth", Some("c"), Some("a b"), Some(8976)));
        let s = one(r#"{"mcpServers":{"web":{"url":"http://h/mcp","oauth":{"callbackPort":0}}}}"#);
        assert_eq!(s.error.as_deref(), Some("field `oauth.callbackPort` must be a port (1-65535)"));
        let s = one(r#"{"mcpServers":{"web":{"url":"ftp://h/"}}}"#);
        assert_eq!(s.error.as_deref(), Some("field `url` must start with http:// or https://, not \"ftp://h/\""));
    }

    #[test]
    fn defaults_and_refusals() {
        let s = one(r#"{"mcpServers":{"t":{"command":"uvx","args":["mcp-server-time"]}}}"#);
        assert_eq!((s.restart, s.connect_timeout, s.roots.clone()), (RestartPolicy::OnFailure, DEFAULT_CONNECT, Roots::Off));
        assert_eq!(s.manifest().exec, "uvx");
        let s = one(r#"{"mcpServers":{"web":{"transport":"sse","command":"x"}}}"#);
        assert_eq!(s.error.as_deref(), Some("field `url` is missing: the server's address"));
        let s = one(r#"{"mcpServers":{"web":{"type":"ws","url":"x"}}}"#);
        assert_eq!(s.error.as_deref(), Some("type \"ws\" is not supported (stdio, http, streamable-http, sse)"));
        let s = one(r#"{"mcpServers":{"web":{"type":"http","transport":"sse","url":"http://h/"}}}"#);
        assert_eq!(s.error.as_deref(), Some("type \"http\" and transport \"sse\" differ"));
        let s = one(r#"{"mcpServers":{"web":{"url":"http://h/","command":"x"}}}"#);
        assert_eq!(s.error.as_deref(), Some("url and command cannot both be set"));
        let s = one(r#"{"mcpServers":{"web":{"url":"http://h/","confine":{}}}}"#);
        assert_eq!(s.error.as_deref(), Some("confine: a remote server runs no process here"));
        let s = one(r#"{"mcpServers":{"web":{"url":"http://h/","idleTimeout":5}}}"#);
        assert_eq!(s.error.as_deref(), Some("idleTimeout: a remote server runs no process here"));
        let s = one(r#"{"mcpServers":{"x":{"command":"a","protocol":"2025-06-18"}}}"#);
        assert_eq!(s.error.as_deref(), Some("protocol \"2025-06-18\" is not supported (auto, 2026-07-28, 2025-11-25)"));
        assert_eq!(one(r#"{"mcpServers":{"x":{"command":"a","protocol":"2026-07-28"}}}"#).protocol, Protocol::Modern);
        assert_eq!(one(r#"{"mcpServers":{"x":{"command":"a"}}}"#).protocol, Protocol::Auto);
        let s = one(r#"{"mcpServers":{"x":{"args":[]}}}"#);
        assert_eq!(s.error.as_deref(), Some("/cfg/dir/mcp.json: field `command` is missing: the program that runs the server"));
        let s = one(r#"{"mcpServers":{"x":{"command":"~"}}}"#);
        assert_eq!(s.error.as_deref(), Some("/cfg/dir/mcp.json: field `command` \"~\": `~` is not expanded: write the absolute path"));
        let s = one(r#"{"mcpServers":{"x":{"command":"a","connectTimeout":-1}}}"#);
        assert!(s.error.unwrap().contains("connectTimeout"));
        let f = parse(br#"{"mcpServers":{"a b":{"command":"x"}}}"#, Path::new("/m.json")).unwrap();
        assert_eq!(f.servers.len(), 0);
        assert_eq!(f.bad_names[0].0, "a b");
        assert!(parse(b"{}", Path::new("/m.json")).unwrap_err().contains("mcpServers"));
        assert!(parse(b"nope", Path::new("/m.json")).unwrap_err().contains("invalid JSON"));
    }
}
