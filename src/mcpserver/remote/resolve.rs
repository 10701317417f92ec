//! Host names to addresses for the HTTP client without a thread per
//! request. ureq resolves the host of every request, even one that goes
//! out on a kept-alive connection, and its resolver bounds the lookup by
//! running it on a new thread; at one remote call per request that is a
//! thread started and ended per call. Here an IP address is used as it
//! is, and a name's addresses are kept for [`KEEP`] (they matter only
//! when a new connection is opened); a name not known yet is looked up by
//! ureq's own resolver, within the request's deadline.

use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

/// How long a name's addresses are used without looking it up again.
const KEEP: Duration = Duration::from_secs(30);

#[derive(Debug, Default)]
pub(super) struct Resolve {
    lookup: DefaultResolver,
    /// The last name looked up (`host:port`), when, and its addresses.
    kept: Mutex<Option<(String, Instant, ResolvedSocketAddrs)>>,
}

impl Resolver for Resolve {
    fn resolve(&self, uri: &Uri, config: &Config, timeout: NextTimeout) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let Some(authority) = uri.authority() else { return self.lookup.resolve(uri, config, timeout) };
        let port = authority.port_u16().or(match uri.scheme_str() {
            Some("https") => Some(443),
            Some("http") => Some(80),
            _ => None,
        });
        let host = authority.host().trim_start_matches('[').trim_end_matches(']');
        if let (Ok(ip), Some(port)) = (host.parse::<IpAddr>(), port) {
            let mut addrs = self.empty();
            addrs.push(SocketAddr::new(ip, port));
            return Ok(addrs);
        }
        let key = format!("{host}:{}", port.unwrap_or(0));
        if let Some((k, at, addrs)) = &*self.kept.lock().unwrap_or_else(|e| e.into_inner()) {
            if *k == key && at.elapsed() < KEEP {
                return Ok(addrs.clone());
            }
        }
        let addrs = self.lookup.resolve(uri, config, timeout)?;
        *self.kept.lock().unwrap_or_else(|e| e.into_inner()) = Some((key, Instant::now(), addrs.clone()));
        Ok(addrs)
    }
}
