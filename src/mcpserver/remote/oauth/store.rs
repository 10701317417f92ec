//! The tokens of remote servers on disk (docs/protocol.md §8.5 rule 12):
//! `$ZOT_HOME/auth/` (0700), one file per server url (named by the
//! SHA-256 of the url, 0600), holding the client registration, the tokens
//! and their expiry. Written through a temporary file and a rename; never
//! read into a log, a listing or an error.

use serde::{Deserialize, Serialize};
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// What is kept of one server's login.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Saved {
    /// The server's url as expanded (the file's key).
    pub resource: String,
    pub issuer: String,
    pub token_endpoint: String,
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The `redirect_uri` the client was registered with.
    #[serde(default)]
    pub redirect_uri: String,
    /// The client was registered dynamically (RFC 7591), not configured.
    #[serde(default)]
    pub registered: bool,
    #[serde(default)]
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Seconds since the epoch; none: the server gave no lifetime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl Saved {
    /// The tokens dropped, the client registration kept.
    pub fn forget_tokens(&mut self) {
        self.access_token.clear();
        self.refresh_token = None;
        self.expires_at = None;
        self.scope = None;
    }
}

/// `$ZOT_HOME/auth/`.
pub fn dir(home: &Path) -> PathBuf {
    home.join("auth")
}

/// The file of the server at `url`.
pub fn path(home: &Path, url: &str) -> PathBuf {
    let digest = crate::sha256::digest(url.as_bytes());
    let name: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    dir(home).join(format!("{name}.json"))
}

pub fn load(home: &Path, url: &str) -> Option<Saved> {
    let bytes = fs::read(path(home, url)).ok()?;
    serde_json::from_slice::<Saved>(&bytes).ok().filter(|s| s.resource == url)
}

/// Writes `saved` (folder 0700, file 0600, atomically).
pub fn save(home: &Path, saved: &Saved) -> Result<(), String> {
    let d = dir(home);
    fs::DirBuilder::new().recursive(true).mode(0o700).create(&d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    let _ = fs::set_permissions(&d, fs::Permissions::from_mode(0o700));
    let file = path(home, &saved.resource);
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    let body = serde_json::to_vec_pretty(saved).map_err(|e| e.to_string())?;
    let written = (|| {
        let mut f = fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
        f.write_all(&body)?;
        f.sync_all()?;
        fs::rename(&tmp, &file)
    })();
    written.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        format!("cannot write {}: {e}", file.display())
    })
}

/// Forgets the login of `url`; whether there was one. A client registered
/// dynamically is kept for the next login (§8.5 rule 10); a configured
/// one's file goes.
pub fn forget(home: &Path, url: &str) -> Result<bool, String> {
    let file = path(home, url);
    if let Some(mut kept) = load(home, url).filter(|k| k.registered) {
        let had = !kept.access_token.is_empty();
        kept.forget_tokens();
        save(home, &kept)?;
        return Ok(had);
    }
    match fs::remove_file(&file) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("cannot remove {}: {e}", file.display())),
    }
}
