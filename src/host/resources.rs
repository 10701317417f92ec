//! Who offers which resource (docs/protocol.md §8.6): each hosted server's
//! resources and templates as it last listed them, kept with the server,
//! and the rules over all of them in load order. A URI goes to the server
//! that lists it, else to the first server one of whose templates matches
//! it; a URI two servers list is the first's, and the listing shows it
//! once.

use super::types::{ResourceInfo, ResourceListing, TemplateInfo};
use crate::mcpserver::edge::{Resource, Template};
use crate::mcpserver::uri_template;

/// One server's resources and templates, as it last listed them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Offered {
    pub resources: Vec<Resource>,
    pub templates: Vec<Template>,
}

impl Offered {
    pub fn is_empty(&self) -> bool {
        self.resources.is_empty() && self.templates.is_empty()
    }

    fn lists(&self, uri: &str) -> bool {
        self.resources.iter().any(|r| r.uri == uri)
    }

    fn matches(&self, uri: &str) -> bool {
        self.templates.iter().any(|t| uri_template::matches(&t.uri_template, uri))
    }
}

/// The server (its key, of those given in load order) a read of `uri`
/// goes to: the first that lists it, else the first one of whose
/// templates matches it.
pub(super) fn route<K: Copy>(servers: &[(K, &Offered)], uri: &str) -> Option<K> {
    let listed = servers.iter().find(|(_, o)| o.lists(uri));
    listed.or_else(|| servers.iter().find(|(_, o)| o.matches(uri))).map(|(k, _)| *k)
}

/// The URIs `this` lists that a server before it (in `earlier`) lists
/// too: not offered by `this`.
pub(super) fn shadowed(earlier: &[&Offered], this: &Offered) -> Vec<String> {
    this.resources.iter().filter(|r| earlier.iter().any(|o| o.lists(&r.uri))).map(|r| r.uri.clone()).collect()
}

/// Every server's resources and templates, servers in load order, a URI
/// listed once (by its first server).
pub(super) fn listing(servers: &[(&str, &Offered)]) -> ResourceListing {
    let mut out = ResourceListing::default();
    for (server, o) in servers {
        for r in &o.resources {
            if out.resources.iter().any(|x| x.uri == r.uri) {
                continue;
            }
            out.resources.push(ResourceInfo {
                server: server.to_string(),
                uri: r.uri.clone(),
                name: r.name.clone(),
                title: r.title.clone(),
                mime_type: r.mime_type.clone(),
                size: r.size,
            });
        }
        for t in &o.templates {
            out.templates.push(TemplateInfo {
                server: server.to_string(),
                uri_template: t.uri_template.clone(),
                name: t.name.clone(),
                title: t.title.clone(),
                mime_type: t.mime_type.clone(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered(uris: &[&str], templates: &[&str]) -> Offered {
        let resource = |u: &&str| Resource { uri: u.to_string(), name: u.to_string(), title: None, mime_type: None, size: None };
        let template = |t: &&str| Template { uri_template: t.to_string(), name: t.to_string(), title: None, mime_type: None };
        Offered { resources: uris.iter().map(resource).collect(), templates: templates.iter().map(template).collect() }
    }

    #[test]
    fn a_uri_goes_to_who_lists_it_then_to_the_first_matching_template() {
        let a = offered(&["x://1"], &["y://{id}"]);
        let b = offered(&["x://1", "y://2"], &["z://{id}"]);
        let servers = [("a", &a), ("b", &b)];
        assert_eq!(route(&servers, "x://1"), Some("a"));
        // Listed by b beats a's template.
        assert_eq!(route(&servers, "y://2"), Some("b"));
        assert_eq!(route(&servers, "y://3"), Some("a"));
        assert_eq!(route(&servers, "z://3"), Some("b"));
        assert_eq!(route(&servers, "w://3"), None);
        assert_eq!(shadowed(&[&a], &b), ["x://1"]);
        let l = listing(&servers);
        let uris: Vec<(&str, &str)> = l.resources.iter().map(|r| (r.server.as_str(), r.uri.as_str())).collect();
        assert_eq!(uris, [("a", "x://1"), ("b", "y://2")]);
        assert_eq!(l.templates.len(), 2);
    }
}
