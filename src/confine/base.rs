//! What every confined process gets beyond its declaration (docs/protocol.md
//! §9.2): the system's program and library folders, its own folder, the
//! program that really runs (through `$PATH`, links and `#!` lines) with
//! an interpreter's prefix and its script's folder, its data and temporary
//! folders, a few devices, and `/proc` to read.

use std::path::{Path, PathBuf};

/// How a path is granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read and execute, recursively.
    Read,
    /// Read, execute, create, write, rename and delete, recursively.
    Write,
}

/// One grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub path: PathBuf,
    pub access: Access,
}

/// The system folders read and executed by every confined process.
const SYSTEM: [&str; 11] = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/opt", "/nix/store", "/snap", "/proc"];
/// Devices read and written.
const DEVICES: [&str; 6] = ["/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/shm"];

/// Where the program is found and what guards its folders.
pub struct Program<'a> {
    /// `exec` or `command` resolved through `$PATH` (not through links).
    pub exec: &'a Path,
    pub args: &'a [String],
    /// The folder it runs in: relative arguments start there.
    pub cwd: &'a Path,
    /// The `PATH` it runs with, for `#!/usr/bin/env NAME`.
    pub path_var: Option<&'a std::ffi::OsStr>,
    /// `$HOME` as the program gets it, never granted as a prefix (nor the
    /// host's own `$HOME`, nor either through links).
    pub home: Option<&'a Path>,
    /// `$ZOT_HOME`: no folder holding it is granted as a prefix.
    pub zot_home: &'a Path,
    /// The extension's own folder (`None` for an MCP server): when it is
    /// itself named `bin/` (or `.bin/`, `shims/`), the folder above it
    /// holds the other extensions, never a prefix.
    pub own: Option<&'a Path>,
}

/// The base set: system folders, devices, `/sys/devices/system/cpu`, the
/// extension's own folder (`own`: `None` for an MCP server), the program's
/// grants, and read-write on `data` and `tmp`.
pub fn base_set(own: Option<&Path>, program: &Program, data: &Path, tmp: &Path) -> Vec<Grant> {
    let read = |p: &Path| Grant { path: p.to_path_buf(), access: Access::Read };
    let write = |p: &Path| Grant { path: p.to_path_buf(), access: Access::Write };
    let mut out: Vec<Grant> = SYSTEM.iter().map(|p| read(Path::new(p))).collect();
    out.push(read(Path::new("/sys/devices/system/cpu")));
    out.extend(DEVICES.iter().map(|p| write(Path::new(p))));
    out.extend(own.map(read));
    out.extend(program_grants(program).iter().map(|p| read(p)));
    out.push(write(data));
    out.push(write(tmp));
    out
}

/// The one prefix rule: what the program that really runs needs to read.
/// A compiled program alone; an interpreter (named by a `#!` line, or run
/// with an existing regular file as its first argument) its prefix, the
/// folder above its `bin/` (or `bin/` alone when that folder is `$HOME` or
/// holds `$ZOT_HOME`); the script it runs, with the script's folder.
pub fn program_grants(p: &Program) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let script_arg = p.args.first().map(|a| p.cwd.join(a)).filter(|a| a.is_file());
    let mut program = p.exec.to_path_buf();
    let mut script = None;
    // A `#!` chain, a few levels deep as the kernel allows.
    for _ in 0..4 {
        out.push(program.clone());
        let Some(interp) = shebang(&program, p.path_var) else { break };
        script.get_or_insert(program.clone());
        prefix(&program, p, &mut out);
        program = interp;
    }
    // A `#!` script passes its arguments on (a version manager's shim):
    // the script it was given is granted with it.
    if script.is_some() || script_arg.is_some() {
        prefix(&program, p, &mut out);
    }
    for s in script.iter().chain(&script_arg) {
        folder_of(s, p, &mut out);
        if let Ok(real) = s.canonicalize() {
            folder_of(&real, p, &mut out);
        }
    }
    let real: Vec<PathBuf> = out.iter().filter_map(|q| q.canonicalize().ok()).collect();
    out.extend(real);
    crate::order::sort(&mut out);
    out.dedup();
    out
}

/// The folder above `bin/` (or `.bin/`, or a version manager's `shims/`)
/// of `exe`, named and resolved.
fn prefix(exe: &Path, p: &Program, out: &mut Vec<PathBuf>) {
    for exe in [Some(exe.to_path_buf()), exe.canonicalize().ok()].into_iter().flatten() {
        let Some(bin) = exe.parent() else { continue };
        let is_bin = matches!(bin.file_name().and_then(|n| n.to_str()), Some("bin" | ".bin" | "shims")) && !p.own.is_some_and(|o| same(o, bin));
        match bin.parent() {
            Some(top) if is_bin && !guarded(top, p) => out.push(top.to_path_buf()),
            _ if !guarded(bin, p) => out.push(bin.to_path_buf()),
            _ => {}
        }
    }
}

/// The folder of a script, unless it is one never granted whole.
fn folder_of(script: &Path, p: &Program, out: &mut Vec<PathBuf>) {
    out.push(script.to_path_buf());
    if let Some(dir) = script.parent().filter(|d| !guarded(d, p)) {
        out.push(dir.to_path_buf());
    }
}

/// `/`, `$HOME` (the program's and the host's), and any folder holding
/// `$ZOT_HOME`, each as named and as resolved through links: a prefix is
/// taken from the program's real path too, which names a linked home by
/// its target.
fn guarded(dir: &Path, p: &Program) -> bool {
    let host_home = std::env::var_os("HOME").map(PathBuf::from);
    let homes = p.home.map(Path::to_path_buf).into_iter().chain(host_home).filter(|h| !h.as_os_str().is_empty());
    let real_zot = real(p.zot_home);
    [dir.to_path_buf(), real(dir)].iter().any(|d| d.parent().is_none() || p.zot_home.starts_with(d) || real_zot.starts_with(d))
        || homes.into_iter().any(|h| same(&h, dir))
}

/// `p` resolved through links, or as it is.
fn real(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// Whether `a` and `b` name the same folder, as named or resolved.
fn same(a: &Path, b: &Path) -> bool {
    a == b || real(a) == real(b)
}

/// The interpreter a `#!` line names, `env NAME` looked up on `path_var`.
fn shebang(file: &Path, path_var: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(file).and_then(|mut f| f.read(&mut head)).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = &line[..line.iter().position(|&b| b == b'\n').unwrap_or(line.len())];
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    let interp = PathBuf::from(words.next()?);
    let interp = if interp.is_relative() { file.parent()?.join(interp) } else { interp };
    if interp.file_name().is_some_and(|n| n == "env") {
        let name = words.find(|w| !w.starts_with('-'))?;
        let dirs = std::env::split_paths(path_var?).filter(|d| d.is_absolute());
        return dirs.map(|d| d.join(name)).find(|c| c.is_file());
    }
    Some(interp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("zot-base-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d.canonicalize().unwrap()
    }

    fn grants(exec: &Path, args: &[&str], cwd: &Path, home: &Path, path_var: &Path) -> Vec<PathBuf> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let zot_home = home.join(".zot");
        let p = Program { exec, args: &args, cwd, path_var: Some(path_var.as_os_str()), home: Some(home), zot_home: &zot_home, own: None };
        program_grants(&p)
    }

    #[test]
    fn interpreter_gets_its_prefix_and_script_folder() {
        let home = tmp("interp");
        let prefix = home.join(".pyenv/versions/3.12");
        std::fs::create_dir_all(prefix.join("bin")).unwrap();
        std::fs::write(prefix.join("bin/python3"), b"\x7fELF").unwrap();
        let srv = home.join("srv");
        std::fs::create_dir_all(&srv).unwrap();
        std::fs::write(srv.join("server.py"), b"print(1)").unwrap();
        let g = grants(&prefix.join("bin/python3"), &["server.py", "--config", "/etc/x"], &srv, &home, &prefix.join("bin"));
        assert!(g.contains(&prefix), "{g:?}");
        assert!(g.contains(&srv) && g.contains(&srv.join("server.py")), "{g:?}");
        assert!(!g.contains(&home), "{g:?}");
        // The same interpreter with no script: a compiled program alone.
        let g = grants(&prefix.join("bin/python3"), &["-m", "srv"], &srv, &home, &prefix.join("bin"));
        assert_eq!(g, vec![prefix.join("bin/python3")]);
    }

    #[test]
    fn shebang_through_env_and_a_bin_link() {
        let home = tmp("shebang");
        let proj = home.join("proj");
        let nm = proj.join("node_modules");
        std::fs::create_dir_all(nm.join("tool/dist")).unwrap();
        std::fs::create_dir_all(nm.join(".bin")).unwrap();
        std::fs::write(nm.join("tool/dist/cli.js"), b"#!/usr/bin/env node\n").unwrap();
        symlink("../tool/dist/cli.js", nm.join(".bin/tool")).unwrap();
        let nodes = home.join("nvm/v22");
        std::fs::create_dir_all(nodes.join("bin")).unwrap();
        std::fs::write(nodes.join("bin/node"), b"\x7fELF").unwrap();
        let g = grants(&nm.join(".bin/tool"), &[], &proj, &home, &nodes.join("bin"));
        assert!(g.contains(&nm), "the .bin tool's prefix: {g:?}");
        assert!(g.contains(&nodes), "node's prefix: {g:?}");
        assert!(g.contains(&nm.join("tool/dist")), "the script's own folder: {g:?}");
    }

    #[test]
    fn home_and_zot_home_are_never_a_prefix() {
        let home = tmp("guard");
        std::fs::create_dir_all(home.join("bin")).unwrap();
        std::fs::write(home.join("bin/run"), b"#!/bin/sh\n").unwrap();
        let g = grants(&home.join("bin/run"), &[], &home, &home, &home);
        assert!(g.contains(&home.join("bin")) && !g.contains(&home), "{g:?}");
        std::fs::write(home.join("x.sh"), b"#!/bin/sh\n").unwrap();
        let g = grants(Path::new("/bin/sh"), &["x.sh"], &home, &home, &home);
        assert!(g.contains(&home.join("x.sh")) && !g.contains(&home), "{g:?}");
    }
}
