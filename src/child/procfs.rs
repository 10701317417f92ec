//! What `/proc` says of processes, for the reaper: a process's group,
//! session and state, the instance marker in its environment, and this
//! process's children.

/// The variable that marks an extension's descendants as its own.
pub const INSTANCE_VAR: &str = "ZOT_EXT_INSTANCE";

/// What `/proc/PID/stat` says of a process.
#[cfg(target_os = "linux")]
pub(super) struct Stat {
    pub(super) zombie: bool,
    pub(super) pgid: u32,
    pub(super) sid: u32,
}

#[cfg(target_os = "linux")]
fn parse_stat(text: &str) -> Option<Stat> {
    // pid (comm) state ppid pgrp session ...; comm may hold spaces and parens.
    let rest = &text[text.rfind(')')? + 1..];
    let mut f = rest.split_whitespace();
    let state = f.next()?;
    let _ppid = f.next()?;
    let pgid = f.next()?.parse().ok()?;
    let sid = f.next()?.parse().ok()?;
    Some(Stat { zombie: state == "Z" || state == "X", pgid, sid })
}

#[cfg(target_os = "linux")]
pub(super) fn stat(pid: u32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

#[cfg(target_os = "linux")]
pub(super) fn own_stat() -> Option<Stat> {
    parse_stat(&std::fs::read_to_string("/proc/self/stat").ok()?)
}

/// The lineage marker in the environment `pid` was started with.
#[cfg(target_os = "linux")]
pub(super) fn instance_of(pid: u32) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let key = format!("{}=", INSTANCE_VAR);
    env.split(|&b| b == 0).find_map(|e| e.strip_prefix(key.as_bytes())).map(|v| String::from_utf8_lossy(v).into_owned())
}

/// This process's children: where the kernel lists them for the main
/// thread (orphans are all given to the first live thread, the main one),
/// else from every process's stat.
#[cfg(target_os = "linux")]
pub(super) fn children() -> Vec<u32> {
    let me = std::process::id();
    let parse = |s: &str| s.split_whitespace().filter_map(|p| p.parse().ok()).collect::<Vec<u32>>();
    let mut out = match std::fs::read_to_string(format!("/proc/self/task/{me}/children")) {
        Ok(s) => parse(&s),
        Err(_) => return children_by_walk(me),
    };
    // Children the other threads started (the extensions, and orphans
    // given to another thread while the main one was exiting) are in their
    // own lists; only orphans matter here, so the main list suffices
    // unless the main thread is gone.
    if std::fs::metadata(format!("/proc/self/task/{me}")).is_err() {
        out = children_by_walk(me);
    }
    out
}

#[cfg(target_os = "linux")]
fn children_by_walk(me: u32) -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir("/proc") else { return Vec::new() };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
            let Some(close) = s.rfind(')') else { return false };
            s[close + 1..].split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok()) == Some(me)
        })
        .collect()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::parse_stat;

    #[test]
    fn stat_fields_are_read_after_the_last_parenthesis() {
        let s = parse_stat("42 (a) b (c)) Z 1 7 9 0 0").expect("parsed");
        assert!(s.zombie);
        assert_eq!((s.pgid, s.sid), (7, 9));
        assert!(parse_stat("42 (x").is_none());
    }
}
