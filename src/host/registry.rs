//! Who owns which command and tool name. Claims are kept per name in load
//! order, so the owner is always the earliest live claimant, whatever order
//! the registrations arrived in; host built-ins come before all.
//!
//! An extension that restarts keeps its claims, *held* (docs/protocol.md §7.1):
//! while held, its names have no owner in force and nobody behind it takes
//! them over; requests for them wait for it ([`Registry::tool_holder`]).
//! Once it is back, the claims it did not make again are dropped
//! ([`Registry::keep_only`]); once it gives up for good, all of them are
//! ([`Registry::release`]), and a later claimant may take the names.

use std::collections::{BTreeSet, HashMap};

/// A claim that lost to an earlier one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Shadowed {
    /// The extension whose registration is not in effect.
    pub slot: usize,
    /// `command /x` or `tool x`.
    pub what: String,
    /// The winner: an extension's slot, or `None` for a host built-in.
    pub by: Option<usize>,
}

#[derive(Debug, Default)]
pub(super) struct Registry {
    reserved: Vec<String>,
    commands: HashMap<String, Vec<usize>>,
    tools: HashMap<String, Vec<usize>>,
    /// Extensions whose claims are held while they restart.
    held: BTreeSet<usize>,
}

impl Registry {
    pub fn new(reserved: Vec<String>) -> Registry {
        Registry { reserved, ..Default::default() }
    }

    pub fn clear(&mut self) {
        self.commands.clear();
        self.tools.clear();
        self.held.clear();
    }

    /// Keeps every claim of `slot` while it restarts: its names are
    /// reserved for it, in force for nobody.
    pub fn hold(&mut self, slot: usize) {
        self.held.insert(slot);
    }

    /// `slot` is back: its claims are in force again, except those for
    /// names it did not register this time.
    pub fn keep_only(&mut self, slot: usize, commands: &[String], tools: &[String]) {
        self.held.remove(&slot);
        let commands: Vec<String> = commands.iter().map(|c| c.to_lowercase()).collect();
        for (map, keep) in [(&mut self.commands, &commands[..]), (&mut self.tools, tools)] {
            map.retain(|name, v| {
                if !keep.contains(name) {
                    v.retain(|&s| s != slot);
                }
                !v.is_empty()
            });
        }
    }

    /// Command names are matched without case (docs/protocol.md §6.3): `/Weather`
    /// and `/weather` are one name, first come in load order.
    pub fn claim_command(&mut self, name: &str, slot: usize) -> Option<Shadowed> {
        let what = format!("command /{name}");
        let key = name.to_lowercase();
        if self.reserved.iter().any(|r| r.to_lowercase() == key) {
            claim(&mut self.commands, &key, slot);
            return Some(Shadowed { slot, what, by: None });
        }
        claim(&mut self.commands, &key, slot).map(|(slot, by)| Shadowed { slot, what, by: Some(by) })
    }

    pub fn claim_tool(&mut self, name: &str, slot: usize) -> Option<Shadowed> {
        let what = format!("tool {name}");
        claim(&mut self.tools, name, slot).map(|(slot, by)| Shadowed { slot, what, by: Some(by) })
    }

    /// Drops every claim of `slot` (its extension stopped, or died and is
    /// not coming back).
    pub fn release(&mut self, slot: usize) {
        self.held.remove(&slot);
        for map in [&mut self.commands, &mut self.tools] {
            map.retain(|_, v| {
                v.retain(|&s| s != slot);
                !v.is_empty()
            });
        }
    }

    /// Drops the claim of `slot` on tool `name` (an MCP server no longer lists it).
    pub fn release_tool(&mut self, name: &str, slot: usize) {
        if let Some(v) = self.tools.get_mut(name) {
            v.retain(|&s| s != slot);
            if v.is_empty() {
                self.tools.remove(name);
            }
        }
    }

    fn command_claimant(&self, name: &str) -> Option<usize> {
        let key = name.to_lowercase();
        if self.reserved.iter().any(|r| r.to_lowercase() == key) {
            return None;
        }
        self.commands.get(&key).and_then(|v| v.first().copied())
    }

    fn tool_claimant(&self, name: &str) -> Option<usize> {
        self.tools.get(name).and_then(|v| v.first().copied())
    }

    /// The extension command `name` is in force for.
    pub fn command_owner(&self, name: &str) -> Option<usize> {
        self.command_claimant(name).filter(|s| !self.held.contains(s))
    }

    pub fn tool_owner(&self, name: &str) -> Option<usize> {
        self.tool_claimant(name).filter(|s| !self.held.contains(s))
    }

    /// The restarting extension command `name` is reserved for.
    pub fn command_holder(&self, name: &str) -> Option<usize> {
        self.command_claimant(name).filter(|s| self.held.contains(s))
    }

    pub fn tool_holder(&self, name: &str) -> Option<usize> {
        self.tool_claimant(name).filter(|s| self.held.contains(s))
    }
}

/// Adds `slot` to the claimants of `name`. Returns `(loser, winner)` when
/// the claim shadows or is shadowed.
fn claim(map: &mut HashMap<String, Vec<usize>>, name: &str, slot: usize) -> Option<(usize, usize)> {
    let v = map.entry(name.to_string()).or_default();
    let Err(pos) = v.binary_search(&slot) else { return None };
    v.insert(pos, slot);
    match (pos, v.get(1)) {
        (0, Some(&old)) => Some((old, slot)),
        (0, None) => None,
        _ => Some((slot, v[0])),
    }
}

#[cfg(test)]
mod tests {
    use super::Registry;

    #[test]
    fn load_order_wins_whatever_the_arrival_order() {
        let mut r = Registry::new(vec!["help".into()]);
        assert_eq!(r.claim_command("x", 2), None);
        let s = r.claim_command("x", 0).unwrap();
        assert_eq!((s.slot, s.by), (2, Some(0)));
        let s = r.claim_command("x", 1).unwrap();
        assert_eq!((s.slot, s.by), (1, Some(0)));
        assert_eq!(r.command_owner("x"), Some(0));
        r.release(0);
        assert_eq!(r.command_owner("x"), Some(1));
        assert_eq!(r.claim_command("help", 0).unwrap().by, None);
        assert_eq!(r.command_owner("help"), None);
        assert_eq!(r.claim_command("x", 1), None);
        // Without case: the later spelling is shadowed.
        assert_eq!(r.claim_command("Weather", 0), None);
        assert_eq!(r.claim_command("weather", 1).unwrap().by, Some(0));
        assert_eq!(r.command_owner("WEATHER"), Some(0));
        assert_eq!(r.claim_command("HELP", 3).unwrap().by, None);
    }

    #[test]
    fn a_held_name_is_in_force_for_nobody_and_taken_by_no_one_behind() {
        let mut r = Registry::new(Vec::new());
        r.claim_tool("shared", 0);
        r.claim_tool("shared", 1);
        r.claim_command("Go", 0);
        r.claim_command("go", 1);
        r.hold(0);
        assert_eq!((r.tool_owner("shared"), r.tool_holder("shared")), (None, Some(0)));
        assert_eq!((r.command_owner("GO"), r.command_holder("go")), (None, Some(0)));
        // The one behind registers again meanwhile: still not its.
        assert_eq!(r.claim_tool("shared", 1), None);
        assert_eq!(r.tool_owner("shared"), None);
        // Back, registering its tool but not its command: the command goes
        // to the next in load order, the tool stays.
        r.claim_tool("shared", 0);
        r.keep_only(0, &[], &["shared".to_string()]);
        assert_eq!((r.tool_owner("shared"), r.tool_holder("shared")), (Some(0), None));
        assert_eq!(r.command_owner("go"), Some(1));
        // Given up for good: the next one takes every name.
        r.hold(0);
        r.release(0);
        assert_eq!((r.tool_owner("shared"), r.tool_holder("shared")), (Some(1), None));
    }

    #[test]
    fn an_unclaimed_or_built_in_name_is_held_by_nobody() {
        let mut r = Registry::new(vec!["help".into()]);
        r.claim_command("help", 0);
        r.hold(0);
        assert_eq!((r.command_owner("help"), r.command_holder("help")), (None, None));
        assert_eq!(r.tool_holder("nope"), None);
    }
}
