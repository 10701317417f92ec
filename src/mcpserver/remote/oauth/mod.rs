//! OAuth 2.1 for remote servers (docs/protocol.md §8.5 rules 10-12):
//! discovery ([`discover`]), the tokens on disk ([`store`]), the person's
//! login through the browser ([`login`]), and the tokens a link sends,
//! refreshed before they expire and once on a 401 ([`Tokens`]).
//!
//! Decisions where the protocol is silent:
//! - A server entry without `headers` or `bearerTokenEnvVar` uses a login
//!   kept for its url too (what `zot mcp login NAME` stored), so a server
//!   that starts asking for OAuth needs no change to its entry.
//! - A token "about to expire" has less than 60 s left.
//! - A client registered dynamically is kept with the tokens and used
//!   again while its `redirect_uri` is the one the login listens on.

pub mod discover;
pub mod login;
pub mod store;

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use store::Saved;

/// Refreshed when less than this is left.
const EARLY: u64 = 60;

/// The message of a server that needs a person to log in.
pub fn needs_login(name: &str) -> String {
    format!("{name} needs you to log in: zot mcp login {name}")
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// How doctor speaks of a login: `logged in, expires in 52 min`.
pub fn describe(saved: &Saved) -> String {
    match saved.expires_at {
        Some(at) if at > now() => format!("logged in, expires in {} min", (at - now()).div_ceil(60)),
        Some(_) if saved.refresh_token.is_some() => "logged in, token expired (refreshed at the next request)".into(),
        Some(_) => "login expired".into(),
        None => "logged in".into(),
    }
}

/// The login of one server while a link runs.
pub struct Tokens {
    home: PathBuf,
    saved: Mutex<Saved>,
    /// One refresh at a time.
    refreshing: Mutex<()>,
}

impl Tokens {
    /// The login kept for `url` (expanded), if any.
    pub fn load(home: PathBuf, url: &str) -> Option<Tokens> {
        let saved = store::load(&home, url).filter(|s| !s.access_token.is_empty())?;
        Some(Tokens { home, saved: Mutex::new(saved), refreshing: Mutex::new(()) })
    }

    fn saved(&self) -> std::sync::MutexGuard<'_, Saved> {
        self.saved.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `Bearer TOKEN` as it stands, not refreshed.
    pub fn current(&self) -> String {
        format!("Bearer {}", self.saved().access_token)
    }

    /// `text` without the tokens in it.
    pub fn scrub(&self, text: &str) -> String {
        let s = self.saved();
        let mut out = text.to_string();
        for t in std::iter::once(&s.access_token).chain(s.refresh_token.as_ref()).filter(|t| t.len() >= 4) {
            out = out.replace(t.as_str(), "(token)");
        }
        out
    }

    /// `Bearer TOKEN`, refreshed first when about to expire; an error when
    /// it cannot be (the server then needs a login).
    pub fn header(&self, agent: &ureq::Agent) -> Result<String, String> {
        let (token, at) = {
            let s = self.saved();
            (s.access_token.clone(), s.expires_at)
        };
        if at.is_some_and(|at| at <= now() + EARLY) {
            return self.refresh(agent, &format!("Bearer {token}"));
        }
        Ok(format!("Bearer {token}"))
    }

    /// A new access token in place of the header `stale` (unless another
    /// request already replaced it): `Bearer TOKEN`, or why not.
    pub fn refresh(&self, agent: &ureq::Agent, stale: &str) -> Result<String, String> {
        let _one = self.refreshing.lock().unwrap_or_else(|e| e.into_inner());
        let current = self.saved().clone();
        let current_bearer = format!("Bearer {}", current.access_token);
        if stale != current_bearer && current.expires_at.is_none_or(|at| at > now() + EARLY) {
            return Ok(current_bearer);
        }
        let Some(rt) = current.refresh_token.clone() else { return Err("the token expired and there is no refresh token".into()) };
        let mut pairs = vec![("grant_type", "refresh_token"), ("refresh_token", rt.as_str()), ("client_id", current.client_id.as_str()), ("resource", current.resource.as_str())];
        if let Some(s) = &current.client_secret {
            pairs.push(("client_secret", s.as_str()));
        }
        let (status, v) = discover::post(agent, &current.token_endpoint, "application/x-www-form-urlencoded", discover::form(&pairs).into_bytes(), None)?;
        let mut next = current;
        take_tokens(&mut next, status, &v).map_err(|e| format!("the refresh was refused: {e}"))?;
        store::save(&self.home, &next)?;
        let bearer = format!("Bearer {}", next.access_token);
        *self.saved() = next;
        Ok(bearer)
    }
}

/// The tokens of a token endpoint's answer into `saved`; an error names
/// the status and the OAuth `error`, never a token.
fn take_tokens(saved: &mut Saved, status: u16, v: &serde_json::Value) -> Result<(), String> {
    let token = v.get("access_token").and_then(|t| t.as_str()).filter(|t| !t.is_empty());
    let (true, Some(token)) = ((200..300).contains(&status), token) else {
        let e = v.get("error").and_then(|e| e.as_str()).map(|e| format!(" ({e})")).unwrap_or_default();
        return Err(format!("HTTP {status}{e}"));
    };
    if token.bytes().any(|b| !(0x21..0x7f).contains(&b)) {
        return Err("the access token holds characters a header cannot".into());
    }
    saved.access_token = token.to_string();
    if let Some(rt) = v.get("refresh_token").and_then(|t| t.as_str()) {
        saved.refresh_token = Some(rt.to_string());
    }
    saved.expires_at = v.get("expires_in").and_then(|e| e.as_u64()).map(|s| now() + s);
    if let Some(s) = v.get("scope").and_then(|s| s.as_str()) {
        saved.scope = Some(s.to_string());
    }
    Ok(())
}

/// `n` random bytes from the kernel.
fn random(n: usize) -> Result<Vec<u8>, String> {
    let mut out = vec![0u8; n];
    let mut got = 0;
    while got < n {
        // SAFETY: the buffer is valid for `n - got` bytes.
        let r = unsafe { libc::getrandom(out[got..].as_mut_ptr().cast(), n - got, 0) };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("no random bytes: {e}"));
        }
        got += r as usize;
    }
    Ok(out)
}

/// Base64url without padding (RFC 4648 §5).
fn b64url(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | (u32::from(b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// A PKCE verifier and its `S256` challenge (RFC 7636).
fn pkce() -> Result<(String, String), String> {
    let verifier = b64url(&random(32)?);
    let challenge = b64url(&crate::trust::sha256(verifier.as_bytes()));
    Ok((verifier, challenge))
}

/// How long a login waits for the browser.
pub const LOGIN_WAIT: Duration = Duration::from_secs(300);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64url_and_pkce() {
        assert_eq!(b64url(b""), "");
        assert_eq!(b64url(b"f"), "Zg");
        assert_eq!(b64url(b"fo"), "Zm8");
        assert_eq!(b64url(b"foo"), "Zm9v");
        assert_eq!(b64url(&[0xfb, 0xff]), "-_8");
        // RFC 7636 appendix B.
        let v = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert_eq!(b64url(&crate::trust::sha256(v.as_bytes())), "E9Melhoa2OwvFrEMTJguCHaoeKt8URWbuGJSMuwHbCM");
        let (a, b) = pkce().unwrap();
        assert_eq!((a.len(), b.len()), (43, 43));
    }
}
