//! Mapping the host's listings and replies to MCP results: `tools/list`,
//! `prompts/list`, a command's answer as a `prompts/get` result and an
//! extension's tool result as MCP's; hosted servers' resources as
//! `resources/list`, `resources/templates/list` and `resources/read` results.

use crate::host::{CommandReply, Listing, ResourceListing, ResourceRead, ToolReply};
use serde_json::{json, Value};

use super::reply::Reply;
use super::wire::codes;

/// `resources/list`: every hosted server's resources, URIs as the servers
/// gave them.
pub(super) fn resources_list(l: &ResourceListing) -> Value {
    let resources: Vec<Value> = l
        .resources
        .iter()
        .map(|r| {
            let mut v = json!({"uri": r.uri, "name": r.name});
            if let Some(t) = &r.title {
                v["title"] = json!(t);
            }
            if let Some(m) = &r.mime_type {
                v["mimeType"] = json!(m);
            }
            if let Some(s) = r.size {
                v["size"] = json!(s);
            }
            v
        })
        .collect();
    json!({ "resources": resources })
}

/// `resources/templates/list`.
pub(super) fn templates_list(l: &ResourceListing) -> Value {
    let templates: Vec<Value> = l
        .templates
        .iter()
        .map(|t| {
            let mut v = json!({"uriTemplate": t.uri_template, "name": t.name});
            if let Some(x) = &t.title {
                v["title"] = json!(x);
            }
            if let Some(m) = &t.mime_type {
                v["mimeType"] = json!(m);
            }
            v
        })
        .collect();
    json!({ "resourceTemplates": templates })
}

/// `resources/read`: the contents as MCP spells them (`mimeType`).
pub(super) fn read_result(r: &ResourceRead) -> Value {
    let contents: Vec<Value> = r
        .contents
        .iter()
        .map(|c| {
            let mut c = c.clone();
            if let Some(o) = c.as_object_mut() {
                if let Some(m) = o.remove("mime_type") {
                    o.insert("mimeType".into(), m);
                }
            }
            c
        })
        .collect();
    json!({ "contents": contents })
}

pub(super) fn tools_list(l: &Listing) -> Value {
    // A deferred tool is offered once a result activates it.
    let tools: Vec<Value> = l
        .tools
        .iter()
        .filter(|t| t.active)
        .map(|t| {
            let mut schema = t.schema.clone();
            // MCP wants an object schema; a registered schema without a
            // `type` gets `"type": "object"`, nothing else changes.
            if let Value::Object(s) = &mut schema {
                s.entry("type").or_insert_with(|| json!("object"));
            }
            let mut tool = json!({"name": t.name, "description": t.description, "inputSchema": schema});
            if let Some(o) = &t.output_schema {
                tool["outputSchema"] = o.clone();
            }
            // An MCP server's title and hints pass through the gateway.
            if let Some(title) = &t.title {
                tool["title"] = json!(title);
            }
            if let Some(a) = &t.annotations {
                tool["annotations"] = a.clone();
            }
            tool
        })
        .collect();
    json!({ "tools": tools })
}

pub(super) fn prompts_list(l: &Listing) -> Value {
    let prompts: Vec<Value> = l
        .commands
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "description": c.description,
                "arguments": [{
                    "name": "args",
                    "description": format!("the text after /{}", c.name),
                    "required": false,
                }],
            })
        })
        .collect();
    json!({ "prompts": prompts })
}

/// A command's answer as `prompts/get` result: the prompt, insert or
/// display text (an open panel as its title, lines and footer; nothing for
/// noop) as one user message.
pub(super) fn prompt_result(reply: Reply, name: &str, c: CommandReply) {
    if let Some(e) = c.error {
        return reply.err(codes::INTERNAL_ERROR, &e, Some(json!({"extension": c.extension, "prompt": name})));
    }
    let text = match c.action.as_str() {
        // The tool it names is not run: an MCP prompt is text only.
        "prompt" | "tool_prompt" => c.prompt,
        "insert" => c.insert,
        "display" => c.display,
        "open_panel" => c.open_panel.map(|p| {
            let mut parts = vec![p.title];
            parts.extend(p.lines);
            parts.push(p.footer);
            parts.retain(|s| !s.is_empty());
            parts.join("\n")
        }),
        _ => None,
    };
    let messages: Vec<Value> =
        text.into_iter().map(|t| json!({"role": "user", "content": {"type": "text", "text": t}})).collect();
    let description = format!("/{name} of extension {} ({})", c.extension, c.action);
    reply.ok(json!({"description": description, "messages": messages}))
}

/// An extension's tool result as MCP's: text and image blocks mapped, any
/// other block as the text of its JSON.
pub(super) fn tool_result(t: &ToolReply) -> Value {
    let content: Vec<Value> = t
        .content
        .iter()
        .map(|b| match b.get("type").and_then(Value::as_str) {
            Some("text") => json!({"type": "text", "text": b.get("text").and_then(Value::as_str).unwrap_or("")}),
            Some("image") => json!({
                "type": "image",
                "data": b.get("data").and_then(Value::as_str).unwrap_or(""),
                "mimeType": b.get("mime_type").and_then(Value::as_str).unwrap_or("application/octet-stream"),
            }),
            _ => json!({"type": "text", "text": b.to_string()}),
        })
        .collect();
    let mut result = json!({"content": content, "isError": t.is_error});
    if let Some(sc) = &t.structured_content {
        result["structuredContent"] = sc.clone();
    }
    result
}

pub(super) fn error_result(message: &str) -> Value {
    json!({"content": [{"type": "text", "text": message}], "isError": true})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_blocks() {
        let t = ToolReply {
            extension: "x".into(),
            content: vec![
                json!({"type": "text", "text": "hi"}),
                json!({"type": "image", "mime_type": "image/png", "data": "AAAA"}),
                json!({"type": "weird", "n": 1}),
            ],
            is_error: true,
            ..Default::default()
        };
        let r = tool_result(&t);
        assert_eq!(r["isError"], true);
        assert_eq!(r["content"][0], json!({"type": "text", "text": "hi"}));
        assert_eq!(r["content"][1], json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}));
        assert_eq!(r["content"][2]["type"], "text");
    }
}
