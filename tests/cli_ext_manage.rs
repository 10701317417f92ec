//! `zot ext enable`, `disable` and `remove` end to end through the real
//! binary, hostile names refused, and extensions named by manifest name or
//! folder name (an ambiguous name changes nothing).

use serde_json::Value;
use std::fs;
use std::os::unix::fs::symlink;

mod common;
#[path = "common/ext_world.rs"]
mod ext_world;
use ext_world::*;

#[test]
fn enable_disable_round_trip() {
    let w = World::new();
    let dir = w.ext_root().join("rt-folder");
    make_ext(&dir, "x", "");
    let original = "{\n  \"zzz\": [1, {\"enabled\": true}],\n  \"name\": \"rt\",\n  \"exec\": \"./run.sh\",\n  \"enabled\": true,\n    \"aaa\":   \"keep\" ,\"m\":{}\n}\n";
    let manifest = dir.join("extension.json");
    write(&manifest, original);
    chmod(&manifest, 0o644);

    assert_eq!(w.ok(&["ext", "disable", "rt"]), "disabled rt\n");
    let disabled = fs::read_to_string(&manifest).expect("read");
    assert_eq!(
        disabled,
        original.replace("\"enabled\": true,\n    \"aaa\"", "\"enabled\": false,\n    \"aaa\"")
    );
    // A rewritten manifest is a file zot created: 0600 (PROTOCOL §1).
    assert_eq!(mode(&manifest), 0o600);
    let json: Value = serde_json::from_str(&w.ok(&["ext", "list", "--json"])).expect("json");
    assert_eq!(json[0]["enabled"], false);
    assert!(w.ok(&["ext", "list"]).lines().nth(1).expect("row").contains(" disabled "));

    assert_eq!(w.ok(&["ext", "disable", "rt"]), "rt is already disabled\n");
    assert_eq!(fs::read_to_string(&manifest).expect("read"), disabled);

    assert_eq!(w.ok(&["ext", "enable", "rt"]), "enabled rt\n");
    assert_eq!(fs::read_to_string(&manifest).expect("read"), original, "byte for byte");
    assert_eq!(w.ok(&["ext", "enable", "rt"]), "rt is already enabled\n");

    // No leftovers from the atomic rewrite.
    let files: Vec<_> =
        fs::read_dir(&dir).expect("ls").map(|e| e.expect("e").file_name()).collect();
    assert_eq!(files.len(), 2, "{files:?}");

    // A name in both scopes is ambiguous: refused, naming both folders,
    // both manifests byte-identical.
    make_ext(&w.project_root().join("rt"), "rt", "");
    let local = w.project_root().join("rt/extension.json");
    let local_before = fs::read(&local).expect("read");
    for sub in ["disable", "enable"] {
        let e = w.fails(&["ext", sub, "rt"]);
        assert!(e.contains("rt is ambiguous"), "{e}");
        assert!(e.contains(s(&w.project_root().join("rt"))) && e.contains(s(&dir)), "{e}");
        assert!(e.contains("nothing changed"), "{e}");
        assert_eq!(fs::read(&local).expect("read"), local_before);
        assert_eq!(fs::read_to_string(&manifest).expect("read"), original);
    }
    // The installed folder's name picks one.
    assert_eq!(w.ok(&["ext", "disable", "rt-folder"]), "disabled rt-folder\n");
    assert!(fs::read_to_string(&manifest).expect("read").contains("\"enabled\": false"));
    assert_eq!(fs::read(&local).expect("read"), local_before, "project one untouched");

    let e = w.fails(&["ext", "enable", "nope"]);
    assert_eq!(e, "zot: no extension named nope (see 'zot ext list')");
}

#[test]
fn remove() {
    let w = World::new();
    make_ext(&w.ext_root().join("gone"), "gone", "");
    make_ext(&w.ext_root().join("dup"), "dup", "");
    make_ext(&w.project_root().join("dup"), "dup", "");
    // Read-only directories inside do not stop the removal.
    write(&w.ext_root().join("gone/ro/file"), "x");
    chmod(&w.ext_root().join("gone/ro"), 0o555);

    // Without a terminal and without --yes: refused, nothing removed.
    let e = w.fails(&["ext", "remove", "gone"]);
    assert!(e.contains("--yes"), "{e}");
    assert!(w.ext_root().join("gone").exists());

    let out = w.ok(&["ext", "remove", "gone", "--yes"]);
    assert_eq!(out, format!("removed gone ({})\n", w.ext_root().join("gone").display()));
    assert!(!w.ext_root().join("gone").exists());

    // In both scopes under one name: refused, nothing removed.
    let e = w.fails(&["ext", "remove", "-y", "dup"]);
    assert!(e.contains("dup is ambiguous") && e.contains("(project)") && e.contains("(global)"), "{e}");
    assert!(w.project_root().join("dup").exists() && w.ext_root().join("dup").exists());
    // By folder name: a manifest named otherwise, in its folder "dup2".
    fs::remove_dir_all(w.project_root().join("dup")).expect("rm");
    make_ext(&w.project_root().join("dup2"), "other-name", "");
    w.ok(&["ext", "remove", "-y", "dup2"]);
    assert!(!w.project_root().join("dup2").exists());
    w.ok(&["ext", "remove", "-y", "dup"]);
    assert!(!w.ext_root().join("dup").exists());

    let e = w.fails(&["ext", "remove", "-y", "gone"]);
    assert_eq!(e, "zot: no extension named gone (see 'zot ext list')");

    // A broken extension can be removed by the name `list` shows.
    write(&w.ext_root().join("wreck/extension.json"), "{");
    w.ok(&["ext", "remove", "--yes", "wreck"]);
    assert!(w.installed().is_empty(), "{:?}", w.installed());

    // An extension folder that is a link: the link goes, the target stays.
    let target = w.scratch.path().join("dev-folder");
    make_ext(&target, "linkedext", "");
    fs::create_dir_all(w.ext_root()).expect("mkdir");
    symlink(&target, w.ext_root().join("linkedext")).expect("symlink");
    w.ok(&["ext", "remove", "--yes", "linkedext"]);
    assert!(fs::symlink_metadata(w.ext_root().join("linkedext")).is_err());
    assert!(target.join("extension.json").exists());
}

#[test]
fn hostile_names_are_refused() {
    let w = World::new();
    // Something a path-joining bug would find.
    make_ext(&w.home.path().join("etc"), "etc", "");
    write(&w.home.path().join("logs/ext-x.log"), "log");
    for sub in ["remove", "enable", "disable", "logs"] {
        for name in ["../etc", "..", "a/b", "", "x\u{1b}[2J"] {
            let mut args = vec!["ext", sub, name];
            if sub == "remove" {
                args.push("--yes");
            }
            let e = w.fails(&args);
            assert!(e.starts_with("zot: invalid extension name"), "{sub} {name:?}: {e}");
            assert!(!e.contains('\u{1b}'), "{e:?}");
        }
    }
    assert!(w.home.path().join("etc/extension.json").exists());
    assert_eq!(
        fs::read_to_string(w.home.path().join("etc/extension.json")).expect("read"),
        "{\"name\":\"etc\",\"version\":\"1.0.0\",\"exec\":\"./run.sh\"}"
    );
}

#[test]
fn names_or_folder_names_and_ambiguity_changes_nothing() {
    let w = World::new();
    // Global folder "weather-src" holds "weather"; project folder "tools"
    // holds "tools-ext".
    make_ext(&w.ext_root().join("weather-src"), "weather", "");
    make_ext(&w.project_root().join("tools"), "tools-ext", "");
    let g = w.ext_root().join("weather-src/extension.json");
    let p = w.project_root().join("tools/extension.json");

    // By folder name, in either scope.
    assert_eq!(w.ok(&["ext", "disable", "weather-src"]), "disabled weather-src\n");
    assert!(fs::read_to_string(&g).expect("read").contains("\"enabled\": false"));
    assert_eq!(w.ok(&["ext", "enable", "weather"]), "enabled weather\n");
    assert_eq!(w.ok(&["ext", "disable", "tools"]), "disabled tools\n");
    assert!(fs::read_to_string(&p).expect("read").contains("\"enabled\": false"));
    w.ok(&["ext", "enable", "tools-ext"]);

    // The log is the manifest name's, whichever name is given.
    write(&w.home.path().join("logs/ext-weather.log"), "from weather\n");
    assert_eq!(w.ok(&["ext", "logs", "weather-src"]), "from weather\n");
    assert_eq!(w.ok(&["ext", "logs", "weather"]), "from weather\n");

    // A folder named like another extension's manifest: ambiguous.
    make_ext(&w.project_root().join("weather"), "forecast", "");
    let lp = w.project_root().join("weather/extension.json");
    let (g_before, lp_before) = (fs::read(&g).expect("read"), fs::read(&lp).expect("read"));
    for args in [
        &["ext", "disable", "weather"][..],
        &["ext", "enable", "weather"],
        &["ext", "remove", "--yes", "weather"],
        &["ext", "logs", "weather"],
    ] {
        let e = w.fails(args);
        assert!(e.starts_with("zot: weather is ambiguous: it matches "), "{args:?}: {e}");
        assert!(e.contains(&format!("{} (project)", w.project_root().join("weather").display())), "{e}");
        assert!(e.contains(&format!("{} (global)", w.ext_root().join("weather-src").display())), "{e}");
        assert!(e.ends_with("nothing changed (rename or remove one of them by hand)"), "{e}");
        assert_eq!(fs::read(&g).expect("read"), g_before, "{args:?}");
        assert_eq!(fs::read(&lp).expect("read"), lp_before, "{args:?}");
        assert!(w.ext_root().join("weather-src").is_dir() && w.project_root().join("weather").is_dir());
    }
    // The other names still pick one.
    w.ok(&["ext", "remove", "--yes", "forecast"]);
    assert!(!w.project_root().join("weather").exists());
    // The same name in the project and globally: `logs` refuses too,
    // though both would log to one file.
    make_ext(&w.project_root().join("again"), "weather", "");
    let e = w.fails(&["ext", "logs", "weather"]);
    assert!(e.starts_with("zot: weather is ambiguous: it matches "), "{e}");
    assert!(e.contains(&format!("{} (project)", w.project_root().join("again").display())), "{e}");
    w.ok(&["ext", "remove", "--yes", "again"]);
    w.ok(&["ext", "remove", "--yes", "weather"]);
    assert!(!w.ext_root().join("weather-src").exists());
}
