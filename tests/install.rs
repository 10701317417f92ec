//! `make install` and `make uninstall` into a temporary `DESTDIR` with the
//! debug binary, the man page and completion scripts they write (checked
//! against the flag table the parser uses), and the total line `make test`
//! prints.

mod common;

use common::TempDir;
use std::path::Path;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_zot");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

const FILES: [&str; 5] = [
    "usr/bin/zot",
    "usr/share/man/man1/zot.1",
    "usr/share/bash-completion/completions/zot",
    "usr/share/zsh/site-functions/_zot",
    "usr/share/fish/vendor_completions.d/zot.fish",
];

fn make(dest: &Path, target: &str) {
    let out = Command::new("make")
        .args(["-s", "-C", ROOT, target])
        .arg(format!("DESTDIR={}", dest.display()))
        .args(["PREFIX=/usr", "INSTALL_DEPS="])
        .arg(format!("ZOT_BIN={BIN}"))
        .stdin(Stdio::null())
        .output()
        .expect("run make");
    assert!(out.status.success(), "make {target}: {}", String::from_utf8_lossy(&out.stderr));
}

fn zot(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().expect("run zot");
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn make_install_and_uninstall_into_destdir() {
    let t = TempDir::new("install");
    make(t.path(), "install");
    for f in FILES {
        let p = t.path().join(f);
        let len = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
        assert!(len > 0, "{f} missing or empty");
    }
    let read = |f: &str| std::fs::read_to_string(t.path().join(f)).expect("read");
    assert_eq!(read(FILES[1]), zot(&["man"]));
    assert_eq!(read(FILES[2]), zot(&["completions", "bash"]));
    assert_eq!(read(FILES[3]), zot(&["completions", "zsh"]));
    assert_eq!(read(FILES[4]), zot(&["completions", "fish"]));
    let status = Command::new("bash").arg("-n").arg(t.path().join(FILES[2])).status().expect("bash -n");
    assert!(status.success(), "bash -n refuses the bash completion");
    let installed = Command::new(t.path().join(FILES[0])).arg("--version").output().expect("run installed zot");
    assert_eq!(String::from_utf8_lossy(&installed.stdout), format!("zot {}\n", env!("CARGO_PKG_VERSION")));

    make(t.path(), "uninstall");
    for f in FILES {
        assert!(!t.path().join(f).exists(), "{f} left after uninstall");
    }
}

#[test]
fn man_page_and_completions_know_every_option() {
    let man = zot(&["man"]);
    assert!(man.starts_with(".\\\""), "{man}");
    assert!(man.contains(".TH ZOT 1"));
    let bash = zot(&["completions", "bash"]);
    let zsh = zot(&["completions", "zsh"]);
    let fish = zot(&["completions", "fish"]);
    assert!(zsh.starts_with("#compdef zot\n"));
    // The options and commands as `--help` shows them: both come from the
    // one table, as the man page and the completions do.
    let serve_help = zot(&["serve", "--help"]);
    let longs: Vec<String> = serve_help
        .split_whitespace()
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| w.trim_start_matches("--").trim_end_matches(|c: char| !c.is_ascii_alphanumeric()).to_string())
        .filter(|w| w != "help")
        .collect();
    assert!(longs.iter().any(|l| l == "interactive-tools") && longs.len() >= 14, "{longs:?}");
    for long in &longs {
        let roff = format!("\\fB\\-\\-{}\\fR", long.replace('-', "\\-"));
        assert!(man.contains(&roff), "man page lacks --{long}");
        assert!(bash.contains(&format!("--{long}")), "bash lacks --{long}");
        assert!(zsh.contains(&format!("--{long}")), "zsh lacks --{long}");
        assert!(fish.contains(&format!("-l {long}")), "fish lacks --{long}");
    }
    let top = zot(&["--help"]);
    let commands: Vec<String> = top
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("zot "))
        .map(|rest| rest.split_whitespace().take_while(|w| !w.starts_with('-') && w.chars().all(|c| c.is_ascii_lowercase() || c == '-')).collect::<Vec<_>>().join(" "))
        .filter(|c| !c.is_empty())
        .collect();
    assert!(commands.iter().any(|c| c == "ext doctor") && commands.iter().any(|c| c == "completions"), "{commands:?}");
    for c in &commands {
        assert!(man.contains(&format!(".SS \"zot {}", c.replace('-', "\\-"))), "man page lacks zot {c}");
        let last = c.rsplit(' ').next().unwrap_or("");
        for script in [&bash, &zsh, &fish] {
            assert!(script.contains(last), "a completion script lacks {c}");
        }
    }
    // Every flag of every help text is in the man page too.
    let help = zot(&["--help"]);
    for word in help.split_whitespace().filter(|w| w.starts_with("--")) {
        let w = word.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
        assert!(man.contains(&w.replace('-', "\\-")), "man page lacks {w}");
    }
}

/// The bash completion, run: what it offers after `zot ext ` and for
/// `--restart`.
#[test]
fn bash_completion_offers_subcommands_and_choices() {
    let script = zot(&["completions", "bash"]);
    let t = TempDir::new("bash-complete");
    let file = t.path().join("zot.bash");
    std::fs::write(&file, script).expect("write");
    let probe = format!(
        "source {}\nc() {{ COMP_WORDS=(\"$@\"); COMP_CWORD=$((${{#COMP_WORDS[@]}}-1)); _zot; echo \"${{COMPREPLY[*]}}\"; }}\nc zot ext ''\nc zot -e x serve --restart ''\nc zot --no-ext --tr\nc zot completions ''\nc zot mcp import --from c\nc zot mcp import --from zot.\nc zot mcp ''\n",
        file.display()
    );
    // In the folder of zot.bash: the one file --from may offer.
    let out = Command::new("bash").arg("-c").arg(probe).current_dir(t.path()).output().expect("bash");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 7, "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(lines[0], "list install remove enable disable logs new check doctor");
    assert_eq!(lines[1], "never on-failure always");
    assert_eq!(lines[2], "--trust-project --trace");
    assert_eq!(lines[3], "bash zsh fish");
    // `zot mcp import --from`: the clients it knows, or a file.
    assert_eq!(lines[4], "claude-desktop claude-code cursor");
    assert_eq!(lines[5], "zot.bash");
    assert_eq!(lines[6], "import login logout");
}

#[test]
fn test_summary_adds_one_total_line() {
    let input = "running 2 tests\ntest result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out\n\
                 test result: FAILED. 4 passed; 3 failed; 0 ignored; 0 measured; 0 filtered out\n";
    let mut child = Command::new("awk")
        .args(["-f", &format!("{ROOT}/.ci/test-summary.awk")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("awk");
    use std::io::Write;
    child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("write");
    let out = child.wait_with_output().expect("awk output");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text, format!("{input}6 passed, 3 failed, 1 skipped\n"));
}

/// `make test`'s run (.ci/test-total) on a small cargo project of its own:
/// one test passes, one fails, one is ignored and two skip through the
/// suite's own helper (tests/common/skip.rs), one of them with everything
/// it writes to stderr thrown away, as a harness that captured it would.
/// The total line counts each once where it belongs, and the exit status
/// is cargo's.
#[test]
fn test_total_counts_a_skipped_test_as_skipped() {
    let t = TempDir::new("test-total");
    std::fs::create_dir_all(t.path().join("tests")).expect("tests/");
    std::fs::write(t.path().join("Cargo.toml"), "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n")
        .expect("Cargo.toml");
    let helper = format!("#[path = \"{ROOT}/tests/common/skip.rs\"]\nmod skip;\n");
    std::fs::write(
        t.path().join("tests/t.rs"),
        format!(
            r#"{helper}
#[test] fn passes() {{}}
#[test] fn fails() {{ panic!("on purpose") }}
#[test] #[ignore] fn ignored() {{}}
#[test] fn skips() {{ skip::skip("no such tool here") }}
"#
        ),
    )
    .expect("t.rs");
    // In a binary of its own: its stderr goes nowhere from the start.
    std::fs::write(
        t.path().join("tests/unheard.rs"),
        format!(
            r#"{helper}
extern "C" {{ fn dup2(from: i32, to: i32) -> i32; }}
#[test] fn skips_unheard() {{
    use std::os::fd::AsRawFd;
    let null = std::fs::File::options().write(true).open("/dev/null").unwrap();
    assert_eq!(unsafe {{ dup2(null.as_raw_fd(), 2) }}, 2);
    skip::skip("nobody sees this line");
}}
"#
        ),
    )
    .expect("unheard.rs");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(format!("{ROOT}/.ci/test-total"))
        .current_dir(t.path())
        .env("CARGO", cargo)
        .env("CARGO_TARGET_DIR", t.path().join("target"))
        .env_remove("ZOT_TEST_SKIPS")
        .stdin(Stdio::null())
        .output()
        .expect("run .ci/test-total");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().last(), Some("1 passed, 1 failed, 3 skipped"), "{text}");
    assert!(text.contains("SKIP: no such tool here"), "{text}");
    assert!(!text.contains("nobody sees this line"), "{text}");
    // Each block of results follows the name of its test file.
    let (t_at, unheard_at) = (text.find("Running tests/t.rs"), text.find("Running tests/unheard.rs"));
    assert!(t_at.is_some() && unheard_at.is_some(), "{text}");
    assert_eq!(out.status.code(), Some(101), "{text}");
}

fn on_path(prog: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|d| d.join(prog).is_file())
}

/// The zsh script, parsed by zsh and run with zsh's completion builtins
/// replaced by ones that print what they are offered.
#[test]
fn zsh_completion_parses_and_offers_subcommands_and_choices() {
    if !on_path("zsh") {
        common::skip("the zsh completion test: zsh is not on PATH");
        return;
    }
    let t = TempDir::new("zsh-complete");
    let file = t.path().join("_zot");
    std::fs::write(&file, zot(&["completions", "zsh"])).expect("write");
    assert!(Command::new("zsh").arg("-n").arg(&file).status().expect("zsh -n").success(), "zsh -n refuses _zot");
    let probe = format!(
        "compadd() {{ [[ $1 == -- ]] && shift; print -r -- \"$*\" }}\n\
         _describe() {{ print -r -- \"${{(j: :)${{(@)${{(P)2}}%%:*}}}}\" }}\n\
         _files() {{ print -r -- \"FILES $*\" }}\n\
         _message() {{ print -r -- MSG }}\n\
         words=(zot); CURRENT=1\n\
         source {} >/dev/null\n\
         t() {{ words=(\"$@\"); CURRENT=$#; _zot }}\n\
         t zot ext ''\nt zot -e x serve --restart ''\nt zot completions ''\nt zot ext install ''\nt zot mcp import --from ''\n",
        file.display()
    );
    let out = Command::new("zsh").arg("-f").arg("-c").arg(probe).output().expect("zsh");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "list install remove enable disable logs new check doctor",
            "never on-failure always",
            "bash zsh fish",
            "FILES ",
            "claude-desktop claude-code cursor vscode",
            "FILES "
        ],
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The fish script, checked by fish and asked for completions.
#[test]
fn fish_completion_parses_and_offers_subcommands_and_choices() {
    if !on_path("fish") {
        common::skip("the fish completion test: fish is not on PATH");
        return;
    }
    let t = TempDir::new("fish-complete");
    let file = t.path().join("zot.fish");
    std::fs::write(&file, zot(&["completions", "fish"])).expect("write");
    let ok = Command::new("fish").arg("--no-execute").arg(&file).status().expect("fish --no-execute");
    assert!(ok.success(), "fish refuses zot.fish");
    let probe = format!(
        "source {}\nfor c in 'zot ext ' 'zot --restart ' 'zot serve --tr' 'zot completions ' 'zot mcp import --from c' 'zot mcp import --from zot.'\n\
         complete -C $c | string replace -r '\\t.*' '' | string join ' '\nend\n",
        file.display()
    );
    // In the folder of zot.fish: the one file --from may offer.
    let out = Command::new("fish").arg("--no-config").arg("-c").arg(probe).env("HOME", t.path()).current_dir(t.path()).output().expect("fish");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "check disable doctor enable install list logs new remove",
            "always never on-failure",
            "--trace --trust-project",
            "bash fish zsh",
            "claude-code claude-desktop cursor",
            "zot.fish"
        ],
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `make install ZOT_GEN=...`: a binary that cannot run here (as a
/// cross-built one) is installed as it is, and the man page and the
/// completions are written by the native build named by ZOT_GEN.
#[test]
fn make_install_writes_the_man_page_with_zot_gen_for_a_binary_that_cannot_run_here() {
    let t = TempDir::new("install-gen");
    let foreign = t.path().join("zot-aarch64");
    std::fs::write(&foreign, b"\x7fELF not a program for this machine").expect("write");
    let dest = t.path().join("dest");
    let out = Command::new("make")
        .args(["-s", "-C", ROOT, "install"])
        .arg(format!("DESTDIR={}", dest.display()))
        .args(["PREFIX=/usr", "INSTALL_DEPS="])
        .arg(format!("ZOT_BIN={}", foreign.display()))
        .arg(format!("ZOT_GEN={BIN}"))
        .stdin(Stdio::null())
        .output()
        .expect("run make");
    assert!(out.status.success(), "make install: {}", String::from_utf8_lossy(&out.stderr));
    let read = |f: &str| std::fs::read(dest.join(f)).expect("read");
    assert_eq!(read(FILES[0]), std::fs::read(&foreign).expect("read"), "the binary installed is ZOT_BIN");
    assert_eq!(String::from_utf8_lossy(&read(FILES[1])), zot(&["man"]));
    assert_eq!(String::from_utf8_lossy(&read(FILES[2])), zot(&["completions", "bash"]));
}

/// The man page and `zot --help` say what a user needs without the
/// README: every file zot reads or writes, every console command (as the
/// console's own /help lists them) and key, every option.
#[test]
fn the_man_page_and_help_name_the_files_the_console_commands_and_keys() {
    let man = zot(&["man"]).replace("\\-", "-").replace("\\e", "\\");
    let help = zot(&["--help"]);
    let files = ["$ZOT_HOME/mcp.json", ".zot/mcp.json", "$ZOT_HOME/trust.json", "$ZOT_HOME/logs/mcp-<name>.log", "$ZOT_HOME/logs/ext-<name>.log", "$ZOT_HOME/data/<name>/", "$ZOT_HOME/history"];
    let keys = ["Ctrl-O", "Ctrl-C", "Ctrl-D", "Ctrl-W", "Tab", "Up, Down", "in a panel"];
    let out = Command::new(BIN)
        .args(["--no-ext"])
        .env("ZOT_HOME", TempDir::new("install-console").path())
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().map(|mut i| i.write_all(b"/help\n"));
            c.wait_with_output()
        })
        .expect("the console's /help");
    let listed = String::from_utf8_lossy(&out.stdout).to_string();
    let commands: Vec<&str> = listed
        .split("extension commands:")
        .next()
        .unwrap_or("")
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix('/').and_then(|c| c.split_whitespace().next()))
        .collect();
    assert!(commands.len() >= 10, "{listed}");
    let commands: Vec<String> = commands.iter().map(|c| format!("/{c}")).collect();
    for want in files.iter().chain(&keys).map(|s| s.to_string()).chain(commands).chain(["--mcp-config FILE".to_string()]) {
        assert!(man.contains(&want), "the man page does not say {want}");
        assert!(help.contains(&want), "zot --help does not say {want}");
    }
    assert!(man.contains(".SH CONSOLE") && man.contains(".SH FILES"), "{man}");
}

/// A home with installed extensions `weather` and `notes`, and a PATH on
/// which `zot` is this build, for the completion scripts to ask.
fn names_world(tag: &str) -> (TempDir, String) {
    let t = TempDir::new(tag);
    for name in ["weather", "notes"] {
        let dir = t.path().join(format!("home/extensions/{name}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join("extension.json"), format!(r#"{{"name": "{name}", "exec": "sh"}}"#)).expect("manifest");
    }
    let bin_dir = Path::new(BIN).parent().expect("bin dir").display().to_string();
    (t, format!("{bin_dir}:{}", std::env::var("PATH").unwrap_or_default()))
}

#[test]
fn completion_offers_installed_names_and_help_topics_in_every_shell() {
    let (t, path) = names_world("complete-names");
    let home = t.path().join("home");
    // A remote server: its name follows `zot mcp login` and `logout`.
    std::fs::write(home.join("mcp.json"), r#"{"mcpServers": {"web": {"url": "http://127.0.0.1:9/mcp", "oauth": {}}}}"#).expect("mcp.json");
    let names = Command::new(BIN).args(["ext", "list", "--names"]).env("ZOT_HOME", &home).current_dir(t.path()).output().expect("zot");
    assert_eq!(String::from_utf8_lossy(&names.stdout), "notes\nweather\nweb\n");
    let top = "serve mcp ext trust untrust completions help man";
    // bash
    let file = t.path().join("zot.bash");
    std::fs::write(&file, zot(&["completions", "bash"])).expect("write");
    let probe = format!(
        "source {}\nc() {{ COMP_WORDS=(\"$@\"); COMP_CWORD=$((${{#COMP_WORDS[@]}}-1)); _zot; echo \"${{COMPREPLY[*]}}\"; }}\nc zot ext enable ''\nc zot ext logs w\nc zot help ''\nc zot mcp ''\nc zot mcp login w\nc zot mcp --cwd . logout ''\n",
        file.display()
    );
    let out = Command::new("bash").arg("-c").arg(probe).env("PATH", &path).env("ZOT_HOME", &home).current_dir(t.path()).output().expect("bash");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().collect::<Vec<_>>(), ["notes weather web", "weather web", top, "import login logout", "weather web", "notes weather web"], "{}", String::from_utf8_lossy(&out.stderr));
    // zsh
    if on_path("zsh") {
        let file = t.path().join("_zot");
        std::fs::write(&file, zot(&["completions", "zsh"])).expect("write");
        let probe = format!(
            "compadd() {{ [[ $1 == -- ]] && shift; print -r -- \"$*\" }}\n\
             _describe() {{ print -r -- \"${{(j: :)${{(@)${{(P)2}}%%:*}}}}\" }}\n\
             words=(zot); CURRENT=1\n\
             source {} >/dev/null\n\
             t() {{ words=(\"$@\"); CURRENT=$#; _zot }}\n\
             t zot ext disable ''\nt zot help ''\nt zot mcp ''\nt zot mcp logout ''\n",
            file.display()
        );
        let out = Command::new("zsh").arg("-f").arg("-c").arg(probe).env("PATH", &path).env("ZOT_HOME", &home).current_dir(t.path()).output().expect("zsh");
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.lines().collect::<Vec<_>>(), ["notes weather web", top, "import login logout", "notes weather web"], "{}", String::from_utf8_lossy(&out.stderr));
    } else {
        common::skip("the zsh part: zsh is not on PATH");
    }
    // fish
    if on_path("fish") {
        let file = t.path().join("zot.fish");
        std::fs::write(&file, zot(&["completions", "fish"])).expect("write");
        let probe = format!(
            "source {}\nfor c in 'zot ext remove ' 'zot help ' 'zot mcp ' 'zot mcp login '\n complete -C $c | string replace -r '\\t.*' '' | string join ' '\nend\n",
            file.display()
        );
        let out = Command::new("fish").arg("--no-config").arg("-c").arg(probe).env("PATH", &path).env("ZOT_HOME", &home).env("HOME", t.path()).current_dir(t.path()).output().expect("fish");
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.lines().collect::<Vec<_>>(), ["notes weather web", "completions ext help man mcp serve trust untrust", "import login logout", "notes weather web"], "{}", String::from_utf8_lossy(&out.stderr));
    } else {
        common::skip("the fish part: fish is not on PATH");
    }
}
