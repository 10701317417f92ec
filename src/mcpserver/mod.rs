//! MCP servers run as extensions (docs/protocol.md §8): their configuration
//! files ([`config`], and where they are: [`files`]; `zot mcp import`:
//! [`import`]), the names their tools are offered by (`names`),
//! their results as the host's (`content`), and the edge that translates
//! one process's JSON-RPC into the host's messages (`edge`). The host runs a server through the same spawn path,
//! supervisor, registry and call table as an extension; only the edge of
//! each child speaks JSON-RPC instead of zot frames.
//!
//! Not to be confused with the `zot mcp` front end, where zot itself is
//! the MCP server.

pub mod config;
pub mod files;
pub mod import;
pub mod login;
mod content;
pub(crate) mod edge;
#[cfg(feature = "remote")]
pub(crate) mod remote;
mod names;
pub(crate) mod uri_template;

/// What every listing carries of a server (docs/protocol.md §8.5): its
/// `transport`, and a remote one's `url` as written and `auth`; nothing
/// for an extension (`spec` none).
pub fn listed_fields(spec: Option<&config::ServerSpec>, home: &std::path::Path) -> (Option<&'static str>, Option<String>, Option<&'static str>) {
    let Some(spec) = spec else { return (None, None, None) };
    let r = spec.remote.as_ref();
    (Some(r.map_or("stdio", |r| r.transport_name())), r.map(|r| r.shown_url()), listed_auth(spec, home))
}

/// A remote server's `auth` in listings (docs/protocol.md §8.5): what its
/// entry sends, and `oauth` also for one that sends nothing of its own but
/// has a login kept in `home` (its server asked for one); none for stdio.
pub fn listed_auth(spec: &config::ServerSpec, home: &std::path::Path) -> Option<&'static str> {
    let r = spec.remote.as_ref()?;
    #[cfg(feature = "remote")]
    if r.auth_name() == "none" && remote::login_state(spec, home).is_some() {
        return Some("oauth");
    }
    let _ = home;
    Some(r.auth_name())
}

