//! Parsing the arguments with `lexopt` into a [`Command`]: the session
//! options anywhere before or after the command word, each command's own
//! flags, and the usage errors.

use super::args::{Args, Tok};
use super::command::{absolute, Command, SessionArgs, UsageError};
use super::flags::{command, find, Cmd, Set, SESSION_FLAGS, SHELLS};
use super::help::{command_help, ext_help, top_help};
use crate::manage::ExtCommand;
use lexopt::Parser;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

impl Args {
    /// An argument nothing takes here; a long option close to a known one
    /// (`--tool-timout`) gets the nearest as a suggestion.
    fn unexpected(&self, tok: &Tok) -> UsageError {
        if let Tok::Long(l) = tok {
            // An option of another command is unexpected here, not a slip.
            let known = known_longs();
            if let (false, Some(near)) = (known.contains(&l.as_str()), nearest(l, &known)) {
                return self.err(format!("unexpected argument '--{l}'; did you mean '--{near}'?"));
            }
        }
        self.err(format!("unexpected argument '{}'", tok.spelled()))
    }

    /// `command`, provided nothing follows: `zot --version extra` is a
    /// usage error, not a version.
    fn last(mut self, command: Command) -> Result<Command, UsageError> {
        match self.next()? {
            None => Ok(command),
            Some(tok) => Err(self.unexpected(&tok)),
        }
    }
}

/// Parses the arguments (without the program name).
pub fn parse<I>(args: I) -> Result<Command, UsageError>
where
    I: IntoIterator,
    I::Item: Into<OsString>,
{
    let mut a = Args { parser: Parser::from_args(args), context: "zot".into() };
    let mut s = SessionArgs::default();
    while let Some(tok) = a.next()? {
        if session_option(&mut a, &mut s, &tok)? {
            continue;
        }
        match &tok {
            _ if is_help(&tok) => return a.last(Command::Help(top_help())),
            _ if is_version(&tok) => return a.last(Command::Version),
            Tok::Value(v) => {
                let word = v.to_string_lossy().into_owned();
                let context = format!("zot {word}");
                return match word.as_str() {
                    "serve" | "mcp" => {
                        a.context = context;
                        parse_session(a, s, &word)
                    }
                    "ext" => {
                        a.context = context;
                        parse_ext(a, s)
                    }
                    "help" => {
                        if let Some(opt) = s.given.first() {
                            return Err(a.err(format!("option '--{opt}' does not apply to '{context}'")));
                        }
                        a.context = context;
                        parse_help(a, Vec::new())
                    }
                    "trust" | "untrust" | "completions" | "man" => {
                        if let Some(opt) = s.given.first() {
                            return Err(a.err(format!("option '--{opt}' does not apply to '{context}'")));
                        }
                        a.context = context;
                        parse_simple(a, &word)
                    }
                    _ => Err(a.err(unknown("command", &word, TOP_WORDS))),
                };
            }
            _ => return Err(a.unexpected(&tok)),
        }
    }
    Ok(Command::Session(s))
}

/// The command words after `zot`.
const TOP_WORDS: &[&str] = &["serve", "mcp", "ext", "trust", "untrust", "completions", "help", "man"];

/// `unknown <what> 'word'`, and the nearest of `known` when one is close
/// (a typo of one or two letters).
fn unknown(what: &str, word: &str, known: &[&str]) -> String {
    match nearest(word, known) {
        Some(k) => format!("unknown {what} '{word}'; did you mean '{k}'?"),
        None => format!("unknown {what} '{word}'"),
    }
}

/// The one of `known` within a typo of `word` (one letter for short words,
/// two otherwise), the nearest first.
fn nearest<'a>(word: &str, known: &[&'a str]) -> Option<&'a str> {
    crate::nearest::nearest(word, known, crate::nearest::slip(word)).copied()
}

/// Every long option of every command, the session's included.
fn known_longs() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = SESSION_FLAGS.iter().map(|f| f.long).collect();
    out.extend(super::flags::COMMANDS.iter().flat_map(|c| c.flags.iter().map(|f| f.long)));
    out
}

/// `zot help [WORDS]` and `zot ext help [WORDS]` (`words`: the ones
/// already read, `ext`): the help those words' `--help` prints.
fn parse_help(mut a: Args, mut words: Vec<String>) -> Result<Command, UsageError> {
    while let Some(tok) = a.next()? {
        match tok {
            Tok::Value(v) => words.push(v.to_string_lossy().into_owned()),
            _ if is_help(&tok) => return a.last(Command::Help(command_help(command("help")))),
            other => return Err(a.unexpected(&other)),
        }
    }
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let text = match words.as_slice() {
        [] => top_help(),
        ["ext"] => ext_help(),
        ["ext", sub] if EXT_SUBCOMMANDS.contains(sub) => ext_sub_help(sub),
        ["ext", sub] => return Err(a.err(unknown("subcommand", sub, EXT_SUBCOMMANDS))),
        ["ext", _, extra, ..] => return Err(a.err(format!("unexpected argument '{extra}'"))),
        ["mcp", "import"] => command_help(command("mcp import")),
        ["mcp", sub @ ("login" | "logout")] => command_help(command(&format!("mcp {sub}"))),
        [word, extra, ..] if TOP_WORDS.contains(word) => {
            return Err(a.err(format!("unexpected argument '{extra}'")));
        }
        [word] if TOP_WORDS.contains(word) => command_help(command(word)),
        // A subcommand named alone: its group's help of it.
        [sub] if MCP_SUBCOMMANDS.contains(sub) => command_help(command(&format!("mcp {sub}"))),
        [sub] if EXT_SUBCOMMANDS.contains(sub) => ext_sub_help(sub),
        [word, ..] => return Err(a.err(unknown_help_word(word))),
    };
    Ok(Command::Help(text))
}

const MCP_SUBCOMMANDS: &[&str] = &["import", "login", "logout"];

/// `zot help WORD` for a word that is no command: the nearest command, or
/// the nearest subcommand with its group (`did you mean 'zot help mcp
/// import'?`).
fn unknown_help_word(word: &str) -> String {
    if nearest(word, TOP_WORDS).is_some() {
        return unknown("command", word, TOP_WORDS);
    }
    let subs: Vec<&str> = MCP_SUBCOMMANDS.iter().chain(EXT_SUBCOMMANDS).copied().collect();
    match nearest(word, &subs) {
        Some(sub) => {
            let group = if MCP_SUBCOMMANDS.contains(&sub) { "mcp" } else { "ext" };
            format!("unknown command '{word}'; did you mean 'zot help {group} {sub}'?")
        }
        None => format!("unknown command '{word}'"),
    }
}

/// What `zot ext <sub> --help` prints.
fn ext_sub_help(sub: &str) -> String {
    match sub {
        "new" => crate::scaffold::HELP.to_string(),
        "check" => crate::check::HELP.to_string(),
        "doctor" => crate::doctor::HELP.to_string(),
        _ => command_help(command(&format!("ext {sub}"))),
    }
}

fn is_help(tok: &Tok) -> bool {
    matches!(tok, Tok::Short('h')) || matches!(tok, Tok::Long(l) if l == "help")
}

/// `-V` or `--version`: the version, after any command word as before it.
fn is_version(tok: &Tok) -> bool {
    matches!(tok, Tok::Short('V')) || matches!(tok, Tok::Long(l) if l == "version")
}

/// Handles one of [`SESSION_FLAGS`]; false when `tok` is not one of them.
fn session_option(a: &mut Args, s: &mut SessionArgs, tok: &Tok) -> Result<bool, UsageError> {
    let Some(flag) = find(&SESSION_FLAGS, tok) else { return Ok(false) };
    if let Set::Session(set) = flag.set {
        set(a, s, tok)?;
    }
    s.given.push(flag.long);
    Ok(true)
}

/// `zot serve`, `zot mcp` and `zot ext doctor`: the session options, and
/// `--json` for the doctor.
fn parse_session(mut a: Args, mut s: SessionArgs, word: &str) -> Result<Command, UsageError> {
    let mut json = false;
    // `zot mcp login NAME` / `zot mcp logout NAME`.
    let mut word = word.to_string();
    let mut name: Option<String> = None;
    let word = &mut word;
    loop {
        // Each option given so far, before the command word or after it.
        for flag in SESSION_FLAGS.iter().filter(|f| s.given.contains(&f.long)) {
            if let Some((_, why)) = flag.not_for.iter().find(|(c, _)| *c == word) {
                return Err(a.err(format!("option '--{}' does not apply to 'zot {word}': {why}", flag.long)));
            }
        }
        let Some(tok) = a.next()? else { break };
        if session_option(&mut a, &mut s, &tok)? {
            continue;
        }
        if is_help(&tok) {
            let help = if *word == "ext doctor" { crate::doctor::HELP.to_string() } else { command_help(command(word)) };
            return a.last(Command::Help(help));
        }
        if is_version(&tok) {
            return a.last(Command::Version);
        }
        match &tok {
            Tok::Long(l) if l == "json" && *word == "ext doctor" => json = true,
            Tok::Value(v) if *word == "mcp" && v == "import" => {
                if let Some(opt) = s.given.first() {
                    return Err(a.err(format!("option '--{opt}' does not apply to 'zot mcp import'")));
                }
                a.context = "zot mcp import".into();
                return parse_mcp_import(a);
            }
            Tok::Value(v) if *word == "mcp" && (v == "login" || v == "logout") => {
                *word = format!("mcp {}", v.to_string_lossy());
                a.context = format!("zot {word}");
            }
            Tok::Value(v) if word.starts_with("mcp log") && name.is_none() => name = Some(v.to_string_lossy().into_owned()),
            _ => return Err(a.unexpected(&tok)),
        }
    }
    Ok(match word.as_str() {
        "serve" => Command::Serve(s),
        "mcp" => Command::Mcp(s),
        "mcp login" | "mcp logout" => {
            let Some(name) = name else { return Err(a.err("the name of a server is missing")) };
            Command::McpLogin { session: s, name, logout: word == "mcp logout" }
        }
        _ => Command::ExtDoctor { session: s, json },
    })
}

/// `zot mcp import [--from SOURCE] [--dry-run] [--force]`.
fn parse_mcp_import(mut a: Args) -> Result<Command, UsageError> {
    let mut o = crate::mcpserver::import::ImportOptions::default();
    while let Some(tok) = a.next()? {
        if is_help(&tok) {
            return a.last(Command::Help(command_help(command("mcp import"))));
        }
        match &tok {
            Tok::Long(l) if l == "from" => {
                let v = a.value()?;
                let v = v.to_string_lossy();
                o.from = Some(if crate::mcpserver::import::CLIENTS.contains(&v.as_ref()) {
                    v.into_owned()
                } else {
                    absolute(Path::new(v.as_ref())).map_err(|e| a.err(e))?.display().to_string()
                });
            }
            Tok::Long(l) if l == "dry-run" => o.dry_run = true,
            Tok::Long(l) if l == "force" => o.force = true,
            _ => return Err(a.unexpected(&tok)),
        }
    }
    Ok(Command::McpImport(o))
}

/// `zot trust`, `zot untrust`, `zot completions` and `zot man`.
fn parse_simple(mut a: Args, word: &str) -> Result<Command, UsageError> {
    let mut positional: Option<OsString> = None;
    let mut list = false;
    let mut confine = None;
    while let Some(tok) = a.next()? {
        if is_help(&tok) {
            return a.last(Command::Help(command_help(command(word))));
        }
        match &tok {
            Tok::Long(l) if l == "list" && word == "trust" => list = true,
            Tok::Long(l) if l == "confine" && word == "trust" => confine = Some(a.string(&tok)?),
            Tok::Value(v) if positional.is_none() && word != "man" => positional = Some(v.clone()),
            _ => return Err(a.unexpected(&tok)),
        }
    }
    use crate::trust::TrustCommand as T;
    let dir = || positional.as_deref().map(|d| absolute(Path::new(d))).transpose().map_err(|e| a.err(e));
    match word {
        "trust" if list && positional.is_some() => Err(a.err("'--list' takes no DIR")),
        "trust" if list => Ok(Command::Trust(T::List, confine)),
        "trust" => Ok(Command::Trust(T::Trust(dir()?), confine)),
        "untrust" => Ok(Command::Trust(T::Untrust(dir()?), None)),
        "man" => Ok(Command::Man),
        _ => {
            let shell = positional.map(|v| v.to_string_lossy().into_owned());
            match shell {
                Some(sh) if SHELLS.contains(&sh.as_str()) => Ok(Command::Completions(sh)),
                Some(sh) => Err(a.err(format!("unknown shell '{sh}': expected one of {}", SHELLS.join(", ")))),
                None => Err(a.err(format!("missing shell ({})", SHELLS.join(", ")))),
            }
        }
    }
}

fn parse_ext(mut a: Args, mut s: SessionArgs) -> Result<Command, UsageError> {
    let mut cwd = s.cwd.clone();
    while let Some(tok) = a.next()? {
        match &tok {
            _ if is_help(&tok) => return a.last(Command::Help(ext_help())),
            _ if is_version(&tok) => return a.last(Command::Version),
            Tok::Long(l) if l == "cwd" => cwd = Some(PathBuf::from(a.value()?)),
            Tok::Value(v) if v == "help" => {
                a.context = "zot ext help".into();
                return parse_help(a, vec!["ext".into()]);
            }
            Tok::Value(v) => {
                let sub = v.to_string_lossy().into_owned();
                if !EXT_SUBCOMMANDS.contains(&sub.as_str()) {
                    return Err(a.err(unknown("subcommand", &sub, EXT_SUBCOMMANDS)));
                }
                a.context = format!("zot ext {sub}");
                if sub == "doctor" {
                    s.cwd = cwd;
                    return parse_session(a, s, "ext doctor");
                }
                // `logs` finds the servers a session was given (docs/protocol.md §8.1).
                let takes = |o: &&str| *o == "cwd" || (sub == "logs" && *o == "mcp-config");
                if let Some(opt) = s.given.iter().find(|o| !takes(o)) {
                    return Err(a.err(format!("option '--{opt}' does not apply to 'zot ext {sub}'")));
                }
                return parse_ext_sub(a, &sub, cwd, s.mcp_configs);
            }
            _ => return Err(a.unexpected(&tok)),
        }
    }
    if let Some(opt) = s.given.iter().find(|o| **o != "cwd") {
        return Err(a.err(format!("option '--{opt}' does not apply to 'zot ext'")));
    }
    Err(a.err("missing subcommand (list, install, remove, enable, disable, logs, new, check, doctor)"))
}

const EXT_SUBCOMMANDS: &[&str] = &["list", "install", "remove", "enable", "disable", "logs", "new", "check", "doctor"];

fn parse_ext_sub(mut a: Args, sub: &str, mut cwd: Option<PathBuf>, mut mcp_configs: Vec<PathBuf>) -> Result<Command, UsageError> {
    let spec = command(&format!("ext {sub}"));
    if sub == "new" || sub == "check" {
        if cwd.is_some() {
            return Err(a.err(format!("option '--cwd' does not apply to 'zot ext {sub}'")));
        }
        return if sub == "new" { parse_new(a, spec) } else { parse_check(a, spec) };
    }
    let mut json = false;
    let mut names = false;
    let mut yes = false;
    let mut follow = false;
    let mut positional: Option<OsString> = None;
    while let Some(tok) = a.next()? {
        if is_help(&tok) {
            return a.last(Command::Help(command_help(spec)));
        }
        match (find(spec.flags, &tok).map(|f| f.long), &tok) {
            (Some("cwd"), _) => cwd = Some(PathBuf::from(a.value()?)),
            (Some("json"), _) => json = true,
            (Some("names"), _) => names = true,
            (Some("yes"), _) => yes = true,
            (Some("follow"), _) => follow = true,
            (Some("mcp-config"), _) => mcp_configs.push(PathBuf::from(a.value()?)),
            (None, Tok::Value(v)) if sub != "list" && positional.is_none() => {
                positional = Some(v.clone());
            }
            (None, Tok::Long(l)) if l == "cwd" => {
                return Err(a.err(format!("option '--cwd' does not apply to 'zot ext {sub}'")));
            }
            _ => return Err(a.unexpected(&tok)),
        }
    }
    if sub == "install" && cwd.is_some() {
        return Err(a.err("option '--cwd' does not apply to 'zot ext install'"));
    }
    let what = if sub == "install" { "<path|git-url>" } else { "<name>" };
    let Some(positional) = positional.or_else(|| (sub == "list").then(OsString::new)) else {
        return Err(a.err(format!("missing {what}")));
    };
    // Names are checked at run time (validate_name), so a hostile one gets a
    // clear runtime error; a non-UTF-8 one is made lossy and fails there.
    let name = positional.to_string_lossy().into_owned();
    let cmd = match sub {
        "list" => ExtCommand::List { json, names },
        "install" => ExtCommand::Install { source: positional },
        "remove" => ExtCommand::Remove { name, yes },
        "enable" => ExtCommand::Enable { name },
        "disable" => ExtCommand::Disable { name },
        _ => ExtCommand::Logs { name, follow, mcp_configs },
    };
    Ok(Command::Ext { cwd, cmd })
}

/// `zot ext new <name> [--lang LANG] [--dir DIR]`.
fn parse_new(mut a: Args, spec: &Cmd) -> Result<Command, UsageError> {
    let mut name: Option<String> = None;
    let mut lang = "python".to_string();
    let mut dir = None;
    while let Some(tok) = a.next()? {
        if is_help(&tok) {
            return a.last(Command::Help(crate::scaffold::HELP.to_string()));
        }
        match (find(spec.flags, &tok).map(|f| f.long), &tok) {
            (Some("lang"), _) => lang = a.choice(&tok, &crate::scaffold::LANGS)?,
            (Some("dir"), _) => dir = Some(PathBuf::from(a.value()?)),
            // Checked at run time (validate_name), like every other name.
            (None, Tok::Value(v)) if name.is_none() => name = Some(v.to_string_lossy().into_owned()),
            _ => return Err(a.unexpected(&tok)),
        }
    }
    let Some(name) = name else { return Err(a.err("missing <name>")) };
    Ok(Command::ExtNew(crate::scaffold::NewOptions { name, lang, dir }))
}

/// `zot ext check <path> [--json] [--timeout SECS]`.
fn parse_check(mut a: Args, spec: &Cmd) -> Result<Command, UsageError> {
    let mut path = None;
    let mut json = false;
    let mut call_timeout = None;
    while let Some(tok) = a.next()? {
        if is_help(&tok) {
            return a.last(Command::Help(crate::check::HELP.to_string()));
        }
        match (find(spec.flags, &tok).map(|f| f.long), &tok) {
            (Some("json"), _) => json = true,
            (Some("timeout"), _) => call_timeout = Some(a.secs(&tok)?),
            (None, Tok::Value(v)) if path.is_none() => path = Some(PathBuf::from(v)),
            _ => return Err(a.unexpected(&tok)),
        }
    }
    let Some(path) = path else { return Err(a.err("missing <path>")) };
    Ok(Command::ExtCheck(crate::check::CheckOptions { path, json, call_timeout }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn p(args: &[&str]) -> Result<Command, UsageError> {
        parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn session_options_before_and_after_serve() {
        let Ok(Command::Serve(s)) =
            p(&["-e", "a", "serve", "--ext=b", "--tool-timeout", "0.5", "--fail-closed"])
        else {
            panic!("not serve");
        };
        assert_eq!(s.ext_paths, vec![PathBuf::from("a"), PathBuf::from("b")]);
        assert_eq!(s.tool_timeout, Some(Duration::from_millis(500)));
        assert!(s.fail_closed);
        assert!(matches!(p(&[]), Ok(Command::Session(_))));
    }

    #[test]
    fn errors() {
        let e = p(&["--bogus"]).unwrap_err();
        assert_eq!(e.to_string(), "zot: unexpected argument '--bogus' (see 'zot --help')");
        let e = p(&["ext", "install"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "zot ext install: missing <path|git-url> (see 'zot ext install --help')"
        );
        for bad in ["-1", "NaN", "inf", "x", "1e400"] {
            assert!(p(&["--hello-timeout", bad]).is_err(), "{bad}");
        }
        assert!(p(&["--model", "m", "ext", "list"]).is_err());
        assert!(matches!(
            p(&["--cwd", "d", "ext", "list", "--json"]),
            Ok(Command::Ext { cmd: ExtCommand::List { json: true, .. }, .. })
        ));
        assert!(p(&["ext", "remove", "a", "b"]).is_err());
        assert!(p(&["ext", "frob"]).is_err());
        assert!(p(&["--version", "extra"]).is_err());
        assert!(p(&["--help", "--bogus"]).is_err());
        assert!(p(&["--restart", "sometimes"]).is_err());
    }

    #[test]
    fn declared_options_of_other_commands() {
        let Ok(Command::Serve(s)) = p(&["serve", "--trust-project", "--restart", "on-failure", "--interactive-tools"])
        else {
            panic!("not serve");
        };
        assert!(s.trust_project && s.interactive_tools);
        assert_eq!(s.restart, Some(crate::manifest::RestartPolicy::OnFailure));
        assert!(matches!(
            p(&["ext", "--cwd", "d", "doctor"]),
            Ok(Command::ExtDoctor { json: false, session }) if session.cwd == Some(PathBuf::from("d"))
        ));
        assert!(matches!(
            p(&["--no-ext", "ext", "doctor", "--json", "-e", "x"]),
            Ok(Command::ExtDoctor { json: true, session }) if session.no_ext && session.ext_paths.len() == 1
        ));
        use crate::trust::TrustCommand as T;
        assert!(matches!(p(&["trust", "d"]), Ok(Command::Trust(T::Trust(Some(d)), None)) if d.ends_with("d")));
        assert_eq!(p(&["trust", "--list"]), Ok(Command::Trust(T::List, None)));
        assert_eq!(p(&["untrust"]), Ok(Command::Trust(T::Untrust(None), None)));
        assert!(p(&["trust", "--list", "d"]).is_err());
        assert_eq!(p(&["completions", "zsh"]), Ok(Command::Completions("zsh".into())));
        assert!(p(&["completions", "tcsh"]).is_err());
        assert!(p(&["--model", "m", "completions", "bash"]).is_err());
    }
}
