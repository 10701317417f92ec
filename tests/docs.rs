//! The README and docs/ as a reader meets them: the README fits in 300
//! lines with the two commands on its first screen and no test names;
//! every link into docs/ and between its pages resolves, anchors included;
//! every example is marked with the test that runs it or says why it
//! cannot run here; the dependency figures are Cargo.toml's.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn docs() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    v.sort();
    v
}

/// The anchor GitHub gives a heading: lower case, punctuation dropped,
/// spaces made hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The lines of `text` outside fenced blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|l| {
            if l.starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

/// Every anchor of a page, duplicates numbered as GitHub numbers them.
fn anchors(text: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    for l in prose(text) {
        let Some(h) = l.strip_prefix('#') else { continue };
        let base = slug(h.trim_start_matches('#'));
        let mut s = base.clone();
        let mut n = 0;
        while seen.contains(&s) {
            n += 1;
            s = format!("{base}-{n}");
        }
        seen.insert(s);
    }
    seen
}

/// Every link target of the prose of `text`: `[..](target)`.
fn links(text: &str) -> Vec<String> {
    let mut v = Vec::new();
    for l in prose(text) {
        let mut rest = l;
        while let Some(i) = rest.find("](") {
            let tail = &rest[i + 2..];
            let Some(end) = tail.find(')') else { break };
            v.push(tail[..end].to_string());
            rest = &tail[end..];
        }
    }
    v
}

/// Checks that every relative link of the page at `from` resolves to a
/// file, and its `#anchor` to a heading of that file.
fn check_links(from: &Path, only_docs: bool) -> Vec<String> {
    let text = read(from);
    let mut bad = Vec::new();
    for target in links(&text) {
        if target.starts_with("http://") || target.starts_with("https://") || target.starts_with("mailto:") {
            continue;
        }
        if only_docs && !target.starts_with("docs/") {
            continue;
        }
        let (file, anchor) = target.split_once('#').map_or((target.as_str(), None), |(f, a)| (f, Some(a)));
        let path = if file.is_empty() { from.to_path_buf() } else { from.parent().expect("a folder").join(file) };
        if !path.exists() {
            bad.push(format!("{}: {target}: no such file", from.display()));
            continue;
        }
        if let Some(a) = anchor {
            if path.is_file() && !anchors(&read(&path)).contains(a) {
                bad.push(format!("{}: {target}: no such heading", from.display()));
            }
        }
    }
    bad
}

#[test]
fn the_readme_fits_in_300_lines_with_the_two_commands_on_its_first_screen() {
    let readme = read(&Path::new(ROOT).join("README.md"));
    let n = readme.lines().count();
    assert!(n <= 300, "README.md has {n} lines");
    let first_screen: Vec<&str> = readme.lines().take(40).collect();
    for cmd in ["make demo", "make test"] {
        assert!(first_screen.iter().any(|l| l.starts_with(cmd)), "{cmd} is not on the README's first screen");
    }
}

#[test]
fn every_docs_link_of_the_readme_and_every_link_in_docs_resolves() {
    let mut bad = check_links(&Path::new(ROOT).join("README.md"), true);
    let readme = read(&Path::new(ROOT).join("README.md"));
    assert!(links(&readme).iter().any(|l| l.starts_with("docs/")), "the README links into docs/");
    for page in docs() {
        bad.extend(check_links(&page, false));
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// The test functions of tests/*.rs.
fn test_names() -> HashSet<String> {
    let mut names = HashSet::new();
    for e in std::fs::read_dir(Path::new(ROOT).join("tests")).expect("tests/").filter_map(|e| e.ok()) {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let text = read(&p);
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            let t = l.trim();
            if t == "#[test]" {
                let f = lines[i + 1..].iter().find(|l| l.trim_start().starts_with("fn ")).copied().unwrap_or("");
                if let Some(name) = f.trim_start().strip_prefix("fn ").and_then(|f| f.split('(').next()) {
                    names.insert(name.to_string());
                }
            }
        }
    }
    names
}

#[test]
fn the_readme_names_no_test() {
    let readme = read(&Path::new(ROOT).join("README.md"));
    let named: Vec<String> = test_names().into_iter().filter(|n| n.contains('_') && readme.contains(n.as_str())).collect();
    assert!(named.is_empty(), "the README names tests (their place is docs/guarantees.md): {named:?}");
}

/// The README blocks that tests/readme_examples.rs runs, by first line.
const README_RUN: [(&str, &str); 3] = [
    ("$ zot ext new jail --lang shell", "a_confined_extension"),
    ("$ zot ext new hello", "a_first_extension_in_python"),
    ("$ zot serve --no-ext --ext examples/python/notes", "the_readmes_zot_serve"),
];

/// Every fenced block of the README and docs/ is marked, on the line
/// before it: `<!-- run: tests/FILE.rs::NAME ... -->` names a test that
/// exists (the README's `<!-- run -->` blocks are the ones of
/// [`README_RUN`]), `<!-- not run: WHY -->` says why it cannot run here.
#[test]
fn every_example_is_run_by_a_test_or_says_why_not() {
    let mut pages = vec![Path::new(ROOT).join("README.md")];
    pages.extend(docs());
    let examples = read(&Path::new(ROOT).join("tests/readme_examples.rs"));
    let mut bad = Vec::new();
    for page in pages {
        let text = read(&page);
        let lines: Vec<&str> = text.lines().collect();
        let mut fenced = false;
        for (i, l) in lines.iter().enumerate() {
            if !l.starts_with("```") {
                continue;
            }
            fenced = !fenced;
            if !fenced {
                continue;
            }
            let at = format!("{}:{}", page.display(), i + 1);
            let mark = if i > 0 { lines[i - 1].trim() } else { "" };
            let first = lines.get(i + 1).copied().unwrap_or("");
            if let Some(why) = mark.strip_prefix("<!-- not run:") {
                if why.trim_end_matches("-->").trim().len() < 10 {
                    bad.push(format!("{at}: say why it cannot run"));
                }
            } else if mark == "<!-- run -->" && page.ends_with("README.md") {
                match README_RUN.iter().find(|(f, _)| first.starts_with(f)) {
                    Some((_, name)) if examples.contains(&format!("fn {name}()")) => {}
                    _ => bad.push(format!("{at}: no test runs it")),
                }
            } else if let Some(run) = mark.strip_prefix("<!-- run: ") {
                let target = run.split_whitespace().next().unwrap_or("");
                let Some((file, name)) = target.split_once("::") else {
                    bad.push(format!("{at}: {mark}: not tests/FILE.rs::NAME"));
                    continue;
                };
                let source = std::fs::read_to_string(Path::new(ROOT).join(file)).unwrap_or_default();
                if !source.contains(&format!("fn {name}()")) {
                    bad.push(format!("{at}: {file} has no test {name}"));
                }
            } else {
                bad.push(format!("{at}: an example with no mark (<!-- run: tests/FILE.rs::NAME --> or <!-- not run: why -->)"));
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// The names in `[dependencies]` of Cargo.toml.
fn dependencies() -> Vec<String> {
    let cargo = read(&Path::new(ROOT).join("Cargo.toml"));
    let deps = cargo.split("[dependencies]\n").nth(1).expect("[dependencies]");
    let deps = deps.split("\n[").next().unwrap_or("");
    deps.lines().filter_map(|l| l.split_once('=').map(|(k, _)| k.trim().to_string())).filter(|k| !k.is_empty() && !k.starts_with('#')).collect()
}

#[test]
fn the_dependency_figures_are_cargo_tomls() {
    let deps = dependencies();
    let cargo = read(&Path::new(ROOT).join("Cargo.toml"));
    assert!(!cargo.contains("[dev-dependencies]"), "the dependency figures count no dev-dependencies");
    let design = read(&Path::new(ROOT).join("docs/design.md"));
    let para = design.split("## Dependencies\n").nth(1).expect("docs/design.md has a Dependencies section");
    let sentence = para.split(", and on no other crate").next().expect("the list of crates");
    let named: Vec<String> = sentence.split('`').skip(1).step_by(2).map(str::to_string).collect();
    assert_eq!(named, deps, "docs/design.md's list of dependencies");
    let words = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"];
    let readme = read(&Path::new(ROOT).join("README.md"));
    let count = words.get(deps.len()).copied().unwrap_or("many");
    assert!(readme.contains(&format!("{count} dependencies")), "the README says {count} dependencies");
}

/// Every option `zot --help` lists is in the options table of docs/cli.md.
#[test]
fn docs_cli_lists_every_option_of_zot_help() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zot")).arg("--help").output().expect("zot --help");
    let help = String::from_utf8_lossy(&out.stdout);
    let cli = read(&Path::new(ROOT).join("docs/cli.md"));
    let table = cli.split("## Options").nth(1).and_then(|t| t.split("\n\n").find(|p| p.starts_with("| option"))).expect("the options table");
    let options = help.split("\nOptions").nth(1).and_then(|o| o.split("\n\n").next()).expect("the options of zot --help");
    let mut missing = Vec::new();
    for w in options.split_whitespace().filter(|w| w.starts_with("--") && w.len() > 2) {
        let flag = w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
        if !["--help", "--version"].contains(&flag) && !table.contains(&format!("`{flag}")) && !table.contains(&format!(" {flag} ")) && !table.contains(&format!("{flag}`")) {
            missing.push(flag.to_string());
        }
    }
    assert!(missing.is_empty(), "docs/cli.md's options table lacks {missing:?}");
}
