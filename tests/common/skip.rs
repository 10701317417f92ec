//! How a test that cannot run here (a tool or kernel feature missing)
//! says so. It stays a passing test to cargo, so `make test`'s total
//! (.ci/test-total) needs to learn of it whatever cargo captures: the
//! line `SKIP: <why>` goes straight to the process's stderr (past the
//! harness's capture of `eprintln!`), and, when `ZOT_TEST_SKIPS` names a
//! file, one record `<test binary>\t<test>` is appended to it, which the
//! total reads even when the line is lost. No dependencies: the total's
//! own test includes this file into a project of its own.

/// Says that the calling test skips, and why. Call it once, then return.
pub fn skip(why: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("SKIP: {why}\n").as_bytes());
    let Some(file) = std::env::var_os("ZOT_TEST_SKIPS").filter(|f| !f.is_empty()) else { return };
    let exe = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default();
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("main");
    // One write of one short line to a file opened for appending: records
    // of tests running at once do not interleave.
    let record = format!("{exe}\t{test}\n");
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .and_then(|mut f| f.write_all(record.as_bytes()));
}
