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
mod grant;
pub mod login;
pub mod store;

use grant::{now, take_tokens};
use std::path::PathBuf;
use std::sync::Mutex;
use store::Saved;

/// Refreshed when less than this is left.
const EARLY: u64 = 60;

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

    /// The login was refused and forgotten: a person must log in again.
    pub fn dead(&self) -> bool {
        self.saved().access_token.is_empty()
    }

    /// The server refused the access token and it cannot be renewed: the
    /// kept tokens are no use (forgotten on disk too, the client stays);
    /// the server needs a person's login.
    pub fn refuse(&self) {
        let mut s = self.saved();
        self.forget(&mut s);
    }

    fn forget(&self, s: &mut Saved) {
        s.forget_tokens();
        let _ = store::save(&self.home, s);
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
        if current.access_token.is_empty() {
            return Err("the login was refused".into());
        }
        let Some(rt) = current.refresh_token.clone() else {
            let expired = current.expires_at.is_some_and(|at| at <= now() + EARLY);
            self.forget(&mut self.saved());
            return Err(if expired { "the access token expired and there is no refresh token" } else { "there is no refresh token" }.into());
        };
        let mut pairs = vec![("grant_type", "refresh_token"), ("refresh_token", rt.as_str()), ("client_id", current.client_id.as_str()), ("resource", current.resource.as_str())];
        if let Some(s) = &current.client_secret {
            pairs.push(("client_secret", s.as_str()));
        }
        let (status, v) = discover::post(agent, &current.token_endpoint, "application/x-www-form-urlencoded", discover::form(&pairs).into_bytes(), None)?;
        let mut next = current.clone();
        if let Err(e) = take_tokens(&mut next, status, &v) {
            // Refused: the kept tokens are no use; the client stays.
            self.forget(&mut self.saved());
            return Err(format!("the refresh was refused: {e}"));
        }
        store::save(&self.home, &next)?;
        let bearer = format!("Bearer {}", next.access_token);
        *self.saved() = next;
        Ok(bearer)
    }
}
