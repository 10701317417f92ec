//! What the host answers about hosted servers' resources (docs/protocol.md
//! §8.6): the listing of every server's resources and templates
//! ([`ResourceListing`]) and the contents of one read ([`ResourceRead`]).

use serde::Serialize;
use serde_json::Value;

/// Answer to [`Request::Resources`](super::Request::Resources): every hosted
/// server's resources and templates, in load order (a URI two servers list
/// is the first's).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ResourceListing {
    /// The resources.
    pub resources: Vec<ResourceInfo>,
    /// The resource templates.
    pub templates: Vec<TemplateInfo>,
}

/// One resource a server lists.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResourceInfo {
    /// The server that lists it.
    pub server: String,
    /// Its URI, as the server gave it.
    pub uri: String,
    /// Its name (its URI when the server gave none).
    pub name: String,
    /// Its title, for people.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its MIME type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, when the server knows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// One resource template a server lists.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TemplateInfo {
    /// The server that lists it.
    pub server: String,
    /// The RFC 6570 template of the URIs it stands for.
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// Its title, for people.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The MIME type of what it stands for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// Answer to [`Request::ReadResource`](super::Request::ReadResource).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResourceRead {
    /// The server that answered.
    pub server: String,
    /// `{"uri", "mime_type"?, "text"}` or `{"uri", "mime_type"?, "blob"}`
    /// (`blob` base64, as the server gave it).
    pub contents: Vec<Value>,
}
