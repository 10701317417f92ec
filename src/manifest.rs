//! The manifest `extension.json`: parsing, validation, resolving `exec`, and
//! the atomic rewrite of `enabled` that keeps every other byte of the file.

use crate::home::{validate_name, NameError};
use serde_json::{Map, Value};
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The file name of a manifest inside an extension directory.
pub const MANIFEST_FILE: &str = "extension.json";

/// A parsed, validated manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    pub name: String,
    pub version: String,
    pub exec: String,
    pub args: Vec<String>,
    pub language: String,
    pub description: String,
    pub enabled: bool,
    /// The directory holding `extension.json` (absolute).
    pub dir: PathBuf,
}

#[derive(Debug)]
pub enum ManifestError {
    /// The directory or manifest could not be read.
    Read { path: PathBuf, err: io::Error },
    /// The file is not a JSON object.
    Parse { path: PathBuf, msg: String },
    /// A field is missing or has the wrong type.
    Field { path: PathBuf, field: &'static str, msg: String },
    /// The `name` is not a safe file-name component.
    Name { path: PathBuf, name: String, err: NameError },
    /// `exec` names nothing that can be run.
    Exec { path: PathBuf, exec: String, msg: String },
    /// Writing the manifest back failed.
    Write { path: PathBuf, err: io::Error },
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
        let text = fs::read(&path).map_err(|err| ManifestError::Read { path: path.clone(), err })?;
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
        let exec = required_str(&obj, "exec").map_err(|m| field_err("exec", m))?;
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
        Ok(Manifest {
            version: optional_str(&obj, "version").map_err(|m| field_err("version", m))?,
            language: optional_str(&obj, "language").map_err(|m| field_err("language", m))?,
            description: optional_str(&obj, "description")
                .map_err(|m| field_err("description", m))?,
            name,
            exec,
            args,
            enabled,
            dir,
        })
    }

    /// The manifest file's path.
    pub fn path(&self) -> PathBuf {
        self.dir.join(MANIFEST_FILE)
    }

    /// Resolves `exec` to the program to run: absolute as is; `./`, `../`
    /// or containing a `/`: relative to the manifest's directory; a bare
    /// name: looked up on `$PATH`. The result must be an executable file.
    pub fn resolve_exec(&self) -> Result<PathBuf, ManifestError> {
        let err = |msg: String| ManifestError::Exec {
            path: self.path(),
            exec: self.exec.clone(),
            msg,
        };
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
        let path_var = std::env::var_os("PATH").unwrap_or_default();
        for d in std::env::split_paths(&path_var) {
            let d = if d.as_os_str().is_empty() { PathBuf::from(".") } else { d };
            let p = d.join(exec);
            if check_executable(&p).is_ok() {
                return Ok(p);
            }
        }
        Err(err("not found on PATH".into()))
    }
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

/// Writes `bytes` to `path` through a temporary sibling and a rename, keeping
/// the original file's permissions.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{file_name}.tmp{}", std::process::id()));
    let result = (|| {
        let mut f = fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        if let Ok(meta) = fs::metadata(path) {
            f.set_permissions(meta.permissions())?;
        }
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
        assert!(parse(r#"{"name":"a"}"#).unwrap_err().to_string().contains("`exec` is required"));
        assert!(parse(r#"{"name":"a","exec":"x","args":[1]}"#).is_err());
        assert!(parse(r#"{"name":"a","exec":"x","enabled":"no"}"#).is_err());
        assert!(parse("[1]").is_err());
        assert!(parse("{").is_err());
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
