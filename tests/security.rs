//! The host's own safety rules through the real binary (PROTOCOL §1):
//! bare `exec` names looked up only in absolute `$PATH` entries, the modes
//! of everything zot creates under any umask, and what `zot ext install`
//! copies. Every test has its own `ZOT_HOME` and directories.

mod common;

use common::{write_exec, Out, TempDir};
use serde_json::json;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_zot");

/// Runs `zot args...` in `cwd` with `ZOT_HOME=home` and the extra `env`.
fn zot(cwd: &Path, home: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    common::run_zot(BIN, cwd, Some(home), args, env)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

// ---------------------------------------------------------------------------
// $PATH

#[test]
fn a_bare_exec_is_never_found_through_a_relative_or_empty_path_entry() {
    let t = TempDir::new("sec-path");
    let cwd = t.path().join("cwd");
    fs::create_dir_all(&cwd).expect("mkdir");
    let marker = t.path().join("ran");
    write_exec(&cwd.join("thing"), &format!("#!/bin/sh\ntouch '{}'\nexit 0\n", s(&marker)));
    let ext = common::write_manifest(t.path(), "ext", json!({"name": "thing", "exec": "thing"}));
    let home = t.path().join("home");
    let sys_path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    for path in [format!(".:{sys_path}"), format!(":{sys_path}"), format!("{sys_path}:"), format!("cwd/..:{sys_path}")] {
        let env = [("PATH", path.as_str())];
        let check = zot(&cwd, &home, &["ext", "check", s(&ext)], &env);
        assert_ne!(check.code, 0, "PATH={path}: {}{}", check.stdout, check.stderr);
        assert!(check.stdout.contains("not found on PATH"), "PATH={path}: {}", check.stdout);
        let doctor = zot(&cwd, &home, &["ext", "doctor", "--no-ext", "--ext", s(&ext)], &env);
        assert_eq!(doctor.code, 1, "PATH={path}: {}{}", doctor.stdout, doctor.stderr);
        assert!(doctor.stdout.contains("not found on PATH"), "PATH={path}: {}", doctor.stdout);
        assert!(!marker.exists(), "PATH={path}: ./thing of the host's directory ran");
    }
    // An absolute entry holding it is used.
    let path = format!("{}:{sys_path}", s(&cwd));
    let check = zot(t.path(), &home, &["ext", "check", s(&ext)], &[("PATH", path.as_str())]);
    assert!(!check.stdout.contains("not found on PATH"), "{}", check.stdout);
    assert!(marker.exists(), "the absolute PATH entry was not used");
}

// ---------------------------------------------------------------------------
// File modes

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())).permissions().mode() & 0o7777
}

/// `zot args...` in `cwd` under `umask`, with `ZOT_HOME=home`.
fn zot_umask(umask: &str, cwd: &Path, home: &Path, args: &[&str], stdin: Stdio) -> std::process::Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
        .arg(BIN)
        .args(args)
        .current_dir(cwd)
        .env("ZOT_HOME", home)
        .env_remove("XDG_STATE_HOME")
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .stdin(stdin)
        .output()
        .expect("run zot")
}

/// An interactive session on a pseudo-terminal under `umask`: one line
/// typed, then the session is ended once the history holds it.
fn console_line(umask: &str, cwd: &Path, home: &Path, line: &str) {
    use std::fs::File;
    use std::io::Write;
    use std::os::fd::{FromRawFd, OwnedFd};
    let (mut m, mut s) = (0, 0);
    let size = libc::winsize { ws_row: 24, ws_col: 120, ws_xpixel: 0, ws_ypixel: 0 };
    // SAFETY: openpty fills two descriptors.
    let r = unsafe { libc::openpty(&mut m, &mut s, std::ptr::null_mut(), std::ptr::null(), &size) };
    assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: fresh descriptors, owned from here on.
    let (mut master, slave) = unsafe { (File::from_raw_fd(m), OwnedFd::from_raw_fd(s)) };
    // SAFETY: only the test holds the master.
    unsafe { libc::fcntl(m, libc::F_SETFD, libc::FD_CLOEXEC) };
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
        .arg(BIN)
        .args(["--no-ext"])
        .current_dir(cwd)
        .env("ZOT_HOME", home)
        .env_remove("XDG_STATE_HOME")
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .stdin(Stdio::from(slave.try_clone().expect("dup")))
        .stdout(Stdio::from(slave.try_clone().expect("dup")))
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn zot");
    // Drain the screen so zot never blocks on output.
    let mut reader = master.try_clone().expect("dup master");
    std::thread::spawn(move || {
        let mut b = [0u8; 4096];
        while matches!(std::io::Read::read(&mut reader, &mut b), Ok(n) if n > 0) {}
    });
    let history = home.join("history");
    let typed = common::wait_until(std::time::Duration::from_secs(30), || {
        let _ = master.write_all(format!("{line}\r").as_bytes());
        fs::read_to_string(&history).is_ok_and(|h| h.contains(line))
    });
    let _ = master.write_all(b"\x04");
    let _ = child.kill();
    let _ = child.wait();
    assert!(typed, "the typed line never reached {}", history.display());
    drop(slave);
}

#[test]
fn everything_zot_creates_is_private_whatever_the_umask() {
    for umask in ["022", "000"] {
        let t = TempDir::new(&format!("sec-modes-{umask}"));
        let home = t.path().join("state/zot");
        let proj = t.path().join("proj");
        let d = common::write_manifest(&proj.join(".zot/extensions"), "p", json!({"name": "p", "exec": "./run.sh"}));
        write_exec(&d.join("run.sh"), "#!/bin/sh\necho secret-token >&2\nexit 0\n");
        let ok = |o: &std::process::Output, what: &str| {
            assert!(o.status.success(), "umask {umask}, {what}: {}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
            assert!(!String::from_utf8_lossy(&o.stderr).contains("warning"), "umask {umask}, {what}: {}", String::from_utf8_lossy(&o.stderr));
        };
        // trust.json, its lock, the fingerprint cache; the home and its parent.
        ok(&zot_umask(umask, &proj, &home, &["trust"], Stdio::null()), "zot trust");
        // A rewritten manifest.
        ok(&zot_umask(umask, &proj, &home, &["ext", "disable", "p"], Stdio::null()), "disable");
        assert_eq!(mode(&d.join("extension.json")), 0o600, "umask {umask}: rewritten manifest");
        ok(&zot_umask(umask, &proj, &home, &["ext", "enable", "p"], Stdio::null()), "enable");
        // Logs and a --trace file outside the home.
        let trace = t.path().join("trace.jsonl");
        let o = zot_umask(umask, &proj, &home, &["serve", "--trace", s(&trace), "--hello-timeout", "2", "--ready-grace", "2"], Stdio::null());
        assert!(o.status.success(), "umask {umask}: {}", String::from_utf8_lossy(&o.stderr));
        // History.
        console_line(umask, &proj, &home, "hello history");
        // The extensions folder of an install.
        let src = common::write_manifest(t.path(), "src", json!({"name": "inst", "exec": "./run.sh"}));
        write_exec(&src.join("run.sh"), "#!/bin/sh\nexit 0\n");
        ok(&zot_umask(umask, &proj, &home, &["ext", "install", s(&src)], Stdio::null()), "install");
        for dir in [t.path().join("state"), home.clone(), home.join("logs"), home.join("cache"), home.join("extensions")] {
            assert_eq!(mode(&dir), 0o700, "umask {umask}: {}", dir.display());
        }
        let cache = fs::read_dir(home.join("cache")).expect("cache").next().expect("a cache file").expect("entry").path();
        let files = [home.join("trust.json"), home.join("trust.json.lock"), cache, home.join("logs/ext-p.log"), trace, home.join("history")];
        for f in files {
            assert_eq!(mode(&f), 0o600, "umask {umask}: {}", f.display());
        }
        assert!(fs::read_to_string(home.join("logs/ext-p.log")).expect("log").contains("secret-token"));
    }
}

#[test]
fn a_home_others_can_write_to_is_named_with_its_chmod_on_every_start() {
    let t = TempDir::new("sec-shared");
    let home = t.path().join("home");
    fs::create_dir(&home).expect("mkdir");
    fs::set_permissions(&home, fs::Permissions::from_mode(0o777)).expect("chmod");
    let want = format!("zot: warning: the zot home {} is writable by other users (mode 0777): they could change what zot runs; fix it with: chmod 700 {}", s(&home), s(&home));
    for args in [&["trust", "--list"][..], &["ext", "list"], &["serve", "--no-ext"]] {
        let r = zot(t.path(), &home, args, &[]);
        let lines: Vec<&str> = r.stderr.lines().filter(|l| l.contains("warning")).collect();
        assert_eq!(lines, [want.as_str()], "zot {args:?}: {}", r.stderr);
    }
    fs::set_permissions(&home, fs::Permissions::from_mode(0o700)).expect("chmod");
    let r = zot(t.path(), &home, &["trust", "--list"], &[]);
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
}

// ---------------------------------------------------------------------------
// zot ext install and doctor

#[test]
fn install_masks_modes_with_0755_and_refuses_fifos_leaving_nothing() {
    let t = TempDir::new("sec-install");
    let home = t.path().join("home");
    let src = common::write_manifest(t.path(), "open", json!({"name": "open", "exec": "./bin/run.sh"}));
    fs::create_dir(src.join("bin")).expect("mkdir");
    write_exec(&src.join("bin/run.sh"), "#!/bin/sh\nexit 0\n");
    fs::write(src.join("data.txt"), "x").expect("write");
    fs::set_permissions(src.join("bin/run.sh"), fs::Permissions::from_mode(0o4777)).expect("chmod");
    fs::set_permissions(src.join("data.txt"), fs::Permissions::from_mode(0o666)).expect("chmod");
    fs::set_permissions(src.join("bin"), fs::Permissions::from_mode(0o3777)).expect("chmod");
    fs::set_permissions(&src, fs::Permissions::from_mode(0o777)).expect("chmod");
    let r = zot(t.path(), &home, &["ext", "install", s(&src)], &[("PATH", "/usr/bin:/bin")]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let dest = home.join("extensions/open");
    assert_eq!(mode(&dest), 0o755);
    assert_eq!(mode(&dest.join("bin")), 0o755);
    assert_eq!(mode(&dest.join("bin/run.sh")), 0o755, "setuid or group/other write kept");
    assert_eq!(mode(&dest.join("data.txt")), 0o644);
    assert_eq!(mode(&home.join("extensions")), 0o700);
    // What it installed passes doctor's check of installed files.
    let r = zot(t.path(), &home, &["ext", "doctor"], &[]);
    assert!(!r.stdout.contains("file_modes"), "{}", r.stdout);

    // A FIFO anywhere in the tree: refused, nothing left behind.
    let src = common::write_manifest(t.path(), "fifo", json!({"name": "fifo", "exec": "./run.sh"}));
    write_exec(&src.join("run.sh"), "#!/bin/sh\nexit 0\n");
    fs::create_dir(src.join("deep")).expect("mkdir");
    let fifo = src.join("deep/pipe");
    let c = std::ffi::CString::new(s(&fifo)).expect("cstring");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
    let before: Vec<_> = fs::read_dir(home.join("extensions")).expect("ls").flatten().map(|e| e.file_name()).collect();
    let r = zot(t.path(), &home, &["ext", "install", s(&src)], &[]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains(&format!("{} is a FIFO", s(&fifo))), "{}", r.stderr);
    let after: Vec<_> = fs::read_dir(home.join("extensions")).expect("ls").flatten().map(|e| e.file_name()).collect();
    assert_eq!(before, after, "something was left behind");
}

#[test]
fn install_under_umask_000_leaves_no_folder_others_can_write_on_the_way_to_what_runs() {
    // The exec lives in target/, which is not copied but for that file: its
    // folders are made by install itself, not copied with their modes.
    let t = TempDir::new("sec-install-umask");
    let home = t.path().join("home");
    let src = common::write_manifest(t.path(), "rs", json!({"name": "rs", "exec": "./target/release/rs"}));
    fs::create_dir_all(src.join("target/release")).expect("mkdir");
    write_exec(&src.join("target/release/rs"), "#!/bin/sh\nexit 0\n");
    let o = zot_umask("000", t.path(), &home, &["ext", "install", s(&src)], Stdio::null());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dest = home.join("extensions/rs");
    assert_eq!(mode(&dest.join("target/release/rs")), 0o755);
    for dir in [dest.clone(), dest.join("target"), dest.join("target/release")] {
        assert_eq!(mode(&dir) & 0o022, 0, "{} is mode {:o}", dir.display(), mode(&dir));
    }
}

#[test]
fn doctor_flags_installed_files_others_can_write_or_own() {
    let t = TempDir::new("sec-doctor");
    let home = t.path().join("home");
    let src = common::write_manifest(t.path(), "x", json!({"name": "x", "exec": "./run.sh"}));
    write_exec(&src.join("run.sh"), "#!/bin/sh\nexit 0\n");
    let r = zot(t.path(), &home, &["ext", "install", s(&src)], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let run = home.join("extensions/x/run.sh");
    fs::set_permissions(&run, fs::Permissions::from_mode(0o777)).expect("chmod");
    let r = zot(t.path(), &home, &["ext", "doctor", "--json"], &[]);
    let report: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    let f = report["findings"].as_array().expect("findings").iter().find(|f| f["code"] == "file_modes").cloned();
    let f = f.unwrap_or_else(|| panic!("no file_modes finding: {}", r.stdout));
    assert!(f["message"].as_str().unwrap_or("").contains(&format!("{} (mode 0777)", s(&run))), "{f}");
    assert_eq!(f["hint"], format!("chmod go-w {}", s(&run)));
    fs::set_permissions(&run, fs::Permissions::from_mode(0o755)).expect("chmod");
    // Another owner (only root can hand a file to someone else).
    // SAFETY: geteuid has no failure mode.
    if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::lchown(&run, Some(65534), None).expect("chown");
        let r = zot(t.path(), &home, &["ext", "doctor"], &[]);
        assert!(r.stdout.contains(&format!("installed files not owned by you, so their owner could change what runs: {} (uid 65534)", s(&run))), "{}", r.stdout);
        assert!(r.stdout.contains(&format!("chown 0 {}", s(&run))), "{}", r.stdout);
    }
}

// ---------------------------------------------------------------------------
// Files zot writes in its home

/// A folder of zot's own in its home that is a symbolic link (planted in a
/// home others can write): `data/project/<id>/NAME`, handed to a project-local
/// extension as its `data_dir`, and `logs`. Each is refused with a line
/// naming it, and the folder it points to gets nothing. The control: the
/// same folders, real, are used.
#[test]
fn a_data_or_logs_folder_that_is_a_link_is_refused_and_what_it_points_to_gets_nothing() {
    use std::os::unix::fs::symlink;
    const EXT: &str = concat!(
        "import json, sys\n",
        "def emit(o): sys.stdout.write(json.dumps(o) + '\\n'); sys.stdout.flush()\n",
        "emit({'type': 'hello', 'name': 'w', 'version': '1', 'capabilities': []})\n",
        "for line in sys.stdin:\n",
        "    m = json.loads(line)\n",
        "    if m['type'] == 'hello_ack':\n",
        "        open(m['data_dir'] + '/state.txt', 'w').write('x')\n",
        "        sys.stderr.write('wrote state\\n')\n",
        "        emit({'type': 'ready'})\n",
        "    elif m['type'] == 'shutdown':\n",
        "        emit({'type': 'shutdown_ack'})\n",
        "        break\n",
    );
    for (folder, linked) in [("data", true), ("logs", true), ("data", false)] {
        let t = TempDir::new("sec-dirlink");
        let home = t.path().join("home");
        let proj = t.path().join("proj");
        let d = common::write_manifest(&proj.join(".zot/extensions"), "w", json!({"name": "w", "exec": "python3", "args": ["main.py"]}));
        fs::write(d.join("main.py"), EXT).expect("write");
        let victim = t.path().join("victim");
        fs::create_dir_all(&victim).expect("mkdir");
        fs::set_permissions(&victim, fs::Permissions::from_mode(0o755)).expect("chmod");
        let planted = match folder {
            "data" => home.join("data/project").join(common::project_id(&proj)).join("w"),
            _ => home.join(folder),
        };
        fs::create_dir_all(planted.parent().expect("parent")).expect("mkdir");
        fs::set_permissions(&home, fs::Permissions::from_mode(0o700)).expect("chmod");
        if linked {
            symlink(&victim, &planted).expect("symlink");
        }
        // Serve until its first `ready`, then end its stdin.
        let mut child = Command::new(BIN)
            .args(["serve", "--trust-project", "--ready-grace", "30"])
            .current_dir(&proj)
            .env("ZOT_HOME", &home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn zot");
        let stdin = child.stdin.take();
        let mut stdout = String::new();
        for line in std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().expect("stdout"))) {
            let line = line.expect("line");
            stdout += &line;
            stdout += "\n";
            if line.starts_with("{\"type\":\"ready\"") {
                break;
            }
        }
        drop(stdin);
        assert!(child.wait().expect("wait").success(), "{stdout}");
        let out = Out { code: 0, stdout, stderr: String::new() };
        let names: Vec<String> = fs::read_dir(&victim).expect("read").map(|e| e.expect("entry").file_name().to_string_lossy().into_owned()).collect();
        if linked {
            assert_eq!((names, mode(&victim)), (vec![], 0o755), "{folder}: the folder it points to was changed");
            let refused = out.stdout.lines().find(|l| l.contains("\"extension_error\"")).unwrap_or_default();
            assert!(refused.contains(&format!("{} is a symbolic link", planted.display())), "{folder}: {}", out.stdout);
        } else {
            assert!(out.stdout.contains("\"extension_ready\""), "{}", out.stdout);
            assert_eq!(fs::read_to_string(planted.join("state.txt")).expect("state written"), "x");
            assert_eq!(mode(&planted), 0o700);
        }
    }
}

/// The fingerprint cache's folder that is a symbolic link (planted in a
/// home others can write): `zot trust` still trusts, but writes no cache
/// through it (nor believes one read there). The control: a real `cache`
/// folder gets the cache.
#[test]
fn a_cache_folder_that_is_a_link_is_neither_written_nor_read() {
    use std::os::unix::fs::symlink;
    for linked in [true, false] {
        let t = TempDir::new("sec-cachelink");
        let home = t.path().join("home");
        let proj = t.path().join("proj");
        let d = common::write_manifest(&proj.join(".zot/extensions"), "a", json!({"name": "a", "exec": "python3", "args": ["m.py"]}));
        fs::write(d.join("m.py"), "print(1)\n").expect("write");
        let victim = t.path().join("victim");
        fs::create_dir_all(&victim).expect("mkdir");
        fs::create_dir_all(&home).expect("mkdir");
        fs::set_permissions(&home, fs::Permissions::from_mode(0o700)).expect("chmod");
        let cache = home.join("cache");
        if linked {
            symlink(&victim, &cache).expect("symlink");
        }
        let out = zot(&proj, &home, &["trust"], &[]);
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        let count = |p: &Path| fs::read_dir(p).map_or(0, |r| r.count());
        if linked {
            assert_eq!(count(&victim), 0, "a cache was written through the link");
        } else {
            assert_eq!(count(&cache), 1, "the control wrote no cache");
        }
    }
}

/// A log file that is a symbolic link (planted in a home others can write)
/// is refused with a line naming it, and what it points to keeps its
/// content and mode. The control: the same probe with a regular file there
/// is appended to, and made private, as every log is.
#[test]
fn a_log_file_that_is_a_link_is_refused_and_what_it_points_to_left_untouched() {
    use std::os::unix::fs::symlink;
    for linked in [true, false] {
        let t = TempDir::new("sec-loglink");
        let home = t.path().join("home");
        let logs = home.join("logs");
        fs::create_dir_all(&logs).expect("mkdir");
        fs::set_permissions(&home, fs::Permissions::from_mode(0o700)).expect("chmod");
        let victim = t.path().join("victim");
        let log = logs.join("ext-greet.log");
        let target = if linked { &victim } else { &log };
        fs::write(target, "precious\n").expect("write");
        fs::set_permissions(target, fs::Permissions::from_mode(0o644)).expect("chmod");
        if linked {
            symlink(&victim, &log).expect("symlink");
        }
        let script = format!("echo from-greet >&2; exec python3 '{}' --name greet", common::fixture("ext.py").display());
        let ext = common::write_manifest(t.path(), "greet", json!({"name": "greet", "exec": "sh", "args": ["-c", script]}));
        let out = zot(t.path(), &home, &["serve", "--no-ext", "--ready-grace", "30", "--ext", s(&ext)], &[]);
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        let text = fs::read_to_string(target).expect("read");
        if linked {
            assert_eq!((text.as_str(), mode(&victim)), ("precious\n", 0o644), "the victim was changed");
            let refused = out.stdout.lines().find(|l| l.contains("\"extension_error\"")).unwrap_or_default();
            assert!(
                refused.contains(&format!("{} is a symbolic link", log.display())) && refused.contains("\"extension\":\"greet\""),
                "{}",
                out.stdout
            );
        } else {
            assert!(text.starts_with("precious\n") && text.contains("from-greet"), "the control log was not written: {text}");
            assert_eq!(mode(&log), 0o600);
        }
    }
}
