//! What the console tells a newcomer: a command it does not know with the
//! nearest one it does (`did you mean`), or the disabled extension of
//! that name; what to try when no extension is loaded; and, once, that a
//! line without a slash reaches no model here.

use crate::discovery::{discover_with, Source};
use crate::manifest::MANIFEST_FILE;
use crate::host::Config;
use crate::text::one_line;

use super::state::BUILTINS;

/// The banner's second line when no extension is loaded.
pub(super) const NOTHING_LOADED: &str =
    "no extensions loaded: try `zot --ext PATH` to load one, or `zot ext new NAME` to write one";

/// Said after the first line typed without a slash.
pub(super) const NO_MODEL: &str = "(there is no model in this console: a line without a slash runs the events and \
     intercepts an agent's prompt would, and the model's answer is empty; /help lists the commands)";

/// The line for `/name`, which nothing registered: the disabled extension
/// of that name, or the nearest known command, or just that it is unknown.
pub(super) fn unknown_command(name: &str, known: &[String], config: &Config) -> String {
    let shown = one_line(name);
    let disc = discover_with(&config.sources, &config.mcp_configs, &config.cwd, &config.home, config.trust_project);
    if let Some(d) = disc.disabled.iter().find(|d| d.manifest.name.eq_ignore_ascii_case(name)) {
        let what = if d.mcp.is_some() { "MCP server" } else { "extension" };
        let name = one_line(&d.manifest.name);
        let fix = match &d.mcp {
            Some(spec) => format!("set \"disabled\": false for {name} in {}", one_line(&spec.file.display().to_string())),
            // `zot ext enable` finds installed ones, not an `--ext` path.
            None if d.source == Source::Ext => {
                format!("set \"enabled\": true in {}", one_line(&d.manifest.dir.join(MANIFEST_FILE).display().to_string()))
            }
            None => format!("zot ext enable {name}"),
        };
        return format!("unknown command /{shown} — the {what} {} is disabled ({fix})", one_line(&d.manifest.name));
    }
    // The command may well be one of the project's own extensions.
    if !disc.untrusted.is_empty() {
        let why = if disc.trust_changed { "the project changed since it was trusted" } else { "the project's extensions are not loaded" };
        return format!("unknown command /{shown} — {why}: zot trust");
    }
    let builtins = BUILTINS.iter().map(|(n, _)| n.to_string());
    match nearest(name, builtins.chain(known.iter().cloned())) {
        Some(near) => format!("unknown command /{shown} — did you mean /{}?", one_line(&near)),
        None => format!("unknown command /{shown}"),
    }
}

/// The candidate closest to `typed` (case aside), if it is close enough
/// to be a slip: within a third of the name's length in edits, at least one.
fn nearest(typed: &str, candidates: impl Iterator<Item = String>) -> Option<String> {
    let candidates: Vec<String> = candidates.collect();
    crate::nearest::nearest(typed, &candidates, (typed.chars().count() / 3).max(1)).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slip_finds_the_command_meant() {
        let known = || ["weather", "display", "exit"].map(String::from).into_iter();
        assert_eq!(nearest("weathr", known()), Some("weather".into()));
        assert_eq!(nearest("WAETHER", known()), Some("weather".into()));
        assert_eq!(nearest("dsplay", known()), Some("display".into()));
        assert_eq!(nearest("exti", known()), Some("exit".into()));
        assert_eq!(nearest("nope", known()), None);
    }
}
