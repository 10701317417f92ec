//! A server's resources through the edge (docs/protocol.md §8.6):
//! `resources/list` and `resources/templates/list` through `nextCursor`
//! within §8.2's bounds, at load and after
//! `notifications/resources/list_changed`, and `resources/read` on demand,
//! kept as a call is (cancellable, its answer matched by the host's id).
//! A listing that fails is logged and leaves what was listed before; at
//! load it counts as none and never fails the server.

use super::state::{cursor_params, gather, request, Edge, Listing, McpMsg, Pending, Resource, State, Template};
use super::wire::{error_text, NOT_FOUND};
use serde_json::{json, Map, Value};

impl Edge {
    /// `resources/read` of `uri` for the host's call `host_id`: the line to write.
    pub fn read(&self, host_id: String, uri: &str) -> Vec<u8> {
        let params = json!({ "uri": uri });
        let mut st = self.state();
        let bytes = request(&mut st, Pending::Read { host_id: host_id.clone(), params: params.clone(), rounds: 0 }, "resources/read", params);
        let n = st.next;
        st.calls.insert(host_id, n);
        bytes
    }

    /// The answer to a `resources/read`: its contents to the host (a modern
    /// `input_required` asks again, as a call does).
    pub(super) fn read_done(&self, host_id: String, params: Value, rounds: u8, result: Result<Value, Value>) {
        let r = match result {
            Err(e) => return self.tell(McpMsg::Read { id: host_id, result: Err(error_text(&e)) }),
            Ok(r) => r,
        };
        let r = match self.settled(&params, rounds, r) {
            Ok(Ok(r)) => r,
            Ok(Err(again)) => {
                let mut st = self.state();
                let p = Pending::Read { host_id: host_id.clone(), params: again.clone(), rounds: rounds + 1 };
                let bytes = request(&mut st, p, "resources/read", again);
                let n = st.next;
                st.calls.insert(host_id, n);
                drop(st);
                return self.write(bytes);
            }
            Err(text) => return self.tell(McpMsg::Read { id: host_id, result: Err(text) }),
        };
        let result = contents(r).map(|(contents, skipped)| {
            if skipped > 0 {
                self.log.line(&format!("resources/read: skipped {skipped} content entries with neither text nor blob"));
            }
            contents
        });
        if let Err(why) = &result {
            self.log.line(&format!("malformed resources/read result: {why}"));
        }
        self.tell(McpMsg::Read { id: host_id, result: result.map_err(|w| format!("malformed resources/read result: {w}")) });
    }

    /// Both lists again, after `notifications/resources/list_changed` (or
    /// later, when a listing is under way).
    pub(super) fn resources_changed(&self) {
        let mut st = self.state();
        if !st.has_resources {
            return self.log.line("ignored notifications/resources/list_changed: the server declared no resources");
        }
        if !st.ready || st.resource_pages.is_some() || st.template_pages.is_some() {
            st.resources_again = true;
            return;
        }
        let mut out = list_resources(&mut st, None);
        out.extend(list_templates(&mut st, None));
        drop(st);
        self.write(out);
    }

    /// One page of `resources/list` (`templates`: `resources/templates/list`):
    /// the next page's request, or at the end the list in force and what to
    /// write for a relisting asked for meanwhile.
    pub(super) fn resource_page(&self, st: &mut State, templates: bool, result: Result<Value, Value>) -> Vec<u8> {
        let (method, key) = if templates { ("resources/templates/list", "resourceTemplates") } else { ("resources/list", "resources") };
        let page = match result {
            Ok(r) => r,
            Err(e) => {
                if e.get("code").and_then(Value::as_i64) != Some(NOT_FOUND) {
                    return self.resource_listing_failed(st, templates, &format!("{method} failed: {}", error_text(&e)));
                }
                json!({ key: [] })
            }
        };
        let pages = if templates { &mut st.template_pages } else { &mut st.resource_pages };
        let listing = pages.get_or_insert_with(Listing::default);
        match gather(listing, &page, key) {
            Ok(Some(c)) => return if templates { list_templates(st, Some(c)) } else { list_resources(st, Some(c)) },
            Ok(None) => {}
            Err(why) => return self.resource_listing_failed(st, templates, &format!("{method} did not end: {why}")),
        }
        let items = pages.take().map(|l| l.items).unwrap_or_default();
        if templates {
            st.templates = self.templates_of(items);
        } else {
            st.resources = self.resources_of(items);
        }
        self.resources_listed(st)
    }

    /// A resources listing that cannot go on for `why`: logged, the
    /// previous list stays (none at load), and the load goes on.
    pub(super) fn resource_listing_failed(&self, st: &mut State, templates: bool, why: &str) -> Vec<u8> {
        if templates {
            st.template_pages = None;
        } else {
            st.resource_pages = None;
        }
        let kept = if st.ready { "the previous list stays in force" } else { "none are offered" };
        self.log.line(&format!("{why}; {kept}"));
        self.resources_listed(st)
    }

    /// One of the two listings ended (or failed): the lists in force go to
    /// the host, and a relisting asked for meanwhile starts once both ended.
    fn resources_listed(&self, st: &mut State) -> Vec<u8> {
        self.tell(McpMsg::Resources { resources: st.resources.clone(), templates: st.templates.clone() });
        if !st.ready {
            self.listed(st);
        }
        if st.resource_pages.is_none() && st.template_pages.is_none() && st.ready && std::mem::take(&mut st.resources_again) {
            let mut out = list_resources(st, None);
            out.extend(list_templates(st, None));
            return out;
        }
        Vec::new()
    }

    fn resources_of(&self, items: Vec<Value>) -> Vec<Resource> {
        let mut out = Vec::new();
        for r in items {
            let Some(uri) = r.get("uri").and_then(Value::as_str).filter(|u| !u.is_empty()) else {
                self.log.line("skipped a listed resource without a uri");
                continue;
            };
            let name = r.get("name").and_then(Value::as_str).unwrap_or(uri).to_string();
            out.push(Resource {
                uri: uri.to_string(),
                name,
                title: text_of(&r, "title"),
                mime_type: text_of(&r, "mimeType"),
                size: r.get("size").and_then(Value::as_u64),
            });
        }
        out
    }

    fn templates_of(&self, items: Vec<Value>) -> Vec<Template> {
        let mut out = Vec::new();
        for t in items {
            let Some(uri_template) = t.get("uriTemplate").and_then(Value::as_str).filter(|u| !u.is_empty()) else {
                self.log.line("skipped a listed resource template without a uriTemplate");
                continue;
            };
            let name = t.get("name").and_then(Value::as_str).unwrap_or(uri_template).to_string();
            out.push(Template { uri_template: uri_template.to_string(), name, title: text_of(&t, "title"), mime_type: text_of(&t, "mimeType") });
        }
        out
    }
}

fn text_of(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_string)
}

pub(super) fn list_resources(st: &mut State, cursor: Option<String>) -> Vec<u8> {
    st.resource_pages.get_or_insert_with(Listing::default);
    request(st, Pending::Resources, "resources/list", cursor_params(cursor))
}

pub(super) fn list_templates(st: &mut State, cursor: Option<String>) -> Vec<u8> {
    st.template_pages.get_or_insert_with(Listing::default);
    request(st, Pending::Templates, "resources/templates/list", cursor_params(cursor))
}

/// A `resources/read` result's `contents` as the host passes them on:
/// `{"uri", "mime_type"?, "text"}` or `{"uri", "mime_type"?, "blob"}` (the
/// base64 as the server gave it), with how many entries had neither.
fn contents(r: Value) -> Result<(Vec<Value>, usize), String> {
    let Value::Object(mut r) = r else { return Err("the result is not a JSON object".into()) };
    let Some(Value::Array(items)) = r.remove("contents") else { return Err("`contents` is not an array".into()) };
    let mut out = Vec::with_capacity(items.len());
    let mut skipped = 0;
    for c in items {
        let uri = c.get("uri").and_then(Value::as_str).unwrap_or("");
        let mut m = Map::new();
        m.insert("uri".into(), json!(uri));
        if let Some(t) = c.get("mimeType").and_then(Value::as_str) {
            m.insert("mime_type".into(), json!(t));
        }
        match (c.get("text").and_then(Value::as_str), c.get("blob").and_then(Value::as_str)) {
            (Some(t), _) => m.insert("text".into(), json!(t)),
            (None, Some(b)) => m.insert("blob".into(), json!(b)),
            (None, None) => {
                skipped += 1;
                continue;
            }
        };
        out.push(Value::Object(m));
    }
    Ok((out, skipped))
}

#[cfg(test)]
mod tests {
    use super::contents;
    use serde_json::json;

    #[test]
    fn contents_map_text_and_blob_and_skip_the_rest() {
        let r = json!({"contents": [
            {"uri": "a://1", "mimeType": "text/plain", "text": "hi"},
            {"uri": "a://2", "blob": "AAEC"},
            {"uri": "a://3"},
        ]});
        let (c, skipped) = contents(r).unwrap();
        assert_eq!(c, vec![json!({"uri": "a://1", "mime_type": "text/plain", "text": "hi"}), json!({"uri": "a://2", "blob": "AAEC"})]);
        assert_eq!(skipped, 1);
        assert!(contents(json!({"contents": 1})).is_err());
        assert!(contents(json!([])).is_err());
    }
}
