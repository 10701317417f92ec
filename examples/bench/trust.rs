//! The trust check on every start (PROTOCOL §7.3): `zot trust --list` in a
//! trusted project of five extensions of 2,000 files each, warm, against the
//! same command for a trusted project with none; the difference is the
//! fingerprint check. Beside it, the floor: one `lstat` walk of the same
//! tree in this process (what any check must do at least), so the figure
//! can be judged on a loaded machine.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Medians in milliseconds.
pub struct Trust {
    pub check_ms: f64,
    pub floor_ms: f64,
    pub files: usize,
}

const EXTS: usize = 5;
const ROUNDS: usize = 15;

fn project(root: &Path, exts: usize) -> Res<PathBuf> {
    let proj = root.join("proj");
    fs::create_dir_all(proj.join(".zot/extensions"))?;
    for e in 0..exts {
        let d = proj.join(format!(".zot/extensions/e{e}"));
        fs::create_dir_all(&d)?;
        fs::write(d.join("extension.json"), format!(r#"{{"name": "e{e}", "exec": "python3", "args": ["main.py"]}}"#))?;
        fs::write(d.join("main.py"), "print(1)\n")?;
        // 20 folders of 99 modules, main.py and the manifest: 2,002 entries.
        for m in 0..20 {
            let sub = d.join(format!("m{m}"));
            fs::create_dir_all(&sub)?;
            for f in 0..99 {
                fs::write(sub.join(format!("f{f}.py")), format!("x = {m} + {f}\n"))?;
            }
        }
    }
    Ok(proj)
}

fn zot(zot: &Path, home: &Path, cwd: &Path, args: &[&str]) -> Res<()> {
    let ok = Command::new(zot)
        .args(args)
        .current_dir(cwd)
        .env("ZOT_HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?
        .success();
    if ok { Ok(()) } else { Err(format!("zot {args:?} failed").into()) }
}

fn walk(d: &Path, n: &mut usize) -> Res<()> {
    for e in fs::read_dir(d)? {
        let e = e?;
        let m = e.metadata()?;
        *n += 1;
        if m.is_dir() {
            walk(&e.path(), n)?;
        }
    }
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

pub fn run(zot_bin: &Path, tmp: &Path) -> Res<Trust> {
    let big = project(&tmp.join("trust-big"), EXTS)?;
    let empty = project(&tmp.join("trust-empty"), 0)?;
    let (big_home, empty_home) = (tmp.join("trust-big/home"), tmp.join("trust-empty/home"));
    zot(zot_bin, &big_home, &big, &["trust"])?;
    zot(zot_bin, &empty_home, &empty, &["trust"])?;
    let (mut with, mut without, mut floor) = (Vec::new(), Vec::new(), Vec::new());
    let mut files = 0;
    for _ in 0..ROUNDS {
        let t = Instant::now();
        zot(zot_bin, &big_home, &big, &["trust", "--list"])?;
        with.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        zot(zot_bin, &empty_home, &empty, &["trust", "--list"])?;
        without.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        files = 0;
        walk(&big.join(".zot"), &mut files)?;
        floor.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(Trust { check_ms: (median(with) - median(without)).max(0.0), floor_ms: median(floor), files })
}
