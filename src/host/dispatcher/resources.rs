//! Hosted servers' resources (docs/protocol.md §8.6): each server's lists
//! as its edge hands them over (kept with the server, a change announced
//! as `resources_changed`, a URI an earlier server lists logged), the
//! listing over every server, and a read routed to its server and kept in
//! the call table as a call is: under the server's `requestTimeout`,
//! cancelled with `notifications/cancelled`, failed at the server's exit.

use super::calls::{Call, CallKind};
use super::{after, mcp, respond, Dispatcher, Life};
use crate::host::resources::{self as offered, Offered};
use crate::host::{HostError, HostEvent, Request, Responder, ResourceListing, ResourceRead, Response};
use crate::mcpserver::edge::{Resource, Template};
use serde_json::Value;
use std::sync::Arc;

impl Dispatcher {
    /// The servers whose resources are offered now, in load order: running,
    /// or asleep (a read wakes it, as a call does).
    fn offering(&self) -> Vec<(usize, &Offered)> {
        self.exts
            .iter()
            .enumerate()
            .filter(|(_, e)| e.found.mcp.is_some() && (e.life.running() || e.idle.asleep(e.life)) && !e.resources.is_empty())
            .map(|(slot, e)| (slot, &e.resources))
            .collect()
    }

    /// [`Request::Resources`].
    pub(super) fn resource_listing(&self) -> ResourceListing {
        let servers: Vec<(&str, &Offered)> = self.offering().into_iter().map(|(s, o)| (self.exts[s].name(), o)).collect();
        offered::listing(&servers)
    }

    /// The server in `slot` listed its resources and templates: they are
    /// its now; a change after it was ready is announced.
    pub(super) fn on_resources(&mut self, slot: usize, resources: Vec<Resource>, templates: Vec<Template>) {
        if !self.exts[slot].life.running() {
            return;
        }
        let new = Offered { resources, templates };
        let earlier: Vec<(&str, &Offered)> =
            self.exts[..slot].iter().filter(|e| e.found.mcp.is_some()).map(|e| (e.name(), &e.resources)).collect();
        for uri in offered::shadowed(&earlier.iter().map(|(_, o)| *o).collect::<Vec<_>>(), &new) {
            let by = offered::route(&earlier, &uri).unwrap_or("?");
            self.exts[slot].log(&format!("resource {uri:?} is also listed by {by}, earlier in load order, which answers it"));
        }
        // A later server that listed first loses the URIs this one lists too.
        let name = self.exts[slot].name().to_string();
        for later in self.exts[slot + 1..].iter().filter(|e| e.found.mcp.is_some()) {
            for uri in offered::shadowed(&[&new], &later.resources) {
                later.log(&format!("resource {uri:?} is also listed by {name}, earlier in load order, which answers it"));
            }
        }
        let ext = &mut self.exts[slot];
        if ext.resources == new {
            return;
        }
        let announce = ext.life == Life::Ready;
        ext.log(&format!("resources listed: {} resources, {} templates", new.resources.len(), new.templates.len()));
        ext.resources = new;
        if announce {
            let extension = ext.name().to_string();
            self.emit(HostEvent::ResourcesChanged { extension });
        }
    }

    /// [`Request::ReadResource`]: routed to its server and sent, or
    /// `unknown_resource` (after the servers still starting, as a call for
    /// a name nobody has waits for them).
    pub(super) fn start_read(&mut self, uri: String, done: Responder) {
        let route = offered::route(&self.offering(), &uri);
        let Some(slot) = route else {
            let timeout = self.cfg.timeouts.tool;
            return self.unknown_or_wait(Request::ReadResource { uri }, None, done, timeout);
        };
        if self.exts[slot].idle.asleep(self.exts[slot].life) {
            return self.wake_for(slot, Request::ReadResource { uri }, None, done);
        }
        if let Err(e) = self.has_room(slot) {
            return respond(done, Err(e));
        }
        let ext = &self.exts[slot];
        let Some(edge) = ext.proc.as_ref().and_then(|p| p.edge.clone()) else {
            let extension = ext.name().to_string();
            return respond(done, Err(HostError::Exited { extension, detail: "not running".into() }));
        };
        let id = self.next();
        let ext = &self.exts[slot];
        if let Err(e) = ext.send_raw(Arc::new(edge.read(id.to_string(), &uri))) {
            return respond(done, Err(e));
        }
        done.reached();
        let deadline = after(mcp::tool_timeout(ext, self.cfg.timeouts.tool));
        let call = Call { ext: ext.id, kind: CallKind::Read { uri, done }, deadline };
        self.table.sent.insert(id, call);
    }

    /// The server in `slot` answered the read `id` (a read already ended,
    /// cancelled or timed out, is dropped).
    pub(super) fn on_read(&mut self, slot: usize, id: &str, result: Result<Vec<Value>, String>) {
        let ext_id = self.exts[slot].id;
        let is_read = |c: &Call| c.ext == ext_id && matches!(c.kind, CallKind::Read { .. });
        let Some(n) = id.parse::<u64>().ok().filter(|n| self.table.sent.get(n).is_some_and(is_read)) else { return };
        let Some(Call { kind: CallKind::Read { uri, done }, .. }) = self.table.sent.remove(&n) else { return };
        let server = self.exts[slot].name().to_string();
        match result {
            Ok(contents) => respond(done, Ok(Response::Resource(ResourceRead { server, contents }))),
            Err(why) => {
                self.exts[slot].log(&format!("resources/read of {uri:?} failed: {why}"));
                respond(done, Err(HostError::ReadFailed { server, uri, why }))
            }
        }
    }
}
