//! What the login and the refresh share: the token endpoint's answer
//! taken in, random bytes, base64url and PKCE.

use super::store::Saved;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(super) fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The tokens of a token endpoint's answer into `saved`; an error names
/// the status and the OAuth `error`, never a token.
pub(super) fn take_tokens(saved: &mut Saved, status: u16, v: &serde_json::Value) -> Result<(), String> {
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
    // Any number a server sends is taken without overflow: a lifetime past
    // the end of time is one that does not end; a negative, fractional or
    // textual one is none.
    saved.expires_at = v.get("expires_in").and_then(|e| e.as_u64()).map(|s| now().saturating_add(s));
    if let Some(s) = v.get("scope").and_then(|s| s.as_str()) {
        saved.scope = Some(s.to_string());
    }
    Ok(())
}

/// `n` random bytes from the kernel.
pub(super) fn random(n: usize) -> Result<Vec<u8>, String> {
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
pub(super) fn b64url(data: &[u8]) -> String {
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
pub(super) fn pkce() -> Result<(String, String), String> {
    let verifier = b64url(&random(32)?);
    let challenge = b64url(&crate::sha256::digest(verifier.as_bytes()));
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
        assert_eq!(b64url(&crate::sha256::digest(v.as_bytes())), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        let (a, b) = pkce().unwrap();
        assert_eq!((a.len(), b.len()), (43, 43));
    }
}
