//! The man page (`zot man`, roff) and the shell completion scripts
//! (`zot completions bash|zsh|fish`), both made from the flag and command
//! tables of [`crate::cli`], so that they say what the parser accepts.
//!
//! The completion scripts find the command being typed the same way in
//! every shell: they walk the words before the cursor, skip every option
//! (and the value of one that takes a value), and take the first word as
//! the command (`zot` when there is none), and the word after `ext` as its
//! subcommand (`ext install`).

use super::flags::{Cmd, Flag, COMMANDS, SESSION_FLAGS, SHELLS};
use super::help::about;
use super::topics::{CONSOLE_ABOUT, FILES, KEYS};
use crate::VERSION;

/// How the positional argument of a command completes.
#[derive(Clone, Copy, PartialEq)]
enum Positional {
    None,
    Files,
    Dirs,
    Words(&'static [&'static str]),
    /// These words and file names (`--from`: a client or a FILE).
    WordsOrFiles(&'static [&'static str]),
    /// The names of extensions and servers, as `zot ext list --names`
    /// prints them when the completion is asked for.
    Names,
    /// The command words (`zot help WORD`).
    Commands,
}

/// What prints the names a `<name>` argument completes to.
const NAMES_CMD: &str = "zot ext list --names 2>/dev/null";

/// A command as the completion scripts name it: `zot`, `serve`, `ext list`.
fn key(c: &Cmd) -> &'static str {
    if c.name.is_empty() {
        "zot"
    } else {
        c.name
    }
}

/// The commands shown to users, the session first.
fn visible() -> impl Iterator<Item = &'static Cmd> {
    COMMANDS.iter().filter(|c| !c.usage.starts_with("--"))
}

fn positional(c: &Cmd) -> Positional {
    if c.name == "completions" {
        Positional::Words(&SHELLS)
    } else if c.usage.starts_with("<path") {
        Positional::Files
    } else if c.usage.starts_with("[DIR]") {
        Positional::Dirs
    } else if c.usage.starts_with("<name>") {
        Positional::Names
    } else if c.name == "help" {
        Positional::Commands
    } else {
        Positional::None
    }
}

/// Every flag of `c`, `--help` included (and `--version` at the top).
fn flags_of(c: &Cmd) -> Vec<Flag> {
    let mut v: Vec<Flag> = Vec::new();
    if c.session {
        v.extend(SESSION_FLAGS.iter().filter(|f| f.applies(c.name)));
    }
    v.extend(c.flags.iter().copied());
    let tail = &COMMANDS[COMMANDS.len() - 1].flags;
    if c.name.is_empty() {
        v.extend(tail.iter().copied());
    } else {
        v.push(tail[0]);
    }
    v
}

/// The words that may follow `c`: its subcommands (`zot mcp`'s are
/// `import`, `login`, `logout`).
fn subwords(c: &Cmd) -> Vec<&'static str> {
    if c.name.is_empty() {
        let mut v: Vec<&str> = Vec::new();
        for c in visible() {
            let first = c.name.split(' ').next().unwrap_or("");
            if !first.is_empty() && !v.contains(&first) {
                v.push(first);
            }
        }
        v
    } else {
        visible().filter_map(|d| d.name.strip_prefix(c.name).and_then(|r| r.strip_prefix(' '))).collect()
    }
}

/// The words that start a group of subcommands (`ext`, `mcp`), as a
/// shell pattern `ext|mcp`.
fn groups() -> Vec<&'static str> {
    let mut v: Vec<&str> = Vec::new();
    for c in visible() {
        if let Some((g, _)) = c.name.split_once(' ') {
            if !v.contains(&g) {
                v.push(g);
            }
        }
    }
    v
}

fn ext_subwords() -> Vec<&'static str> {
    visible().filter_map(|c| c.name.strip_prefix("ext ")).collect()
}

/// Every distinct flag of every command, with its value name.
fn all_flags() -> Vec<Flag> {
    let mut v: Vec<Flag> = Vec::new();
    for c in COMMANDS.iter() {
        for f in flags_of(c) {
            if !v.iter().any(|g| g.long == f.long && g.value == f.value) {
                v.push(f);
            }
        }
    }
    v
}

fn spellings(f: &Flag) -> Vec<String> {
    let mut v = vec![format!("--{}", f.long)];
    if let Some(c) = f.short {
        v.insert(0, format!("-{c}"));
    }
    v
}

/// The `-e|--ext|--cwd` pattern of the options that take a value.
fn valued_pattern() -> String {
    let mut v: Vec<String> = Vec::new();
    for f in all_flags().iter().filter(|f| f.value.is_some()) {
        for s in spellings(f) {
            if !v.contains(&s) {
                v.push(s);
            }
        }
    }
    v.join("|")
}

/// What a flag's value completes to.
fn value_kind(f: &Flag) -> Positional {
    match f.value {
        _ if !f.choices.is_empty() => Positional::Words(f.choices),
        Some("PATH") | Some("FILE") => Positional::Files,
        Some("SOURCE") => Positional::WordsOrFiles(&crate::mcpserver::import::CLIENTS),
        Some("DIR") => Positional::Dirs,
        _ => Positional::None,
    }
}

/// The script for `shell` (one of [`SHELLS`]).
pub fn completions(shell: &str) -> String {
    match shell {
        "zsh" => zsh(),
        "fish" => fish(),
        _ => bash(),
    }
}

fn sh_words(words: &[&str]) -> String {
    words.join(" ")
}

fn bash() -> String {
    let mut s = String::from(
        "# bash completion for zot; generated by `zot completions bash`.\n_zot() {\n    local cur prev cmd w i skip=0 words opts pos\n    cur=\"${COMP_WORDS[COMP_CWORD]}\"\n    prev=\"\"\n    [ \"$COMP_CWORD\" -gt 0 ] && prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n    COMPREPLY=()\n    case \"$prev\" in\n",
    );
    let mut by_kind: Vec<(Positional, Vec<String>)> = Vec::new();
    for f in all_flags().iter().filter(|f| f.value.is_some()) {
        let kind = value_kind(f);
        let names = spellings(f);
        match by_kind.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, v)) => {
                for n in names {
                    if !v.contains(&n) {
                        v.push(n);
                    }
                }
            }
            None => by_kind.push((kind, names)),
        }
    }
    for (kind, names) in &by_kind {
        let action = match kind {
            Positional::Files => "COMPREPLY=($(compgen -f -- \"$cur\")); return 0".to_string(),
            Positional::Dirs => "COMPREPLY=($(compgen -d -- \"$cur\")); return 0".to_string(),
            Positional::Words(w) => format!("COMPREPLY=($(compgen -W \"{}\" -- \"$cur\")); return 0", sh_words(w)),
            Positional::WordsOrFiles(w) => {
                format!("COMPREPLY=($(compgen -W \"{}\" -- \"$cur\") $(compgen -f -- \"$cur\")); return 0", sh_words(w))
            }
            _ => "return 0".to_string(),
        };
        s.push_str(&format!("        {}) {action};;\n", names.join("|")));
    }
    s.push_str(&format!(
        "    esac\n    cmd=zot\n    for ((i=1; i<COMP_CWORD; i++)); do\n        w=\"${{COMP_WORDS[i]}}\"\n        if [ \"$skip\" = 1 ]; then skip=0; continue; fi\n        case \"$w\" in\n            {}) skip=1;;\n            -*) ;;\n            *) if [ \"$cmd\" = zot ]; then cmd=\"$w\"; else case \"$cmd\" in {}) cmd=\"$cmd $w\";; esac; fi;;\n        esac\n    done\n    words=\"\"; opts=\"\"; pos=\"\"\n    case \"$cmd\" in\n",
        valued_pattern(),
        groups().join("|")
    ));
    for c in visible() {
        let opts: Vec<String> = flags_of(c).iter().flat_map(spellings).collect();
        let mut words = subwords(c);
        let mut names = false;
        let pos = match positional(c) {
            Positional::Files => "-f",
            Positional::Dirs => "-d",
            Positional::Words(w) => {
                words.extend(w.iter().copied());
                ""
            }
            Positional::WordsOrFiles(w) => {
                words.extend(w.iter().copied());
                "-f"
            }
            Positional::Commands => {
                words.extend(subwords(&COMMANDS[0]));
                ""
            }
            Positional::Names => {
                names = true;
                ""
            }
            Positional::None => "",
        };
        let words = if names { format!("$({NAMES_CMD})") } else { sh_words(&words) };
        s.push_str(&format!("        \"{}\") words=\"{words}\"; opts=\"{}\"; pos=\"{pos}\";;\n", key(c), opts.join(" ")));
    }
    s.push_str(&format!(
        "        ext) words=\"{}\"; opts=\"--cwd --help -h\";;\n    esac\n",
        sh_words(&ext_subwords())
    ));
    s.push_str(
        "    if [[ \"$cur\" == -* ]]; then\n        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n    else\n        COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n        if [ -n \"$pos\" ]; then COMPREPLY+=($(compgen \"$pos\" -- \"$cur\")); fi\n    fi\n    return 0\n}\ncomplete -F _zot zot\n",
    );
    s
}

fn zsh() -> String {
    let mut s = String::from(
        "#compdef zot\n# zsh completion for zot; generated by `zot completions zsh`.\n_zot() {\n  local cmd=zot w i skip=0 pos=\"\"\n  local cur=\"${words[CURRENT]}\" prev=\"${words[CURRENT-1]}\"\n  local -a subs opts\n  case \"$prev\" in\n",
    );
    for f in all_flags().iter().filter(|f| f.value.is_some()) {
        let action = match value_kind(f) {
            Positional::Files => "_files".to_string(),
            Positional::Dirs => "_files -/".to_string(),
            Positional::Words(w) => format!("compadd -- {}", sh_words(w)),
            Positional::WordsOrFiles(w) => format!("compadd -- {}; _files", sh_words(w)),
            _ => "_message 'value'".to_string(),
        };
        s.push_str(&format!("    ({}) {action}; return;;\n", spellings(f).join("|")));
    }
    s.push_str(&format!(
        "  esac\n  for ((i=2; i<CURRENT; i++)); do\n    w=\"${{words[i]}}\"\n    if (( skip )); then skip=0; continue; fi\n    case \"$w\" in\n      ({}) skip=1;;\n      (-*) ;;\n      (*) if [[ $cmd == zot ]]; then cmd=\"$w\"; elif [[ $cmd == ({}) ]]; then cmd=\"$cmd $w\"; fi;;\n    esac\n  done\n  case \"$cmd\" in\n",
        valued_pattern(),
        groups().join("|")
    ));
    for c in visible() {
        let mut subs: Vec<String> = Vec::new();
        for w in subwords(c) {
            let full = if c.name.is_empty() { w.to_string() } else { format!("{} {w}", c.name) };
            let summary = COMMANDS.iter().find(|d| d.name == full).map(|d| d.summary).unwrap_or("manage extensions");
            subs.push(format!("'{w}:{}'", summary.replace('\'', "")));
        }
        let opts: Vec<String> = flags_of(c).iter().flat_map(spellings).collect();
        let pos = match positional(c) {
            Positional::Files => "\"_files\"".to_string(),
            Positional::Dirs => "\"_files -/\"".to_string(),
            Positional::Words(w) => format!("\"compadd -- {}\"", sh_words(w)),
            Positional::WordsOrFiles(w) => format!("\"compadd -- {}; _files\"", sh_words(w)),
            Positional::Commands => format!("\"compadd -- {}\"", sh_words(&subwords(&COMMANDS[0]))),
            // Run when the completion is asked for, one name a line.
            Positional::Names => format!("'compadd -- ${{(f)\"$({NAMES_CMD})\"}}'"),
            Positional::None => "\"\"".to_string(),
        };
        s.push_str(&format!(
            "    (\"{}\") subs=({}); opts=({}); pos={pos};;\n",
            key(c),
            subs.join(" "),
            opts.join(" ")
        ));
    }
    let ext_subs: Vec<String> = visible()
        .filter_map(|c| c.name.strip_prefix("ext ").map(|w| format!("'{w}:{}'", c.summary.replace('\'', ""))))
        .collect();
    s.push_str(&format!("    (ext) subs=({}); opts=(--cwd --help -h);;\n  esac\n", ext_subs.join(" ")));
    s.push_str(
        "  if [[ $cur == -* ]]; then\n    compadd -- \"${opts[@]}\"\n  else\n    (( ${#subs} )) && _describe 'command' subs\n    [[ -n $pos ]] && eval \"$pos\"\n  fi\n}\n_zot \"$@\"\n",
    );
    s
}

fn fish_quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

fn fish() -> String {
    let mut s = String::from(
        "# fish completion for zot; generated by `zot completions fish`.\nfunction __zot_cmd\n    set -l cmd zot\n    set -l skip 0\n    for w in (commandline -opc)[2..-1]\n        if test $skip = 1\n            set skip 0\n            continue\n        end\n        switch $w\n",
    );
    let valued: Vec<String> = valued_pattern().split('|').map(fish_quote).collect();
    s.push_str(&format!(
        "            case {}\n                set skip 1\n            case '-*'\n            case '*'\n                if test $cmd = zot\n                    set cmd $w\n                else if contains -- $cmd {}\n                    set cmd \"$cmd $w\"\n                end\n        end\n    end\n    echo $cmd\nend\n\nfunction __zot_is\n    contains -- (__zot_cmd) $argv\nend\n\ncomplete -c zot -f\n",
        valued.join(" "),
        groups().join(" ")
    ));
    for c in visible() {
        if c.name.is_empty() {
            for w in subwords(c) {
                let summary = COMMANDS.iter().find(|d| d.name == w).map(|d| d.summary).unwrap_or("manage extensions");
                s.push_str(&format!("complete -c zot -n '__zot_is zot' -a {w} -d {}\n", fish_quote(summary)));
            }
        }
        if let Some((group, sub)) = c.name.split_once(' ') {
            s.push_str(&format!("complete -c zot -n '__zot_is {group}' -a {sub} -d {}\n", fish_quote(c.summary)));
        }
        let cond = format!("-n {}", fish_quote(&format!("__zot_is '{}'", key(c))));
        for f in flags_of(c) {
            let mut line = format!("complete -c zot {cond} -l {}", f.long);
            if let Some(ch) = f.short {
                line.push_str(&format!(" -s {ch}"));
            }
            match (f.value, value_kind(&f)) {
                (None, _) => {}
                (Some(_), Positional::Files) => line.push_str(" -r -F"),
                (Some(_), Positional::Dirs) => line.push_str(" -x -a '(__fish_complete_directories)'"),
                (Some(_), Positional::Words(w)) => line.push_str(&format!(" -x -a {}", fish_quote(&sh_words(w)))),
                (Some(_), Positional::WordsOrFiles(w)) => line.push_str(&format!(" -r -F -a {}", fish_quote(&sh_words(w)))),
                (Some(_), _) => line.push_str(" -x"),
            }
            line.push_str(&format!(" -d {}\n", fish_quote(&f.full_help())));
            s.push_str(&line);
        }
        match positional(c) {
            Positional::Files => s.push_str(&format!("complete -c zot {cond} -F\n")),
            Positional::Dirs => s.push_str(&format!("complete -c zot {cond} -a '(__fish_complete_directories)'\n")),
            Positional::Words(w) => s.push_str(&format!("complete -c zot {cond} -a {}\n", fish_quote(&sh_words(w)))),
            Positional::WordsOrFiles(w) => s.push_str(&format!("complete -c zot {cond} -F -a {}\n", fish_quote(&sh_words(w)))),
            Positional::Commands => s.push_str(&format!("complete -c zot {cond} -a {}\n", fish_quote(&sh_words(&subwords(&COMMANDS[0]))))),
            Positional::Names => s.push_str(&format!("complete -c zot {cond} -a {}\n", fish_quote(&format!("({NAMES_CMD})")))),
            Positional::None => {}
        }
    }
    s.push_str("complete -c zot -n '__zot_is ext' -l cwd -x -a '(__fish_complete_directories)' -d 'the project directory'\n");
    s
}

// ---------------------------------------------------------------------------
// The man page

/// Text escaped for roff: backslashes, hyphens, and a leading `.` or `'`.
fn roff(text: &str) -> String {
    let t = text.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t
    }
}

/// Paragraphs of an about text: indented lines kept as they are.
fn roff_text(text: &str) -> String {
    let mut out = String::new();
    for para in text.split("\n\n").filter(|p| !p.trim().is_empty()) {
        out.push_str(".PP\n");
        let mut verbatim = false;
        for line in para.lines() {
            let indented = line.starts_with("  ");
            if indented && !verbatim {
                out.push_str(".nf\n");
                verbatim = true;
            } else if !indented && verbatim {
                out.push_str(".fi\n");
                verbatim = false;
            }
            out.push_str(&roff(if indented { line } else { line.trim() }));
            out.push('\n');
        }
        if verbatim {
            out.push_str(".fi\n");
        }
    }
    out
}

fn roff_flag(f: &Flag) -> String {
    let mut head: Vec<String> = Vec::new();
    if let Some(c) = f.short {
        head.push(format!("\\fB\\-{c}\\fR"));
    }
    let mut long = format!("\\fB\\-\\-{}\\fR", roff(f.long));
    if let Some(v) = f.value {
        long.push_str(&format!(" \\fI{}\\fR", roff(v)));
    }
    head.push(long);
    format!(".TP\n{}\n{}\n", head.join(", "), roff(&f.full_help()))
}

/// `zot man`: zot(1) in roff, from the same tables and texts as `--help`.
pub fn man_page() -> String {
    let mut s = format!(
        ".\\\" zot(1), generated by `zot man` from the command-line tables.\n.TH ZOT 1 \"\" \"zot {}\" \"User Commands\"\n.SH NAME\nzot \\- a host for zot extensions\n.SH SYNOPSIS\n.nf\n",
        roff(VERSION)
    );
    for c in COMMANDS.iter() {
        let words = if c.name.is_empty() { String::new() } else { format!(" {}", c.name) };
        s.push_str(&format!("\\fBzot{}\\fR {}\n", roff(&words), roff(c.usage)).replace(" \n", "\n"));
    }
    s.push_str(".fi\n.SH DESCRIPTION\n");
    s.push_str(&roff_text(
        "zot runs extensions: programs in any language that speak newline-delimited JSON on their stdin and stdout, registering commands, tools, event subscriptions and interceptors. Without a command it is an interactive session; zot serve offers the host to an agent as JSON lines on stdio, and zot mcp as an MCP server. Extensions are found in the project directory's .zot/extensions, in $ZOT_HOME/extensions, and in every --ext PATH given.",
    ));
    s.push_str(".SH OPTIONS\nThe options of \\fBzot\\fR, \\fBzot serve\\fR, \\fBzot mcp\\fR and \\fBzot ext doctor\\fR; they may come before or after the command word. SECS accepts fractions (0.5).\n");
    for f in &SESSION_FLAGS {
        s.push_str(&roff_flag(f));
    }
    for f in COMMANDS[COMMANDS.len() - 1].flags {
        s.push_str(&roff_flag(f));
    }
    s.push_str(".SH COMMANDS\n");
    for c in visible().filter(|c| !c.name.is_empty()) {
        s.push_str(&format!(".SS \"zot {} {}\"\n{}.\n", roff(c.name), roff(c.usage), roff(c.summary)));
        let text = match c.name {
            "ext new" => crate::scaffold::HELP.to_string(),
            "ext check" => crate::check::HELP.to_string(),
            "ext doctor" => crate::doctor::HELP.to_string(),
            _ => about(c.name).to_string(),
        };
        // The usage line of a built-in help is the heading already.
        let text = if text.starts_with("Usage:") { text.split_once("\n\n").map(|(_, r)| r.to_string()).unwrap_or_default() } else { text };
        let body = text.split("\nOptions:\n").next().unwrap_or("");
        s.push_str(&roff_text(body));
        // A flag the text itself describes (doctor's --json) is not listed again.
        let flags: Vec<&Flag> = c.flags.iter().filter(|f| !body.contains(&format!("\n  --{} ", f.long))).collect();
        if !flags.is_empty() {
            s.push_str(".RS\n");
            for f in flags {
                s.push_str(&roff_flag(f));
            }
            s.push_str(".RE\n");
        }
        if c.session {
            s.push_str(".PP\nTakes the options above.\n");
        }
    }
    s.push_str(
        ".SH ENVIRONMENT\n.TP\n.B ZOT_HOME\nwhere installed extensions, logs, history and trusted projects live (default: $XDG_STATE_HOME/zot, else ~/.local/state/zot).\n.TP\n.B ZOT_TRACE\na trace file when \\fB\\-\\-trace\\fR is not given: one JSON line per frame.\n.TP\n.B NO_COLOR\nno colour in the interactive session.\n",
    );
    s.push_str(".SH CONSOLE\n");
    s.push_str(&roff_text(CONSOLE_ABOUT));
    s.push_str(".SS Commands\n");
    for (name, what) in crate::console::BUILTINS {
        s.push_str(&format!(".TP\n.B /{}\n{}\n", roff(name), roff(what)));
    }
    s.push_str(".SS \"Keys on a terminal\"\n");
    for (keys, what) in KEYS {
        s.push_str(&format!(".TP\n.B {}\n{}\n", roff(keys), roff(what)));
    }
    s.push_str(".SH FILES\n");
    for (path, what) in FILES {
        s.push_str(&format!(".TP\n.I {}\n{}.\n", roff(path), roff(what)));
    }
    s.push_str(".SH EXIT STATUS\n0 on success, 1 on a runtime error (one line \\fBzot: <message>\\fR on stderr), 2 on a usage error, 128+N when ended by signal N.\n");
    s.push_str(".SH SEE ALSO\nRun \\fBzot <command> \\-\\-help\\fR for the same texts.\n");
    s
}
