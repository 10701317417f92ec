//! What the builder collects and the runtime serves: the handler types,
//! each command and tool with its handler, and the [`Extension`] itself
//! (its builder methods are in the `ext` module).

use super::call::ToolCall;
use super::handle::Shared;
use super::types::*;
use serde_json::Value;
use std::sync::Arc;

use crate::protocol::{Payload, ToolMore};

pub(crate) type CommandFn = Arc<dyn Fn(&str) -> Response + Send + Sync>;
pub(crate) type ToolFn = Arc<dyn Fn(ToolCall) -> ToolResult + Send + Sync>;
pub(crate) type ReconcileFn = Arc<dyn Fn(&ToolCall) -> Reconciled + Send + Sync>;
pub(crate) type EventFn = Arc<dyn Fn(&str, &Payload) + Send + Sync>;
pub(crate) type InterceptFn = Arc<dyn Fn(&Payload) -> Verdict + Send + Sync>;
pub(crate) type PanelKeyFn = Arc<dyn Fn(&PanelKey) + Send + Sync>;
pub(crate) type PanelCloseFn = Arc<dyn Fn(&str) + Send + Sync>;
type HelloFn = Box<dyn FnOnce(&HostInfo, &mut Extension) + Send>;

pub(crate) struct CommandDef {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) handler: CommandFn,
}

pub(crate) struct ToolDef {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) schema: Value,
    pub(crate) more: ToolMore,
    pub(crate) handler: ToolFn,
}

/// An extension under construction; [`run`](Extension::run) starts it.
pub struct Extension {
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) shared: Arc<Shared>,
    pub(crate) commands: Vec<CommandDef>,
    pub(crate) tools: Vec<ToolDef>,
    pub(crate) reconcilers: Vec<(String, ReconcileFn)>,
    pub(crate) events: Vec<(String, EventFn)>,
    pub(crate) intercepts: Vec<(String, InterceptFn)>,
    pub(crate) panel_key: Option<PanelKeyFn>,
    pub(crate) panel_close: Option<PanelCloseFn>,
    pub(crate) on_hello: Option<HelloFn>,
}
