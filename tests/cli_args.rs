//! The `zot` binary's argument handling: help and version texts, usage
//! errors (one stderr line, exit 2), bad `SECS` values and a bad `--cwd`.
//! Every run gets a fresh `ZOT_HOME` and working directory.

use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_zot");

mod common;
use common::{Out, TempDir};

fn zot(args: &[&str]) -> Out {
    let home = TempDir::new("home");
    let cwd = TempDir::new("cwd");
    let out: Output = Command::new(BIN)
        .args(args)
        .env("ZOT_HOME", home.path())
        .env_remove("XDG_STATE_HOME")
        .current_dir(cwd.path())
        .stdin(Stdio::null())
        .output()
        .expect("run zot");
    Out::of(out)
}

/// A usage error: exit 2, nothing on stdout, exactly one line on stderr.
fn usage_error(args: &[&str]) -> String {
    let r = zot(args);
    assert_eq!(r.code, 2, "{args:?}: stderr {:?}", r.stderr);
    assert_eq!(r.stdout, "", "{args:?}");
    assert_eq!(r.stderr.lines().count(), 1, "{args:?}: {:?}", r.stderr);
    assert!(r.stderr.ends_with('\n'));
    r.stderr.trim_end().to_string()
}

#[test]
fn top_level_help() {
    for flag in ["--help", "-h"] {
        let r = zot(&[flag]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(r.stderr, "");
        for needle in [
            "Usage:",
            "zot serve [OPTIONS]",
            "zot ext install <path|git-url>",
            "zot ext remove <name> [-y|--yes]",
            "zot ext logs <name> [-f|--follow]",
            "--ext PATH",
            "--intercept-timeout SECS",
            "--fail-closed",
            "--version",
        ] {
            assert!(r.stdout.contains(needle), "{flag}: missing {needle:?} in\n{}", r.stdout);
        }
    }
}

#[test]
fn version() {
    for flag in ["--version", "-V"] {
        let r = zot(&[flag]);
        assert_eq!(r.code, 0);
        assert_eq!(r.stdout, format!("zot {}\n", env!("CARGO_PKG_VERSION")));
        assert_eq!(r.stderr, "");
    }
}

#[test]
fn subcommand_help() {
    let cases: &[(&[&str], &str)] = &[
        (&["serve", "--help"], "Usage: zot serve [OPTIONS]"),
        (&["--no-ext", "serve", "-h"], "Usage: zot serve [OPTIONS]"),
        (&["ext", "--help"], "Usage: zot ext <command>"),
        (&["ext", "-h"], "Usage: zot ext <command>"),
        (&["ext", "list", "--help"], "Usage: zot ext list [--json]"),
        (&["ext", "install", "--help"], "Usage: zot ext install <path|git-url>"),
        (&["ext", "install", "-h"], "Usage: zot ext install <path|git-url>"),
        (&["ext", "remove", "--help"], "Usage: zot ext remove <name> [-y|--yes]"),
        (&["ext", "enable", "--help"], "Usage: zot ext enable <name>"),
        (&["ext", "disable", "--help"], "Usage: zot ext disable <name>"),
        (&["ext", "logs", "--help"], "Usage: zot ext logs <name> [-f|--follow]"),
    ];
    for (args, start) in cases {
        let r = zot(args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        assert!(r.stdout.starts_with(start), "{args:?}:\n{}", r.stdout);
        assert_eq!(r.stderr, "", "{args:?}");
    }
    // The serve help lists the shared options too.
    assert!(zot(&["serve", "--help"]).stdout.contains("--tool-timeout SECS"));
}

/// `zot serve --help` names every method of the host protocol (docs/protocol.md
/// §4's method table), so a user reading it finds `cancel` and `restart` too.
#[test]
fn serve_help_names_every_method() {
    let help = zot(&["serve", "--help"]).stdout;
    let start = help.find("methods:").expect("a methods list");
    let end = start + help[start..].find('.').expect("the list ends with a period");
    let listed: Vec<&str> = help[start + "methods:".len()..end].split(',').map(str::trim).collect();
    let methods = [
        "ping", "list", "command", "tool", "intercept", "agent_tools", "call_tool_result", "event", "panel_key",
        "panel_close", "cancel", "reload", "restart", "shutdown",
    ];
    for m in methods {
        assert!(listed.contains(&m), "serve --help does not name method {m}: {listed:?}");
    }
}

#[test]
fn unknown_flags_and_arguments() {
    assert_eq!(usage_error(&["--bogus"]), "zot: unexpected argument '--bogus' (see 'zot --help')");
    assert_eq!(usage_error(&["-x"]), "zot: unexpected argument '-x' (see 'zot --help')");
    assert_eq!(
        usage_error(&["frobnicate"]),
        "zot: unknown command 'frobnicate' (see 'zot --help')"
    );
    assert_eq!(
        usage_error(&["serve", "--bogus"]),
        "zot serve: unexpected argument '--bogus' (see 'zot serve --help')"
    );
    assert_eq!(
        usage_error(&["ext", "list", "--bogus"]),
        "zot ext list: unexpected argument '--bogus' (see 'zot ext list --help')"
    );
    assert_eq!(
        usage_error(&["ext", "frob"]),
        "zot ext: unknown subcommand 'frob' (see 'zot ext --help')"
    );
    assert!(usage_error(&["ext", "remove", "a", "b"]).contains("unexpected argument 'b'"));
    assert!(usage_error(&["ext", "list", "extra"]).contains("unexpected argument 'extra'"));
    assert!(usage_error(&["ext", "enable", "-y", "a"]).contains("'-y'"));
    assert!(usage_error(&["--no-ext=yes"]).contains("'--no-ext'"));
    // Session options make no sense for `zot ext`.
    assert!(usage_error(&["--model", "m", "ext", "list"]).contains("'--model'"));
    // Nothing may follow --help or --version.
    assert_eq!(usage_error(&["--version", "extra"]), "zot: unexpected argument 'extra' (see 'zot --help')");
    assert_eq!(usage_error(&["--help", "--bogus"]), "zot: unexpected argument '--bogus' (see 'zot --help')");
    assert!(usage_error(&["serve", "--help", "x"]).contains("'x'"));
    assert!(usage_error(&["ext", "list", "-h", "-y"]).contains("'-y'"));
    // A typo of a known option names it, as a typo of a subcommand does.
    assert_eq!(
        usage_error(&["--tool-timout", "5"]),
        "zot: unexpected argument '--tool-timout'; did you mean '--tool-timeout'? (see 'zot --help')"
    );
    assert_eq!(
        usage_error(&["serve", "--confnie", "off"]),
        "zot serve: unexpected argument '--confnie'; did you mean '--confine'? (see 'zot serve --help')"
    );
    assert!(usage_error(&["ext", "list", "--jsno"]).ends_with("did you mean '--json'? (see 'zot ext list --help')"));
    // A hostile argument does not reach the terminal.
    let e = usage_error(&["--\x1b]0;evil\x07"]);
    assert!(!e.contains('\x1b') && !e.contains('\x07'), "{e:?}");
}

#[test]
fn missing_arguments() {
    assert_eq!(
        usage_error(&["ext", "install"]),
        "zot ext install: missing <path|git-url> (see 'zot ext install --help')"
    );
    for sub in ["remove", "enable", "disable", "logs"] {
        assert_eq!(
            usage_error(&["ext", sub]),
            format!("zot ext {sub}: missing <name> (see 'zot ext {sub} --help')")
        );
    }
    assert!(usage_error(&["ext"]).starts_with("zot ext: missing subcommand"));
    assert_eq!(usage_error(&["--cwd"]), "zot: missing value for '--cwd' (see 'zot --help')");
    assert!(usage_error(&["serve", "-e"]).contains("missing value for '-e'"));
    assert!(usage_error(&["--model"]).contains("'--model'"));
}

#[test]
fn bad_seconds() {
    for opt in [
        "--hello-timeout",
        "--ready-grace",
        "--command-timeout",
        "--tool-timeout",
        "--intercept-timeout",
    ] {
        // docs/protocol.md §3 rule 6: positive, at most a day; absurd values
        // are refused before anything runs.
        for bad in ["abc", "-1", "NaN", "inf", "-inf", "1e400", "", "0", "0.0", "86400.5", "1e19"] {
            let e = usage_error(&["serve", opt, bad]);
            assert!(e.contains(&format!("invalid value '{bad}' for '{opt}'")), "{opt} {bad}: {e}");
        }
    }
    // Fractions and a day are fine (`--help` stops before anything runs).
    for ok in ["0.5", "2", ".25", "10.0", "86400"] {
        let r = zot(&["--hello-timeout", ok, "serve", "--tool-timeout", ok, "--help"]);
        assert_eq!(r.code, 0, "{ok}: {}", r.stderr);
    }
}

#[test]
fn new_refuses_a_name_that_reads_as_an_option() {
    let r = zot(&["ext", "new", "--", "-dash"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(r.stdout, "");
    assert_eq!(r.stderr, "zot: invalid extension name \"-dash\": must not start with '-'\n");
}

#[test]
fn declared_options_parse() {
    // Their behaviour is elsewhere; the parser, help and completions know them.
    for args in [
        &["--trust-project", "--restart", "always", "--interactive-tools", "serve", "--help"][..],
        &["ext", "doctor", "--help"],
        &["trust", "--help"],
        &["untrust", "--help"],
        &["completions", "--help"],
    ] {
        let r = zot(args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
    }
    let e = usage_error(&["--restart", "sometimes"]);
    assert!(e.contains("expected never, on-failure or always"), "{e}");
    assert!(zot(&["--help"]).stdout.contains("--restart POLICY"));
    assert!(usage_error(&["completions", "tcsh"]).contains("unknown shell 'tcsh'"));
}

#[test]
fn bad_cwd() {
    let tmp = TempDir::new("cwdcheck");
    let missing = tmp.path().join("missing");
    let missing = missing.to_str().expect("utf-8 temp path");
    for args in [
        vec!["--cwd", missing],
        vec!["serve", "--cwd", missing],
        vec!["ext", "list", "--cwd", missing],
        vec!["--cwd", missing, "ext", "list"],
    ] {
        let r = zot(&args);
        assert_eq!(r.code, 1, "{args:?}: {}", r.stderr);
        assert_eq!(r.stderr, format!("zot: --cwd {missing}: no such directory\n"), "{args:?}");
        assert_eq!(r.stdout, "");
    }
    let file = tmp.path().join("file");
    std::fs::write(&file, "x").expect("write");
    let file = file.to_str().expect("utf-8 temp path");
    let r = zot(&["serve", "--cwd", file]);
    assert_eq!(r.code, 1);
    assert_eq!(r.stderr, format!("zot: --cwd {file}: not a directory\n"));
    // `--cwd` means nothing to install.
    assert!(usage_error(&["ext", "install", "x", "--cwd", "."]).contains("'--cwd'"));
}

#[test]
fn mcp_help_names_its_subcommands_what_it_offers_and_both_revisions() {
    let r = zot(&["mcp", "--help"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let text = r.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    for want in ["zot mcp import", "zot mcp login", "zot mcp logout", "MCP servers it hosts", "resources", "2025-11-25", "2026-07-28"] {
        assert!(text.contains(want), "zot mcp --help lacks {want:?}: {}", r.stdout);
    }
}

#[test]
fn help_of_a_subcommand_named_alone_is_its_group_s() {
    for sub in ["import", "login", "logout"] {
        let r = zot(&["help", sub]);
        assert_eq!((r.code, r.stderr.as_str()), (0, ""), "zot help {sub}");
        // Each run has its own ZOT_HOME, which the environment part names.
        let before_env = |t: &str| t.split("\nEnvironment:").next().unwrap_or("").to_string();
        assert_eq!(before_env(&r.stdout), before_env(&zot(&["mcp", sub, "--help"]).stdout), "zot help {sub}");
        assert!(r.stdout.starts_with(&format!("Usage: zot mcp {sub} ")), "{}", r.stdout);
    }
    assert_eq!(zot(&["help", "install"]).stdout, zot(&["ext", "install", "--help"]).stdout);
    assert_eq!(usage_error(&["help", "imprt"]), "zot help: unknown command 'imprt'; did you mean 'zot help mcp import'? (see 'zot help --help')");
    assert_eq!(usage_error(&["help", "sevre"]), "zot help: unknown command 'sevre'; did you mean 'serve'? (see 'zot help --help')");
    // `zot man`, which the README names, is one of the commands zot help lists.
    let top = zot(&["help"]).stdout;
    assert!(top.lines().any(|l| l.starts_with("  zot man ")), "{top}");
    assert!(zot(&["man"]).stdout.starts_with(".\\\""));
}
