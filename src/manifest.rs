//! The manifest `extension.json`: parsing, validation, resolving `exec`, and
//! the atomic rewrite of `enabled` that keeps every other byte of the file.
//!
//! Decisions where the protocol is silent:
//! - `skills` entries are resolved against the manifest's directory, first
//!   lexically, then (when the path exists) through its symbolic links;
//!   either leaving the directory makes the manifest invalid. A skill path
//!   that does not exist (yet) is accepted as is.
//! - A `restart` value other than `never`, `on-failure` or `always` makes
//!   the manifest invalid, naming the value.
//! - `env` names must be non-empty and hold no `=` or NUL; values no NUL.

use crate::home::{validate_name, NameError};
use serde_json::{Map, Value};
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The file name of a manifest inside an extension directory.
pub const MANIFEST_FILE: &str = "extension.json";

/// What an unusable MCP configuration file is called in every message
/// about it ([`ManifestError::Config`]).
pub const BROKEN_CONFIG: &str = "broken MCP config file";

/// The manifest fields the host reads (docs/protocol.md §1, §7, §9).
pub const FIELDS: [&str; 13] =
    ["name", "version", "exec", "args", "language", "description", "enabled", "skills", "env", "restart", "confine", "sandboxEnabled", "sandbox"];

/// What the host does when an extension exits on its own (PROTOCOL §7.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum RestartPolicy {
    /// Never restarted (the default, as upstream).
    #[default]
    Never,
    /// A non-zero exit code or a signal the host did not send.
    OnFailure,
    /// Any exit the host did not ask for.
    Always,
}

impl RestartPolicy {
    /// Reads a manifest's or `--restart`'s value: `never`, `on-failure` or `always`.
    pub fn parse(s: &str) -> Option<RestartPolicy> {
        match s {
            "never" => Some(RestartPolicy::Never),
            "on-failure" => Some(RestartPolicy::OnFailure),
            "always" => Some(RestartPolicy::Always),
            _ => None,
        }
    }

    /// The policy as the manifest spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            RestartPolicy::Never => "never",
            RestartPolicy::OnFailure => "on-failure",
            RestartPolicy::Always => "always",
        }
    }
}

/// A parsed, validated manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// The extension's name: its identity, a safe file-name component.
    pub name: String,
    /// Display only; empty when absent.
    pub version: String,
    /// Empty for a static extension (see [`Manifest::is_static`]).
    pub exec: String,
    /// Extra argv after `exec`.
    pub args: Vec<String>,
    /// Display only; empty when absent.
    pub language: String,
    /// Display only; empty when absent.
    pub description: String,
    /// `enabled`, default `true`; a disabled extension is listed, never started.
    pub enabled: bool,
    /// `skills`, as absolute paths inside `dir`.
    pub skills: Vec<PathBuf>,
    /// `theme.json` or `themes/theme.json` in `dir`, when there is one.
    pub theme: Option<PathBuf>,
    /// `env`, unexpanded, in key order (expanded from the host's environment at spawn).
    pub env: Vec<(String, String)>,
    /// `restart` (docs/protocol.md §7.1); `never` when absent.
    pub restart: RestartPolicy,
    /// The directory holding `extension.json` (absolute).
    pub dir: PathBuf,
    /// Top-level fields the host does not read (kept on a rewrite, and
    /// warned about: a slip such as `restrat` is silently ignored otherwise).
    pub unknown: Vec<String>,
    /// `confine` (docs/protocol.md §9.1), when declared.
    pub(crate) confine: Option<crate::confine::Declared>,
}

/// Why a manifest could not be used.
#[derive(Debug)]
pub enum ManifestError {
    /// The directory or manifest could not be read.
    Read {
        /// The path that could not be read.
        path: PathBuf,
        /// The error reading it.
        err: io::Error,
    },
    /// The file is not a JSON object.
    Parse {
        /// The manifest's path.
        path: PathBuf,
        /// What is wrong with its JSON.
        msg: String,
    },
    /// A field is missing or has the wrong type.
    Field {
        /// The manifest's path.
        path: PathBuf,
        /// The field at fault.
        field: &'static str,
        /// What is wrong with it.
        msg: String,
    },
    /// The `name` is not a safe file-name component.
    Name {
        /// The manifest's path.
        path: PathBuf,
        /// The name as given.
        name: String,
        /// Why it is not safe.
        err: NameError,
    },
    /// `exec` names nothing that can be run.
    Exec {
        /// The manifest's path.
        path: PathBuf,
        /// `exec` as given.
        exec: String,
        /// Why it cannot be run.
        msg: String,
    },
    /// An MCP configuration file (`mcp.json`) that cannot be used: none of
    /// its servers is loaded.
    Config {
        /// The file's path.
        path: PathBuf,
        /// What is wrong with it.
        msg: String,
    },
    /// `confine` is invalid; the message names the field by its path.
    Confine {
        /// The manifest's path.
        path: PathBuf,
        /// `confine.FIELD: what is wrong`.
        msg: String,
    },
    /// Writing the manifest back failed.
    Write {
        /// The manifest's path.
        path: PathBuf,
        /// The error writing it.
        err: io::Error,
    },
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ManifestError::Read { path, err } => {
                write!(f, "{}: cannot read: {err}", path.display())
            }
            ManifestError::Parse { path, msg } => {
                write!(f, "{}: invalid manifest: {msg}", path.display())
            }
            ManifestError::Field { path, field, msg } => {
                write!(f, "{}: field `{field}` {msg}", path.display())
            }
            ManifestError::Name { path, name, err } => {
                write!(f, "{}: invalid name {name:?}: {err}", path.display())
            }
            ManifestError::Exec { path, exec, msg } => {
                write!(f, "{}: exec {exec:?}: {msg}", path.display())
            }
            ManifestError::Config { path, msg } => {
                write!(f, "{}: {BROKEN_CONFIG}: {msg}", path.display())
            }
            ManifestError::Confine { path, msg } => write!(f, "{}: {msg}", path.display()),
            ManifestError::Write { path, err } => {
                write!(f, "{}: cannot write: {err}", path.display())
            }
        }
    }
}

impl std::error::Error for ManifestError {}

impl Manifest {
    /// Reads and validates `<dir>/extension.json`.
    pub fn load(dir: &Path) -> Result<Manifest, ManifestError> {
        let path = dir.join(MANIFEST_FILE);
        let text = read_regular(&path).map_err(|err| ManifestError::Read { path: path.clone(), err })?;
        let dir = fs::canonicalize(dir)
            .map_err(|err| ManifestError::Read { path: dir.to_path_buf(), err })?;
        Manifest::parse(&text, dir, &path)
    }

    /// Validates manifest bytes; `dir` is where the manifest lives and
    /// `path` is only used in error messages.
    pub fn parse(bytes: &[u8], dir: PathBuf, path: &Path) -> Result<Manifest, ManifestError> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| ManifestError::Parse {
            path: path.to_path_buf(),
            msg: e.to_string(),
        })?;
        let Value::Object(obj) = value else {
            return Err(ManifestError::Parse {
                path: path.to_path_buf(),
                msg: "not a JSON object".into(),
            });
        };
        let field_err = |field, msg: &str| ManifestError::Field {
            path: path.to_path_buf(),
            field,
            msg: msg.to_string(),
        };
        let name = required_str(&obj, "name").map_err(|m| field_err("name", m))?;
        validate_name(&name).map_err(|err| ManifestError::Name {
            path: path.to_path_buf(),
            name: name.clone(),
            err,
        })?;
        let exec = optional_str(&obj, "exec").map_err(|m| field_err("exec", m))?;
        if exec.is_empty() && obj.get("exec").is_some_and(|v| !v.is_null()) {
            return Err(field_err("exec", "must not be empty"));
        }
        let args = match obj.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| field_err("args", "must be an array of strings"))?,
            Some(_) => return Err(field_err("args", "must be an array of strings")),
        };
        let enabled = match obj.get("enabled") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(field_err("enabled", "must be true or false")),
        };
        let skills = match obj.get("skills") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => {
                let mut out = Vec::new();
                for v in items {
                    let Some(s) = v.as_str() else {
                        return Err(field_err("skills", "must be an array of strings"));
                    };
                    out.push(resolve_inside(&dir, s).map_err(|m| field_err("skills", &m))?);
                }
                out
            }
            Some(_) => return Err(field_err("skills", "must be an array of strings")),
        };
        let env = match obj.get("env") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(map)) => {
                let mut out = Vec::new();
                for (k, v) in map {
                    let Some(v) = v.as_str() else {
                        return Err(field_err("env", &format!("{k}: the value must be a string")));
                    };
                    if k.is_empty() || k.contains(['=', '\0']) {
                        return Err(field_err("env", &format!("{k:?} is not a variable name")));
                    }
                    if v.contains('\0') {
                        return Err(field_err("env", &format!("{k}: the value holds a NUL byte")));
                    }
                    out.push((k.clone(), v.to_string()));
                }
                out
            }
            Some(_) => return Err(field_err("env", "must be an object of strings")),
        };
        let restart = match obj.get("restart") {
            None | Some(Value::Null) => RestartPolicy::Never,
            Some(Value::String(r)) => RestartPolicy::parse(r).ok_or_else(|| {
                field_err(
                    "restart",
                    &format!("has unknown policy {r:?} (expected never, on-failure or always)"),
                )
            })?,
            Some(_) => return Err(field_err("restart", "must be a string")),
        };
        let theme = ["theme.json", "themes/theme.json"]
            .iter()
            .map(|t| dir.join(t))
            .find(|p| p.is_file() && resolve_inside(&dir, &p.to_string_lossy()).is_ok());
        if exec.is_empty() && skills.is_empty() && theme.is_none() {
            return Err(ManifestError::Parse {
                path: path.to_path_buf(),
                msg: "exec, theme, or skills is required".into(),
            });
        }
        let confine = crate::confine::policy::from_object(&obj, dir.clone())
            .map_err(|msg| ManifestError::Confine { path: path.to_path_buf(), msg })?;
        let unknown = obj.keys().filter(|k| !FIELDS.contains(&k.as_str())).cloned().collect();
        Ok(Manifest {
            unknown,
            confine,
            version: optional_str(&obj, "version").map_err(|m| field_err("version", m))?,
            language: optional_str(&obj, "language").map_err(|m| field_err("language", m))?,
            description: optional_str(&obj, "description")
                .map_err(|m| field_err("description", m))?,
            name,
            exec,
            args,
            enabled,
            skills,
            theme,
            env,
            restart,
            dir,
        })
    }

    /// True for an extension that is never spawned: no `exec`, and skills
    /// or a theme.
    pub fn is_static(&self) -> bool {
        self.exec.is_empty()
    }

    /// The absolute paths of the skills, inside the manifest's directory.
    pub fn skills(&self) -> &[PathBuf] {
        &self.skills
    }

    /// The theme file, when there is one.
    pub fn theme(&self) -> Option<&Path> {
        self.theme.as_deref()
    }

    /// The `env` entries, unexpanded.
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// The manifest's own restart policy.
    pub fn restart(&self) -> RestartPolicy {
        self.restart
    }

    /// The manifest file's path.
    pub fn path(&self) -> PathBuf {
        self.dir.join(MANIFEST_FILE)
    }

    /// Resolves `exec` to the program to run: absolute as is; `./`, `../`
    /// or containing a `/`: relative to the manifest's directory; a bare
    /// name: looked up on `$PATH`, skipping empty and relative entries
    /// (they would resolve against the host's directory, not the
    /// manifest's). The result must be an executable file.
    pub fn resolve_exec(&self) -> Result<PathBuf, ManifestError> {
        let err = |msg: String| ManifestError::Exec {
            path: self.path(),
            exec: self.exec.clone(),
            msg,
        };
        if self.is_static() {
            return Err(err("a static extension has nothing to run".into()));
        }
        let exec = Path::new(&self.exec);
        if exec.is_absolute() || self.exec.contains('/') {
            let p = if exec.is_absolute() {
                exec.to_path_buf()
            } else {
                let parts = exec.components().filter(|c| *c != std::path::Component::CurDir);
                parts.fold(self.dir.clone(), |p, c| p.join(c))
            };
            return match check_executable(&p) {
                Ok(()) => Ok(p),
                Err(msg) => Err(err(format!("{}: {msg}", p.display()))),
            };
        }
        if let Some(p) = crate::which::find(exec, |p| check_executable(p).is_ok()) {
            return Ok(p);
        }
        Err(err("not found on PATH".into()))
    }
}

/// `rel` joined to `dir`, which it must not leave: lexically (`..`), nor,
/// when the path exists, through symbolic links.
fn resolve_inside(dir: &Path, rel: &str) -> Result<PathBuf, String> {
    use std::path::Component;
    let outside = || format!("{rel:?} resolves outside the extension's directory");
    if rel.is_empty() {
        return Err("holds an empty path".into());
    }
    let mut p = dir.to_path_buf();
    for c in Path::new(rel).components() {
        match c {
            Component::CurDir => {}
            Component::Normal(n) => p.push(n),
            Component::ParentDir => {
                if !p.pop() {
                    return Err(outside());
                }
            }
            Component::RootDir | Component::Prefix(_) => p = PathBuf::from(c.as_os_str()),
        }
    }
    if !p.starts_with(dir) {
        return Err(outside());
    }
    if let (Ok(real), Ok(real_dir)) = (fs::canonicalize(&p), fs::canonicalize(dir)) {
        if !real.starts_with(&real_dir) {
            return Err(outside());
        }
        return Ok(real);
    }
    Ok(p)
}

fn required_str(obj: &Map<String, Value>, key: &str) -> Result<String, &'static str> {
    match obj.get(key) {
        None | Some(Value::Null) => Err("is required"),
        Some(Value::String(s)) if s.is_empty() => Err("must not be empty"),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err("must be a string"),
    }
}

fn optional_str(obj: &Map<String, Value>, key: &str) -> Result<String, &'static str> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err("must be a string"),
    }
}

fn check_executable(p: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = fs::metadata(p).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => "no such file".to_string(),
        _ => e.to_string(),
    })?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err("not executable (chmod +x it)".into());
    }
    Ok(())
}

/// Sets `enabled` in the manifest at `path`, keeping every other byte of
/// the file (unknown fields, their order, the formatting), and replaces the
/// file atomically (temporary file in the same directory, then rename).
pub fn set_enabled(path: &Path, enabled: bool) -> Result<(), ManifestError> {
    let text = fs::read_to_string(path)
        .map_err(|err| ManifestError::Read { path: path.to_path_buf(), err })?;
    let new = rewrite_top_level(&text, "enabled", if enabled { "true" } else { "false" })
        .map_err(|msg| ManifestError::Parse { path: path.to_path_buf(), msg })?;
    write_atomic(path, new.as_bytes())
        .map_err(|err| ManifestError::Write { path: path.to_path_buf(), err })
}

/// Writes `bytes` to `path` through a temporary sibling and a rename; the
/// new file is `0600` from the moment it exists.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{file_name}.tmp{}", std::process::id()));
    let result = (|| {
        let mut f = crate::home::private_file().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Replaces the value of top-level `key` in the JSON object `text` with
/// `raw`, or appends `"key": raw` as the last member if absent. Everything
/// else is left byte for byte.
fn rewrite_top_level(text: &str, key: &str, raw: &str) -> Result<String, String> {
    // Validate first so the scanner below can trust the structure.
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(_)) => {}
        Ok(_) => return Err("not a JSON object".into()),
        Err(e) => return Err(e.to_string()),
    }
    let b = text.as_bytes();
    let mut i = skip_ws(b, 0);
    // b[i] == '{' is guaranteed by the validation above.
    i += 1;
    let mut members = 0;
    loop {
        i = skip_ws(b, i);
        if b[i] == b'}' {
            break;
        }
        if b[i] == b',' {
            i = skip_ws(b, i + 1);
        }
        let key_start = i;
        i = skip_string(b, i);
        let this_key: String = serde_json::from_str(&text[key_start..i]).map_err(|e| e.to_string())?;
        i = skip_ws(b, i) + 1; // ':'
        let v_start = skip_ws(b, i);
        let v_end = skip_value(b, v_start);
        members += 1;
        if this_key == key {
            return Ok(format!("{}{}{}", &text[..v_start], raw, &text[v_end..]));
        }
        i = v_end;
    }
    // Absent: insert before the closing brace, after the last member.
    let close = i;
    let mut end = close;
    while end > 0 && b[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    let key_json = serde_json::to_string(key).map_err(|e| e.to_string())?;
    let sep = if members > 0 { "," } else { "" };
    let indent = if text.contains('\n') { "\n  " } else { " " };
    Ok(format!("{}{sep}{indent}{key_json}: {raw}{}", &text[..end], &text[end..]))
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

fn skip_string(b: &[u8], mut i: usize) -> usize {
    i += 1; // opening quote
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

fn skip_value(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(b'"') => skip_string(b, i),
        Some(b'{') | Some(b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = skip_string(b, j);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            j
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']') && !b[j].is_ascii_whitespace() {
                j += 1;
            }
            j
        }
    }
}


/// The bytes of the regular file `path`. Opened non-blocking: a FIFO in
/// a manifest's place (a project's, listed even when untrusted) must not
/// hang the host.
fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = fs::File::options().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"));
    }
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Manifest, ManifestError> {
        Manifest::parse(s.as_bytes(), PathBuf::from("/x"), Path::new("/x/extension.json"))
    }

    #[test]
    fn fields_and_defaults() {
        let m = parse(r#"{"name":"w","exec":"./w","extra":{"a":1}}"#).unwrap();
        assert_eq!(m.name, "w");
        assert!(m.enabled);
        assert!(m.args.is_empty());
        let e = parse(r#"{"name":"../evil","exec":"x"}"#).unwrap_err();
        assert!(e.to_string().contains("invalid name"), "{e}");
        assert!(parse(r#"{"exec":"x"}"#).unwrap_err().to_string().contains("`name` is required"));
        let e = parse(r#"{"name":"a"}"#).unwrap_err().to_string();
        assert!(e.ends_with("exec, theme, or skills is required"), "{e}");
        assert!(parse(r#"{"name":"a","exec":""}"#).is_err());
        assert!(parse(r#"{"name":"a","exec":"x","args":[1]}"#).is_err());
        assert!(parse(r#"{"name":"a","exec":"x","enabled":"no"}"#).is_err());
        assert!(parse("[1]").is_err());
        assert!(parse("{").is_err());
    }

    #[test]
    fn static_skills_env_restart() {
        let m = parse(r#"{"name":"s","skills":["a", "./b/SKILL.md"]}"#).unwrap();
        assert!(m.is_static());
        assert_eq!(m.skills(), [PathBuf::from("/x/a"), PathBuf::from("/x/b/SKILL.md")]);
        assert!(m.resolve_exec().is_err());
        for bad in [r#"["../y"]"#, r#"["a/../../y"]"#, r#"["/etc"]"#, r#"[""]"#, "[1]", "\"a\""] {
            let e = parse(&format!(r#"{{"name":"s","skills":{bad}}}"#)).unwrap_err().to_string();
            assert!(e.contains("`skills`"), "{bad}: {e}");
        }
        assert!(parse(r#"{"name":"s","skills":[]}"#).is_err(), "empty skills is not static");
        let m = parse(r#"{"name":"e","exec":"x","env":{"B":"${HOME}","A":"1"},"restart":"on-failure"}"#)
            .unwrap();
        assert_eq!(m.env(), [("A".to_string(), "1".to_string()), ("B".into(), "${HOME}".into())]);
        assert_eq!(m.restart(), RestartPolicy::OnFailure);
        assert_eq!(parse(r#"{"name":"e","exec":"x"}"#).unwrap().restart(), RestartPolicy::Never);
        let e = parse(r#"{"name":"e","exec":"x","restart":"sometimes"}"#).unwrap_err().to_string();
        assert!(e.contains("unknown policy \"sometimes\""), "{e}");
        for bad in [r#"{"A":1}"#, r#"{"":"v"}"#, r#"{"A=B":"v"}"#, "[]"] {
            assert!(parse(&format!(r#"{{"name":"e","exec":"x","env":{bad}}}"#)).is_err(), "{bad}");
        }
    }

    #[test]
    fn rewrite_keeps_everything_else() {
        let src = "{\n  \"zeta\": {\"enabled\": 1},\n  \"name\": \"w\",\n  \"enabled\": true,\n  \"alpha\": [1, \"}\"]\n}\n";
        let out = rewrite_top_level(src, "enabled", "false").unwrap();
        assert_eq!(out, src.replace("\"enabled\": true", "\"enabled\": false"));
        let src = "{\"b\":1,\"a\":\"x\\\"\"}";
        let out = rewrite_top_level(src, "enabled", "false").unwrap();
        assert_eq!(out, "{\"b\":1,\"a\":\"x\\\"\", \"enabled\": false}");
        let src = "{\n  \"name\": \"w\"\n}\n";
        let out = rewrite_top_level(src, "enabled", "true").unwrap();
        assert_eq!(out, "{\n  \"name\": \"w\",\n  \"enabled\": true\n}\n");
        assert_eq!(rewrite_top_level("{}", "enabled", "true").unwrap(), "{ \"enabled\": true}");
    }
}
