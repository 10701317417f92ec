//! Who owns which command and tool name. Claims are kept per name in load
//! order, so the owner is always the earliest live claimant, whatever order
//! the registrations arrived in; host built-ins come before all.

use std::collections::HashMap;

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
}

impl Registry {
    pub fn new(reserved: Vec<String>) -> Registry {
        Registry { reserved, ..Default::default() }
    }

    pub fn clear(&mut self) {
        self.commands.clear();
        self.tools.clear();
    }

    /// Command names are matched without case (PROTOCOL.md §6.3): `/Weather`
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

    /// Drops every claim of `slot` (its extension stopped or died).
    pub fn release(&mut self, slot: usize) {
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

    pub fn command_owner(&self, name: &str) -> Option<usize> {
        let key = name.to_lowercase();
        if self.reserved.iter().any(|r| r.to_lowercase() == key) {
            return None;
        }
        self.commands.get(&key).and_then(|v| v.first().copied())
    }

    pub fn tool_owner(&self, name: &str) -> Option<usize> {
        self.tools.get(name).and_then(|v| v.first().copied())
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
    use super::*;

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
}
