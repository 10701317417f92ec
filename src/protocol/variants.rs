//! Every frame type of docs/protocol.md §2 built from its members by hand:
//! each type's fields as a table of names and rules, in the order the
//! types in this module declare them (a required field missing is
//! reported in that order, after every problem the members themselves
//! have); members a frame does not know are ignored.

use super::members::{payload, take, FromMembers, Res, Rule, Rule::*, Val};
use super::frames::{empty_object, CommandResponse, ExtFrame, HelloAck, HostFrame, InterceptResponse, ToolMore, ToolResult};

type Fields = Vec<(String, Val)>;
type Spec = &'static [(&'static str, Rule)];

const HELLO: Spec = &[("name", LenientStr), ("version", LenientStr), ("capabilities", LenientStrings)];
const REGISTER_COMMAND: Spec = &[("name", Str), ("description", LenientStr)];
const REGISTER_TOOL: Spec = &[("name", Str), ("description", LenientStr), ("schema", Any)];
// `ToolMore` is flattened into `register_tool`: serde reads it from what
// the tool's own fields left, after them.
const TOOL_MORE: Spec = &[
    ("output_schema", OptAny),
    ("deferred", LenientBool),
    ("exposure", LenientStr),
    ("interactive", LenientBool),
    ("namespace", LenientStr),
    ("namespace_description", LenientStr),
    ("namespace_instructions", LenientStr),
    ("replay", LenientStr),
    ("title", LenientStr),
    ("annotations", OptAny),
];
const SUBSCRIBE: Spec = &[("events", LenientStrings), ("intercept", LenientStrings)];
const COMMAND_RESPONSE: Spec = &[
    ("id", Id),
    ("action", NullAsEmpty),
    ("prompt", OptStr),
    ("insert", OptStr),
    ("display", OptStr),
    ("open_panel", OptPanel),
    ("error", OptStr),
    ("tool_name", OptStr),
    ("tool_args", OptAny),
];
const EXT_TOOL_RESULT: Spec =
    &[("id", Id), ("content", Array), ("is_error", Bool), ("structured_content", OptAny), ("activate_tools", LenientStrings)];
const INTERCEPT_RESPONSE: Spec =
    &[("id", Id), ("block", Bool), ("reason", LenientStr), ("modified_args", OptAny), ("replace_text", OptStr), ("system_prompt", OptAny)];
const NOTIFY: Spec = &[("level", LenientStr), ("message", LenientStr)];
const OPEN_PANEL: Spec = &[("panel", Panel)];
const PANEL_RENDER: Spec = &[("panel_id", Str), ("title", LenientStr), ("lines", LenientStrings), ("footer", LenientStr)];
const PANEL_CLOSE: Spec = &[("panel_id", Str)];
const SUBMIT: Spec = &[("text", Str)];
const CALL_TOOL: Spec = &[("id", LenientId), ("name", Any), ("args", Any), ("parent_id", LenientId)];
const CALL_TOOL_CANCEL: Spec = &[("id", LenientId)];
const SUBMIT_SLASH: Spec = &[("text", LenientStr)];

const HELLO_ACK: Spec = &[
    ("protocol_version", U32),
    ("zot_version", LenientStr),
    ("provider", LenientStr),
    ("model", LenientStr),
    ("cwd", LenientStr),
    ("extension_dir", LenientStr),
    ("data_dir", LenientStr),
    ("capabilities", LenientStrings),
];
const COMMAND_INVOKED: Spec = &[("id", Id), ("name", Str), ("args", LenientStr)];
const TOOL_CALL: Spec = &[("id", Id), ("name", Str), ("args", Any), ("operation_key", OptAny), ("reconcile", OptAny)];
const HOST_TOOL_RESULT: Spec = &[
    ("id", Id),
    ("name", LenientStr),
    ("content", LenientArray),
    ("is_error", LenientBool),
    ("truncated", LenientBool),
    ("structured_content", OptAny),
];
const TOOL_CANCEL: Spec = &[("id", Id)];
const EVENT: Spec = &[("event", Str)];
const EVENT_INTERCEPT: Spec = &[("id", Id), ("event", Str)];
const PANEL_KEY: Spec = &[("panel_id", Str), ("key", Str), ("text", LenientOptStr)];

/// Every field an extension's frame may have, `type` aside.
const EXT_SPECS: &[Spec] = &[
    HELLO,
    REGISTER_COMMAND,
    REGISTER_TOOL,
    TOOL_MORE,
    SUBSCRIBE,
    COMMAND_RESPONSE,
    EXT_TOOL_RESULT,
    INTERCEPT_RESPONSE,
    NOTIFY,
    OPEN_PANEL,
    PANEL_RENDER,
    PANEL_CLOSE,
    SUBMIT,
    CALL_TOOL,
    CALL_TOOL_CANCEL,
    SUBMIT_SLASH,
];

impl FromMembers for ExtFrame {
    // A member no frame reads is skipped unread, however its strings are
    // encoded: an extension's own extra data never costs it its answer.
    fn reads(key: &str) -> bool {
        key == "type" || EXT_SPECS.iter().any(|s| s.iter().any(|(n, _)| *n == key))
    }

    fn from_members(ty: &str, m: Fields) -> Res<Option<ExtFrame>> {
        Ok(Some(match ty {
            "hello" => {
                let mut t = take(m, HELLO)?;
                ExtFrame::Hello { name: t.str(0), version: t.str(1), capabilities: t.strings(2) }
            }
            "register_command" => {
                let mut t = take(m, REGISTER_COMMAND)?;
                ExtFrame::RegisterCommand { name: t.need_str(0)?, description: t.str(1) }
            }
            "register_tool" => {
                let mut t = take(m, REGISTER_TOOL)?;
                let name = t.need_str(0)?;
                let mut x = take(std::mem::take(&mut t.rest), TOOL_MORE)?;
                let more = ToolMore {
                    output_schema: x.opt_json(0),
                    deferred: x.bool(1),
                    exposure: x.str(2),
                    interactive: x.bool(3),
                    namespace: x.str(4),
                    namespace_description: x.str(5),
                    namespace_instructions: x.str(6),
                    replay: x.str(7),
                    title: x.str(8),
                    annotations: x.opt_json(9),
                };
                ExtFrame::RegisterTool { name, description: t.str(1), schema: t.json(2).unwrap_or_default(), more }
            }
            "subscribe" => {
                let mut t = take(m, SUBSCRIBE)?;
                ExtFrame::Subscribe { events: t.strings(0), intercept: t.strings(1) }
            }
            "ready" => ExtFrame::Ready,
            "command_response" => {
                let mut t = take(m, COMMAND_RESPONSE)?;
                ExtFrame::CommandResponse(CommandResponse {
                    id: t.need_str(0)?,
                    action: t.str(1),
                    prompt: t.opt_str(2),
                    insert: t.opt_str(3),
                    display: t.opt_str(4),
                    open_panel: t.opt_panel(5),
                    error: t.opt_str(6),
                    tool_name: t.opt_str(7),
                    tool_args: t.opt_json(8),
                })
            }
            "tool_result" => {
                let mut t = take(m, EXT_TOOL_RESULT)?;
                ExtFrame::ToolResult(ToolResult {
                    id: t.need_str(0)?,
                    content: t.array(1),
                    is_error: t.bool(2),
                    structured_content: t.opt_json(3),
                    activate_tools: t.strings(4),
                })
            }
            "event_intercept_response" => {
                let mut t = take(m, INTERCEPT_RESPONSE)?;
                ExtFrame::EventInterceptResponse(InterceptResponse {
                    id: t.need_str(0)?,
                    block: t.bool(1),
                    reason: t.str(2),
                    modified_args: t.opt_json(3),
                    replace_text: t.opt_str(4),
                    system_prompt: t.opt_json(5),
                })
            }
            "notify" => {
                let mut t = take(m, NOTIFY)?;
                ExtFrame::Notify { level: t.str(0), message: t.str(1) }
            }
            "clear_notes" => ExtFrame::ClearNotes,
            "open_panel" => ExtFrame::OpenPanel { panel: take(m, OPEN_PANEL)?.need_panel(0)? },
            "panel_render" => {
                let mut t = take(m, PANEL_RENDER)?;
                ExtFrame::PanelRender { panel_id: t.need_str(0)?, title: t.str(1), lines: t.strings(2), footer: t.str(3) }
            }
            "panel_close" => ExtFrame::PanelClose { panel_id: take(m, PANEL_CLOSE)?.need_str(0)? },
            "submit" => ExtFrame::Submit { text: take(m, SUBMIT)?.need_str(0)? },
            "call_tool" => {
                let mut t = take(m, CALL_TOOL)?;
                ExtFrame::CallTool {
                    id: t.str(0),
                    name: t.json(1).unwrap_or_default(),
                    args: t.json(2).unwrap_or_default(),
                    parent_id: t.str(3),
                }
            }
            "call_tool_cancel" => ExtFrame::CallToolCancel { id: take(m, CALL_TOOL_CANCEL)?.str(0) },
            "submit_slash" => ExtFrame::SubmitSlash { text: take(m, SUBMIT_SLASH)?.str(0) },
            "shutdown_ack" => ExtFrame::ShutdownAck,
            _ => return Ok(None),
        }))
    }
}

impl FromMembers for HostFrame {
    fn from_members(ty: &str, m: Fields) -> Res<Option<HostFrame>> {
        Ok(Some(match ty {
            "hello_ack" => {
                let mut t = take(m, HELLO_ACK)?;
                HostFrame::HelloAck(HelloAck {
                    protocol_version: t.u32(0),
                    zot_version: t.str(1),
                    provider: t.str(2),
                    model: t.str(3),
                    cwd: t.str(4),
                    extension_dir: t.str(5),
                    data_dir: t.str(6),
                    capabilities: t.strings(7),
                })
            }
            "command_invoked" => {
                let mut t = take(m, COMMAND_INVOKED)?;
                HostFrame::CommandInvoked { id: t.need_str(0)?, name: t.need_str(1)?, args: t.str(2) }
            }
            "tool_call" => {
                let mut t = take(m, TOOL_CALL)?;
                HostFrame::ToolCall {
                    id: t.need_str(0)?,
                    name: t.need_str(1)?,
                    args: t.json(2).unwrap_or_else(empty_object),
                    operation_key: t.opt_json(3),
                    reconcile: t.opt_json(4),
                }
            }
            "tool_result" => {
                let mut t = take(m, HOST_TOOL_RESULT)?;
                HostFrame::ToolResult {
                    id: t.need_str(0)?,
                    name: t.str(1),
                    content: t.array(2),
                    is_error: t.bool(3),
                    truncated: t.bool(4),
                    structured_content: t.opt_json(5),
                }
            }
            "tool_cancel" => HostFrame::ToolCancel { id: take(m, TOOL_CANCEL)?.need_str(0)? },
            "event" => {
                let mut t = take(m, EVENT)?;
                HostFrame::Event { event: t.need_str(0)?, payload: payload(t.rest) }
            }
            "event_intercept" => {
                let mut t = take(m, EVENT_INTERCEPT)?;
                HostFrame::EventIntercept { id: t.need_str(0)?, event: t.need_str(1)?, payload: payload(std::mem::take(&mut t.rest)) }
            }
            "panel_key" => {
                let mut t = take(m, PANEL_KEY)?;
                HostFrame::PanelKey { panel_id: t.need_str(0)?, key: t.need_str(1)?, text: t.opt_str(2) }
            }
            "panel_close" => HostFrame::PanelClose { panel_id: take(m, PANEL_CLOSE)?.need_str(0)? },
            "shutdown" => HostFrame::Shutdown,
            _ => return Ok(None),
        }))
    }
}
