//! Every frame type of docs/protocol.md §2 built from its members by hand,
//! field by field as the types in this module declare them. Members are
//! taken in document order, so the first problem a derive would meet is
//! the one reported; a required field missing is reported after them, in
//! declaration order; members a frame does not know are ignored.

use super::members::*;
use super::{empty_object, CommandResponse, ExtFrame, HelloAck, HostFrame, InterceptResponse, ToolMore, ToolResult};

type Fields = Vec<(String, Val)>;

impl FromMembers for ExtFrame {
    fn from_members(ty: &str, m: Fields) -> Res<Option<ExtFrame>> {
        Ok(Some(match ty {
            "hello" => {
                let (mut name, mut version, mut capabilities) = (None, None, None);
                for (k, v) in m {
                    match k.as_str() {
                        "name" => set(&mut name, "name", v, lenient_string)?,
                        "version" => set(&mut version, "version", v, lenient_string)?,
                        "capabilities" => set(&mut capabilities, "capabilities", v, lenient_strings)?,
                        _ => {}
                    }
                }
                ExtFrame::Hello { name: name.unwrap_or_default(), version: version.unwrap_or_default(), capabilities: capabilities.unwrap_or_default() }
            }
            "register_command" => {
                let (mut name, mut description) = (None, None);
                for (k, v) in m {
                    match k.as_str() {
                        "name" => set(&mut name, "name", v, string)?,
                        "description" => set(&mut description, "description", v, lenient_string)?,
                        _ => {}
                    }
                }
                ExtFrame::RegisterCommand { name: need(name, "name")?, description: description.unwrap_or_default() }
            }
            "register_tool" => register_tool(m)?,
            "subscribe" => {
                let (mut events, mut intercept) = (None, None);
                for (k, v) in m {
                    match k.as_str() {
                        "events" => set(&mut events, "events", v, lenient_strings)?,
                        "intercept" => set(&mut intercept, "intercept", v, lenient_strings)?,
                        _ => {}
                    }
                }
                ExtFrame::Subscribe { events: events.unwrap_or_default(), intercept: intercept.unwrap_or_default() }
            }
            "ready" => ExtFrame::Ready,
            "command_response" => ExtFrame::CommandResponse(command_response(m)?),
            "tool_result" => ExtFrame::ToolResult(tool_result(m)?),
            "event_intercept_response" => ExtFrame::EventInterceptResponse(intercept_response(m)?),
            "notify" => {
                let (mut level, mut message) = (None, None);
                for (k, v) in m {
                    match k.as_str() {
                        "level" => set(&mut level, "level", v, lenient_string)?,
                        "message" => set(&mut message, "message", v, lenient_string)?,
                        _ => {}
                    }
                }
                ExtFrame::Notify { level: level.unwrap_or_default(), message: message.unwrap_or_default() }
            }
            "clear_notes" => ExtFrame::ClearNotes,
            "open_panel" => {
                let mut panel_ = None;
                for (k, v) in m {
                    if k == "panel" {
                        set(&mut panel_, "panel", v, panel)?;
                    }
                }
                ExtFrame::OpenPanel { panel: need(panel_, "panel")? }
            }
            "panel_render" => {
                let (mut panel_id, mut title, mut lines, mut footer) = (None, None, None, None);
                for (k, v) in m {
                    match k.as_str() {
                        "panel_id" => set(&mut panel_id, "panel_id", v, string)?,
                        "title" => set(&mut title, "title", v, lenient_string)?,
                        "lines" => set(&mut lines, "lines", v, lenient_strings)?,
                        "footer" => set(&mut footer, "footer", v, lenient_string)?,
                        _ => {}
                    }
                }
                ExtFrame::PanelRender {
                    panel_id: need(panel_id, "panel_id")?,
                    title: title.unwrap_or_default(),
                    lines: lines.unwrap_or_default(),
                    footer: footer.unwrap_or_default(),
                }
            }
            "panel_close" => ExtFrame::PanelClose { panel_id: one(m, "panel_id", string)? },
            "submit" => ExtFrame::Submit { text: one(m, "text", string)? },
            "call_tool" => {
                let (mut id, mut name, mut args, mut parent_id) = (None, None, None, None);
                for (k, v) in m {
                    match k.as_str() {
                        "id" => set(&mut id, "id", v, lenient_id)?,
                        "name" => set(&mut name, "name", v, any)?,
                        "args" => set(&mut args, "args", v, any)?,
                        "parent_id" => set(&mut parent_id, "parent_id", v, lenient_id)?,
                        _ => {}
                    }
                }
                ExtFrame::CallTool {
                    id: id.unwrap_or_default(),
                    name: name.unwrap_or_default(),
                    args: args.unwrap_or_default(),
                    parent_id: parent_id.unwrap_or_default(),
                }
            }
            "call_tool_cancel" => ExtFrame::CallToolCancel { id: maybe(m, "id", lenient_id)?.unwrap_or_default() },
            "submit_slash" => ExtFrame::SubmitSlash { text: maybe(m, "text", lenient_string)?.unwrap_or_default() },
            "shutdown_ack" => ExtFrame::ShutdownAck,
            _ => return Ok(None),
        }))
    }
}

/// The one field `name` of a frame that has no other, when present.
fn maybe<T>(m: Fields, name: &str, read: impl Fn(Val) -> Res<T>) -> Res<Option<T>> {
    let mut slot = None;
    for (k, v) in m {
        if k == name {
            set(&mut slot, name, v, &read)?;
        }
    }
    Ok(slot)
}

/// The one field `name` of a frame that has no other; it must be there.
fn one<T>(m: Fields, name: &str, read: impl Fn(Val) -> Res<T>) -> Res<T> {
    need(maybe(m, name, read)?, name)
}

/// `register_tool`: its own fields first, then the richer ones of
/// [`ToolMore`], which serde read from what the first pass left.
fn register_tool(m: Fields) -> Res<ExtFrame> {
    let (mut name, mut description, mut schema) = (None, None, None);
    let mut t = ToolMore::default();
    let (mut output_schema, mut deferred, mut exposure, mut interactive, mut namespace) = (None, None, None, None, None);
    let (mut namespace_description, mut namespace_instructions, mut replay, mut title, mut annotations) = (None, None, None, None, None);
    let mut more_err = None;
    for (k, v) in m {
        let more = match k.as_str() {
            "name" => {
                set(&mut name, "name", v, string)?;
                continue;
            }
            "description" => {
                set(&mut description, "description", v, lenient_string)?;
                continue;
            }
            "schema" => {
                set(&mut schema, "schema", v, any)?;
                continue;
            }
            "output_schema" => set(&mut output_schema, "output_schema", v, opt_any),
            "deferred" => set(&mut deferred, "deferred", v, lenient_bool),
            "exposure" => set(&mut exposure, "exposure", v, lenient_string),
            "interactive" => set(&mut interactive, "interactive", v, lenient_bool),
            "namespace" => set(&mut namespace, "namespace", v, lenient_string),
            "namespace_description" => set(&mut namespace_description, "namespace_description", v, lenient_string),
            "namespace_instructions" => set(&mut namespace_instructions, "namespace_instructions", v, lenient_string),
            "replay" => set(&mut replay, "replay", v, lenient_string),
            "title" => set(&mut title, "title", v, lenient_string),
            "annotations" => set(&mut annotations, "annotations", v, opt_any),
            _ => Ok(()),
        };
        if let Err(e) = more {
            more_err.get_or_insert(e);
        }
    }
    let name = need(name, "name")?;
    if let Some(e) = more_err {
        return Err(e);
    }
    t.output_schema = output_schema.flatten();
    t.deferred = deferred.unwrap_or_default();
    t.exposure = exposure.unwrap_or_default();
    t.interactive = interactive.unwrap_or_default();
    t.namespace = namespace.unwrap_or_default();
    t.namespace_description = namespace_description.unwrap_or_default();
    t.namespace_instructions = namespace_instructions.unwrap_or_default();
    t.replay = replay.unwrap_or_default();
    t.title = title.unwrap_or_default();
    t.annotations = annotations.flatten();
    Ok(ExtFrame::RegisterTool { name, description: description.unwrap_or_default(), schema: schema.unwrap_or_default(), more: t })
}

fn command_response(m: Fields) -> Res<CommandResponse> {
    let (mut id, mut action, mut prompt, mut insert, mut display) = (None, None, None, None, None);
    let (mut open_panel, mut error, mut tool_name, mut tool_args) = (None, None, None, None);
    for (k, v) in m {
        match k.as_str() {
            "id" => set(&mut id, "id", v, id_string)?,
            "action" => set(&mut action, "action", v, null_as_empty)?,
            "prompt" => set(&mut prompt, "prompt", v, opt_string)?,
            "insert" => set(&mut insert, "insert", v, opt_string)?,
            "display" => set(&mut display, "display", v, opt_string)?,
            "open_panel" => set(&mut open_panel, "open_panel", v, opt_panel)?,
            "error" => set(&mut error, "error", v, opt_string)?,
            "tool_name" => set(&mut tool_name, "tool_name", v, opt_string)?,
            "tool_args" => set(&mut tool_args, "tool_args", v, opt_any)?,
            _ => {}
        }
    }
    Ok(CommandResponse {
        id: need(id, "id")?,
        action: action.unwrap_or_default(),
        prompt: prompt.flatten(),
        insert: insert.flatten(),
        display: display.flatten(),
        open_panel: open_panel.flatten(),
        error: error.flatten(),
        tool_name: tool_name.flatten(),
        tool_args: tool_args.flatten(),
    })
}

fn tool_result(m: Fields) -> Res<ToolResult> {
    let (mut id, mut content, mut is_error, mut structured_content, mut activate_tools) = (None, None, None, None, None);
    for (k, v) in m {
        match k.as_str() {
            "id" => set(&mut id, "id", v, id_string)?,
            "content" => set(&mut content, "content", v, array)?,
            "is_error" => set(&mut is_error, "is_error", v, boolean)?,
            "structured_content" => set(&mut structured_content, "structured_content", v, opt_any)?,
            "activate_tools" => set(&mut activate_tools, "activate_tools", v, lenient_strings)?,
            _ => {}
        }
    }
    Ok(ToolResult {
        id: need(id, "id")?,
        content: content.unwrap_or_default(),
        is_error: is_error.unwrap_or_default(),
        structured_content: structured_content.flatten(),
        activate_tools: activate_tools.unwrap_or_default(),
    })
}

fn intercept_response(m: Fields) -> Res<InterceptResponse> {
    let (mut id, mut block, mut reason, mut modified_args, mut replace_text, mut system_prompt) = (None, None, None, None, None, None);
    for (k, v) in m {
        match k.as_str() {
            "id" => set(&mut id, "id", v, id_string)?,
            "block" => set(&mut block, "block", v, boolean)?,
            "reason" => set(&mut reason, "reason", v, lenient_string)?,
            "modified_args" => set(&mut modified_args, "modified_args", v, opt_any)?,
            "replace_text" => set(&mut replace_text, "replace_text", v, opt_string)?,
            "system_prompt" => set(&mut system_prompt, "system_prompt", v, opt_any)?,
            _ => {}
        }
    }
    Ok(InterceptResponse {
        id: need(id, "id")?,
        block: block.unwrap_or_default(),
        reason: reason.unwrap_or_default(),
        modified_args: modified_args.flatten(),
        replace_text: replace_text.flatten(),
        system_prompt: system_prompt.flatten(),
    })
}

impl FromMembers for HostFrame {
    fn from_members(ty: &str, m: Fields) -> Res<Option<HostFrame>> {
        Ok(Some(match ty {
            "hello_ack" => HostFrame::HelloAck(hello_ack(m)?),
            "command_invoked" => {
                let (mut id, mut name, mut args) = (None, None, None);
                for (k, v) in m {
                    match k.as_str() {
                        "id" => set(&mut id, "id", v, id_string)?,
                        "name" => set(&mut name, "name", v, string)?,
                        "args" => set(&mut args, "args", v, lenient_string)?,
                        _ => {}
                    }
                }
                HostFrame::CommandInvoked { id: need(id, "id")?, name: need(name, "name")?, args: args.unwrap_or_default() }
            }
            "tool_call" => {
                let (mut id, mut name, mut args, mut operation_key, mut reconcile) = (None, None, None, None, None);
                for (k, v) in m {
                    match k.as_str() {
                        "id" => set(&mut id, "id", v, id_string)?,
                        "name" => set(&mut name, "name", v, string)?,
                        "args" => set(&mut args, "args", v, any)?,
                        "operation_key" => set(&mut operation_key, "operation_key", v, opt_any)?,
                        "reconcile" => set(&mut reconcile, "reconcile", v, opt_any)?,
                        _ => {}
                    }
                }
                HostFrame::ToolCall {
                    id: need(id, "id")?,
                    name: need(name, "name")?,
                    args: args.unwrap_or_else(empty_object),
                    operation_key: operation_key.flatten(),
                    reconcile: reconcile.flatten(),
                }
            }
            "tool_result" => {
                let (mut id, mut name, mut content, mut is_error, mut truncated, mut structured_content) = (None, None, None, None, None, None);
                for (k, v) in m {
                    match k.as_str() {
                        "id" => set(&mut id, "id", v, id_string)?,
                        "name" => set(&mut name, "name", v, lenient_string)?,
                        "content" => set(&mut content, "content", v, lenient_array)?,
                        "is_error" => set(&mut is_error, "is_error", v, lenient_bool)?,
                        "truncated" => set(&mut truncated, "truncated", v, lenient_bool)?,
                        "structured_content" => set(&mut structured_content, "structured_content", v, opt_any)?,
                        _ => {}
                    }
                }
                HostFrame::ToolResult {
                    id: need(id, "id")?,
                    name: name.unwrap_or_default(),
                    content: content.unwrap_or_default(),
                    is_error: is_error.unwrap_or_default(),
                    truncated: truncated.unwrap_or_default(),
                    structured_content: structured_content.flatten(),
                }
            }
            "tool_cancel" => HostFrame::ToolCancel { id: one(m, "id", id_string)? },
            "event" | "event_intercept" => {
                let intercept = ty == "event_intercept";
                let (mut id, mut event, mut rest) = (None, None, Vec::new());
                for (k, v) in m {
                    match k.as_str() {
                        "id" if intercept => set(&mut id, "id", v, id_string)?,
                        "event" => set(&mut event, "event", v, string)?,
                        _ => rest.push((k, v)),
                    }
                }
                if intercept {
                    HostFrame::EventIntercept { id: need(id, "id")?, event: need(event, "event")?, payload: payload(rest) }
                } else {
                    HostFrame::Event { event: need(event, "event")?, payload: payload(rest) }
                }
            }
            "panel_key" => {
                let (mut panel_id, mut key, mut text) = (None, None, None);
                for (k, v) in m {
                    match k.as_str() {
                        "panel_id" => set(&mut panel_id, "panel_id", v, string)?,
                        "key" => set(&mut key, "key", v, string)?,
                        "text" => set(&mut text, "text", v, lenient_opt_string)?,
                        _ => {}
                    }
                }
                HostFrame::PanelKey { panel_id: need(panel_id, "panel_id")?, key: need(key, "key")?, text: text.flatten() }
            }
            "panel_close" => HostFrame::PanelClose { panel_id: one(m, "panel_id", string)? },
            "shutdown" => HostFrame::Shutdown,
            _ => return Ok(None),
        }))
    }
}

fn hello_ack(m: Fields) -> Res<HelloAck> {
    let mut a = HelloAck::default();
    let (mut protocol_version, mut zot_version, mut provider, mut model) = (None, None, None, None);
    let (mut cwd, mut extension_dir, mut data_dir, mut capabilities) = (None, None, None, None);
    for (k, v) in m {
        match k.as_str() {
            "protocol_version" => set(&mut protocol_version, "protocol_version", v, uint32)?,
            "zot_version" => set(&mut zot_version, "zot_version", v, lenient_string)?,
            "provider" => set(&mut provider, "provider", v, lenient_string)?,
            "model" => set(&mut model, "model", v, lenient_string)?,
            "cwd" => set(&mut cwd, "cwd", v, lenient_string)?,
            "extension_dir" => set(&mut extension_dir, "extension_dir", v, lenient_string)?,
            "data_dir" => set(&mut data_dir, "data_dir", v, lenient_string)?,
            "capabilities" => set(&mut capabilities, "capabilities", v, lenient_strings)?,
            _ => {}
        }
    }
    a.protocol_version = protocol_version.unwrap_or_default();
    a.zot_version = zot_version.unwrap_or_default();
    a.provider = provider.unwrap_or_default();
    a.model = model.unwrap_or_default();
    a.cwd = cwd.unwrap_or_default();
    a.extension_dir = extension_dir.unwrap_or_default();
    a.data_dir = data_dir.unwrap_or_default();
    a.capabilities = capabilities.unwrap_or_default();
    Ok(a)
}
