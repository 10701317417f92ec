//! Calls for a name nobody has while MCP servers are still starting
//! (docs/protocol.md §8.2): a server still connecting when the load ended
//! brings its tools later, so such a call (or command) waits for the
//! servers starting when it was made to be ready or failed (each bounded
//! by its own `connectTimeout`, the call by its own timeout), and is then
//! resolved; only then is it unknown, naming those servers.

use super::ending::unknown;
use super::table::Parked;
use super::{Dispatcher, Origin, Timer, after, respond};
use crate::host::{HostError, Request, Responder};
use std::time::Duration;

impl Dispatcher {
    /// Whether an MCP server is still starting from its first start.
    pub(super) fn servers_starting(&self) -> bool {
        self.starting_servers().next().is_some()
    }

    /// The MCP servers still starting from their first start (not a
    /// restart, nor a wake from idle).
    fn starting_servers(&self) -> impl Iterator<Item = usize> + '_ {
        self.exts.iter().enumerate().filter(|(_, e)| {
            e.found.mcp.is_some() && e.starting() && e.restart_names.is_none() && !e.idle.waking
        })
        .map(|(slot, _)| slot)
    }

    /// A request for a name nobody has: it waits while a server is still
    /// starting, else it is unknown at once.
    pub(super) fn unknown_or_wait(&mut self, req: Request, origin: Option<Origin>, done: Responder, timeout: Duration) {
        let starting: Vec<usize> = self.starting_servers().collect();
        let Some(&slot) = starting.first() else { return respond(done, Err(unknown(req))) };
        let names = starting.iter().map(|&s| self.exts[s].name().to_string()).collect();
        let key = self.next();
        self.table.parked.push(Parked { slot, req, origin, done, key, starting: Some(names) });
        self.at(after(timeout), Timer::Parked(key));
    }

    /// The server a waiting request was parked on is ready or failed: the
    /// request runs when its name is someone's now, waits on while another
    /// server is still starting, and is unknown once none is.
    pub(super) fn servers_started(&mut self, mut p: Parked, starting: Vec<String>) {
        let (name, command) = match &p.req {
            Request::Command { name, .. } => (name.clone(), true),
            Request::Tool { name, .. } => (name.clone(), false),
            Request::ToolCall(c) => (c.name.clone(), false),
            _ => return self.on_request(p.req, p.done),
        };
        let known = match command {
            true => self.registry.command_owner(&name).is_some() || self.restarting_owner(&name, false).is_some(),
            false => self.registry.tool_owner(&name).is_some() || self.restarting_owner(&name, true).is_some(),
        };
        if known {
            return match (p.req, p.origin) {
                (Request::ToolCall(call), Some(origin)) => self.start_tool(call, Some(origin), p.done),
                (req, _) => self.on_request(req, p.done),
            };
        }
        let next = self.starting_servers().next();
        if let Some(slot) = next {
            // The same key: its timer still bounds the wait.
            p.slot = slot;
            p.starting = Some(starting);
            return self.table.parked.push(p);
        }
        respond(p.done, Err(HostError::NotOffered { name, command, starting }));
    }
}
