//! Confinement (docs/protocol.md §9): what an extension or MCP server declares
//! ([`policy`]), what every confined process gets ([`base`]), and its
//! enforcement by the kernel — Landlock ([`landlock`]), a seccomp filter
//! ([`seccomp`]), rlimits, the process bound ([`procs`]: a cgroup or
//! `RLIMIT_NPROC`), no new privileges and no capabilities — built
//! before the fork into a [`Jail`] that the child enters between fork and
//! exec with system calls alone ([`Jail::enter`]). [`report`] says what
//! is enforced and what is not.
//!
//! Decisions where the protocol is silent:
//! - A declared limit above the host's own hard limit is set to that limit.
//! - `${EXT}` of an MCP server is its `cwd`.
//! - `${TMP}` folders left by a host that was killed are removed by the
//!   next host's first confined start (the host's pid is in the name).

pub mod base;
mod gitdirs;
pub mod landlock;
pub mod policy;
pub mod procs;
mod report;
pub mod resolve;
mod rmtree;
pub mod seccomp;
pub mod sys;

pub use policy::{Declared, Net};
pub use report::{kernel_support, report, Report};

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// `--confine` / `ZOT_CONFINE`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// Each extension's own `confine`.
    #[default]
    Declared,
    /// Those that declare nothing get the base set, the project to read
    /// and their data to write, no network.
    All,
    /// Nothing is confined.
    Off,
}

impl Mode {
    /// `declared`, `all` or `off`.
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "declared" => Some(Mode::Declared),
            "all" => Some(Mode::All),
            "off" => Some(Mode::Off),
            _ => None,
        }
    }

    /// The name [`Mode::parse`] reads.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Declared => "declared",
            Mode::All => "all",
            Mode::Off => "off",
        }
    }

    /// The mode `v` given as `what` (`--confine`, `ZOT_CONFINE`); the
    /// error (a usage error, exit 2) names both.
    pub fn named(v: &str, what: &str) -> Result<Mode, String> {
        Mode::parse(v).ok_or_else(|| format!("{what}: unknown mode {v:?} (declared, all, off)"))
    }

    /// `ZOT_CONFINE`, `declared` when unset.
    pub fn from_env() -> Result<Mode, String> {
        match std::env::var("ZOT_CONFINE") {
            Err(_) => Ok(Mode::Declared),
            Ok(v) if v.is_empty() => Ok(Mode::Declared),
            Ok(v) => Mode::named(&v, "ZOT_CONFINE"),
        }
    }
}

/// The line every front end writes on stderr at start under `--confine off`.
pub const OFF_NOTICE: &str = "zot: confinement is off (--confine off)";

/// The rules in force for `declared` (a manifest's or entry's own) under
/// `mode`; `base` anchors relative paths of the `all` default.
pub fn effective(declared: Option<&Declared>, mode: Mode, base: &Path) -> Option<Declared> {
    match (mode, declared) {
        (Mode::Off, _) => None,
        (_, Some(d)) => Some(d.clone()),
        (Mode::All, None) => Some(Declared::everything_default(base.to_path_buf())),
        (Mode::Declared, None) => None,
    }
}

/// Whether a confined process gets the host's variable `name`
/// (docs/protocol.md §9.1 `env`): the small set, or named in `env`.
fn passes(name: &str, env: &[String]) -> bool {
    const KEPT: [&str; 8] = ["PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TERM", "TMPDIR"];
    KEPT.contains(&name) || name.starts_with("LC_") || env.iter().any(|n| n == name)
}

/// What a display needs of one extension or server to show what it may
/// reach: enough to resolve its grants as a start would, creating nothing.
pub struct Subject<'a> {
    pub name: &'a str,
    /// Its folder (a server's `cwd`).
    pub dir: &'a Path,
    pub declared: Option<&'a Declared>,
    pub is_server: bool,
    /// A project's: its project's id (§2.2), which keys its data folder
    /// (§9.1).
    pub project_id: Option<String>,
    /// The program that runs (`exec` resolved), when it resolves.
    pub exec: Option<PathBuf>,
    pub args: &'a [String],
    /// Its manifest's (or entry's) `env`, unexpanded.
    pub env: &'a [(String, String)],
}

impl Subject<'_> {
    /// Its rules under `mode`, resolved against `zot_home` and `project`
    /// as its start would resolve them: `Ok(None)` when not confined; the
    /// error that makes its manifest (or entry) invalid.
    pub fn reach(&self, mode: Mode, zot_home: &Path, project: &Path) -> Result<Option<(Declared, resolve::Reach)>, String> {
        self.resolve(mode, zot_home, project, resolve::reach)
    }

    /// The error [`Subject::reach`] would give, found without resolving
    /// more than the paths it declares (discovery's check of a manifest).
    pub fn check(&self, mode: Mode, zot_home: &Path, project: &Path) -> Result<(), String> {
        self.resolve(mode, zot_home, project, resolve::check).map(drop)
    }

    fn resolve<T>(&self, mode: Mode, zot_home: &Path, project: &Path, how: fn(&resolve::Scope, &Declared) -> Result<T, String>) -> Result<Option<(Declared, T)>, String> {
        let Some(d) = effective(self.declared, mode, self.dir) else { return Ok(None) };
        let data = data_folder(zot_home, self.name, self.project_id.as_deref());
        let tmp = zot_home.join("tmp").join(format!("{}.0", self.name));
        let scope0 = resolve::Scope { zot_home, project, ext: self.dir, is_server: self.is_server, project_local: self.project_id.is_some(), data: &data, tmp: &tmp, exec: None, args: &[], env: &[] };
        let expand = |s: &str| {
            ["PROJECT", "EXT", "DATA", "TMP"].iter().fold(s.to_string(), |acc, n| acc.replace(&format!("${{{n}}}"), &scope0.lookup(n).unwrap_or_default()))
        };
        let args: Vec<String> = self.args.iter().map(|a| expand(a)).collect();
        let mut env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        if let Ok(own) = crate::envexpand::expand_all(self.env, |n| scope0.lookup(n)) {
            env.extend(own.into_iter().map(|(k, v)| (OsString::from(k), OsString::from(v))));
        }
        let scope = resolve::Scope { exec: self.exec.as_deref(), args: &args, env: &env, ..scope0 };
        Ok(Some((d.clone(), how(&scope, &d)?)))
    }

    /// `zot trust`'s line under `mode`: what it may read, write and reach.
    pub fn trust_line(&self, mode: Mode, zot_home: &Path, project: &Path) -> String {
        match self.reach(mode, zot_home, project) {
            Ok(None) => report::trust_line(self.name, None, &[], &[]),
            Ok(Some((d, reach))) => {
                let (reads, writes) = reach.items();
                report::trust_line(self.name, Some(&d), &reads, &writes)
            }
            Err(e) => format!("  {}: invalid: {e}", self.name),
        }
    }

    /// What listings say of it under `mode` (docs/protocol.md §9.3),
    /// with what it may read and write.
    pub fn listed(&self, mode: Mode, zot_home: &Path, project: &Path) -> Report {
        let mut r = listed(self.declared, mode, self.dir);
        if let Ok(Some((_, reach))) = self.reach(mode, zot_home, project) {
            (r.reads, r.writes) = reach.items();
        }
        r
    }
}

/// `zot trust`'s line of `name` made from a start's `report` (the grants
/// its jail was built from).
pub fn trust_line_of(name: &str, d: &Declared, report: &Report) -> String {
    report::trust_line(name, Some(d), &report.reads, &report.writes)
}

/// What listings say of `declared` under `mode` (docs/protocol.md §9.3).
pub fn listed(declared: Option<&Declared>, mode: Mode, base: &Path) -> Report {
    match effective(declared, mode, base) {
        Some(d) => report(Some(&d), false),
        None => report(declared.filter(|_| mode == Mode::Off), true),
    }
}

/// The data folder of a confined or project-local extension or server
/// (docs/protocol.md §9.1): `$ZOT_HOME/data/project/<id>/<name>/` for a
/// project's (`project`: its project's id, §2.2), else
/// `$ZOT_HOME/data/<name>/`, but `$ZOT_HOME/data/project/global/` for
/// one named `project`, whose folder would otherwise hold every
/// project's data (ids are hex: no project's folder is named `global`).
pub fn data_folder(home: &Path, name: &str, project: Option<&str>) -> PathBuf {
    match project {
        Some(id) => home.join("data").join("project").join(id).join(name),
        None if name == "project" => home.join("data").join("project").join("global"),
        None => home.join("data").join(name),
    }
}

/// A project's extension or server whose data folder is new: the folder
/// where it kept its data before project folders had their own
/// (`$ZOT_HOME/data/<name>/`), when there is one. That folder is left
/// where it is, never moved: it may as well be the data of the user's
/// own extension of the same name, which a project's must not get.
fn data_left_behind(home: &Path, name: &str, project: Option<&str>, new: &Path) -> Option<PathBuf> {
    let old = home.join("data").join(name);
    (project.is_some() || name == "project").then_some(())?;
    (!new.exists() && old.is_dir() && old != new).then_some(old)
}

/// A start's `${TMP}`, removed (with all it holds) when dropped.
#[derive(Debug)]
pub struct TmpDir(PathBuf);

impl TmpDir {
    /// `$ZOT_HOME/tmp/<name>.<instance>/`, created 0700, `<instance>` the
    /// start's `ZOT_EXT_INSTANCE`.
    fn create(home: &Path, name: &str, instance: crate::instance::Instance) -> std::io::Result<TmpDir> {
        let root = home.join("tmp");
        static SWEPT: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
        if let Ok(mut swept) = SWEPT.lock() {
            if !swept.contains(&root) {
                sweep(&root);
                swept.push(root.clone());
            }
        }
        let dir = root.join(format!("{name}.{}", instance.marker()));
        crate::home::create_own_dir(home, &dir)?;
        Ok(TmpDir(dir))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

/// Removes the `${TMP}` folders a host that is gone left behind (killed
/// before it could remove them), once per home and process.
fn sweep(root: &Path) {
    // Never through a link (what it points to is not zot's).
    if !std::fs::symlink_metadata(root).is_ok_and(|m| m.is_dir()) {
        return;
    }
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        // `<name>.<pid>.<n>` (earlier hosts: `<name>.<pid>-<n>`): the pid is the host's.
        let mut parts = name.rsplit('.');
        let last = parts.next().unwrap_or("");
        let pid = match last.split_once('-') {
            Some((p, _)) => Some(p),
            None => parts.next(),
        };
        let pid = pid.and_then(|p| p.parse::<libc::pid_t>().ok());
        // SAFETY: signal 0 only asks whether the process exists.
        if pid.is_some_and(|p| p > 0 && unsafe { libc::kill(p, 0) } != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)) {
            let _ = rmtree::remove(&e.path());
        }
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = rmtree::remove(&self.0);
    }
}

/// One start of one extension or server, as far as confinement goes:
/// its data folder, its `${TMP}`, and the rules in force.
pub struct Plan {
    pub rules: Option<Declared>,
    /// Under `--confine off`, what it declared (listed as not enforced).
    own_when_off: Option<Declared>,
    data: Option<PathBuf>,
    /// `${DATA}` of an unconfined start that names it (not its `data_dir`).
    named_data: Option<PathBuf>,
    pub tmp: Option<TmpDir>,
    /// The start's lineage, which names its `${TMP}` (confined).
    instance: Option<crate::instance::Instance>,
    project: PathBuf,
    ext: PathBuf,
    project_local: bool,
    is_server: bool,
    home: PathBuf,
    /// For the start's log: data left in the folder it had before.
    pub data_note: Option<String>,
}

/// What a [`Plan`] needs to know of the extension.
pub struct Who<'a> {
    pub name: &'a str,
    pub dir: &'a Path,
    pub declared: Option<&'a Declared>,
    pub project_local: bool,
    /// The project's id (docs/protocol.md §2.2) when `project_local`.
    pub project_id: Option<&'a str>,
    pub is_server: bool,
    /// Its `args` and `env` name `${DATA}` and `${TMP}` (which expand for
    /// every start, confined or not: docs/protocol.md §9.4).
    pub uses: (bool, bool),
}

/// Whether `args` and the values of `env` name `${DATA}` and `${TMP}`.
pub fn placeholders_in(args: &[String], env: &[(String, String)]) -> (bool, bool) {
    let all = || args.iter().chain(env.iter().map(|(_, v)| v));
    (all().any(|s| s.contains("${DATA}")), all().any(|s| s.contains("${TMP}")))
}

impl Plan {
    /// Creates the data folder (confined, declaring `confine` or
    /// project-local: docs/protocol.md §2.2) and `${TMP}` (confined).
    pub fn new(who: &Who, mode: Mode, home: &Path, project: &Path) -> Result<Plan, String> {
        let rules = effective(who.declared, mode, who.dir);
        let id = who.project_id.filter(|_| who.project_local);
        let data = (rules.is_some() || who.declared.is_some() || who.project_local).then(|| data_folder(home, who.name, id));
        let mut data_note = None;
        if let Some(d) = &data {
            data_note = data_left_behind(home, who.name, id, d).map(|old| {
                format!(
                    "its data folder is now {}; {} is left as it is (zot never moves data: it may be another extension's of the same name)",
                    d.display(),
                    old.display()
                )
            });
            crate::home::create_own_dir(home, d).map_err(|e| format!("cannot create its data folder {}: {e}", d.display()))?;
        }
        // Unconfined, `${DATA}` is the same folder (created when named),
        // and `${TMP}` a folder of the start as a confined one's.
        let named_data = (data.is_none() && who.uses.0).then(|| data_folder(home, who.name, id));
        if let Some(d) = &named_data {
            crate::home::create_own_dir(home, d).map_err(|e| format!("cannot create its data folder {}: {e}", d.display()))?;
        }
        let instance = (rules.is_some() || who.uses.1).then(crate::instance::Instance::reserve);
        let tmp = match instance {
            Some(i) => Some(TmpDir::create(home, who.name, i).map_err(|e| format!("cannot create its temporary folder: {e}"))?),
            None => None,
        };
        Ok(Plan {
            own_when_off: if rules.is_none() { who.declared.cloned() } else { None },
            rules,
            data,
            named_data,
            tmp,
            instance,
            project: project.to_path_buf(),
            ext: who.dir.to_path_buf(),
            project_local: who.project_local,
            is_server: who.is_server,
            home: home.to_path_buf(),
            data_note,
        })
    }

    /// What is enforced of this start's rules.
    pub fn report(&self) -> Report {
        report(self.rules.as_ref().or(self.own_when_off.as_ref()), self.rules.is_none())
    }

    /// `hello_ack`'s `data_dir`: its data folder, or (neither confined,
    /// declaring `confine` nor project-local) its own folder, as upstream.
    pub fn data_dir(&self) -> &Path {
        self.data.as_deref().unwrap_or(&self.ext)
    }

    /// What the host adds to the environment before the manifest's `env`.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env = Vec::new();
        if self.project_local {
            env.push(("PYTHONDONTWRITEBYTECODE".into(), "1".into()));
        }
        if let (Some(t), Some(_)) = (&self.tmp, &self.rules) {
            env.push(("TMPDIR".into(), t.path().display().to_string()));
        }
        env
    }

    /// `${PROJECT}`, `${EXT}`, `${DATA}`, `${TMP}`, then the host's variables.
    /// A variable of the host's environment that a confined start does not
    /// get is not expanded either (it reads as unset): `${SECRET}` in the
    /// manifest's own `env` would hand it over all the same.
    pub fn lookup(&self, name: &str) -> Option<String> {
        match self.placeholder(name) {
            Some(p) => Some(p.display().to_string()),
            None if self.withholds(name) => None,
            None => std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()),
        }
    }

    /// Whether the host's variable `name` is kept from this start: it is
    /// confined and `name` is neither in the small set nor in `confine.env`.
    pub fn withholds(&self, name: &str) -> bool {
        self.rules.as_ref().is_some_and(|d| !passes(name, &d.env))
    }

    /// `args` with `${PROJECT}`, `${EXT}`, `${DATA}` and `${TMP}` expanded
    /// (those this start has); nothing else in them is.
    pub fn args(&self, args: &[String]) -> Vec<String> {
        let mut out = args.to_vec();
        for name in ["PROJECT", "EXT", "DATA", "TMP"] {
            if let Some(v) = self.placeholder(name) {
                let (key, v) = (format!("${{{name}}}"), v.display().to_string());
                out.iter_mut().for_each(|a| *a = a.replace(&key, &v));
            }
        }
        out
    }

    fn placeholder(&self, name: &str) -> Option<&Path> {
        match name {
            "PROJECT" => Some(self.project.as_path()),
            "EXT" => Some(self.ext.as_path()),
            "DATA" => self.data.as_deref().or(self.named_data.as_deref()),
            "TMP" => self.tmp.as_ref().map(TmpDir::path),
            _ => None,
        }
    }

    /// What this start's paths resolve against, for `exec` run with
    /// `args` (expanded) in the child's environment `env`.
    pub fn scope<'a>(&'a self, exec: Option<&'a Path>, args: &'a [String], env: &'a [(OsString, OsString)]) -> resolve::Scope<'a> {
        resolve::Scope {
            zot_home: &self.home,
            project: &self.project,
            ext: &self.ext,
            is_server: self.is_server,
            project_local: self.project_local,
            data: self.data_dir(),
            tmp: self.tmp.as_ref().map_or(self.data_dir(), TmpDir::path),
            exec,
            args,
            env,
        }
    }

    /// Builds the jail of this start: `Ok(None)` when not confined; an
    /// error when it cannot be built or a `required` rule is not enforced
    /// (none is under `--confine off`).
    /// `log` gets one line per skipped path and one saying what is enforced.
    /// A jail's [`Jail::report`] says what it was built from.
    pub fn jail(&self, exec: &Path, args: &[String], env: &[(OsString, OsString)], log: &mut dyn FnMut(&str)) -> Result<Option<Jail>, String> {
        if self.rules.is_some() {
            procs::prepare();
        }
        let rep = self.report();
        if let Some(d) = self.rules.as_ref().and_then(|d| d.note.as_deref()) {
            log(d);
        }
        log(&rep.log_line());
        if self.rules.as_ref().or(self.own_when_off.as_ref()).is_some_and(|d| d.required) {
            // Never enforceable anywhere: not counted (docs/protocol.md §9.1).
            let missing: Vec<&str> = rep.not_enforced.iter().copied().filter(|k| !matches!(*k, "metadata" | "domains")).collect();
            if !missing.is_empty() {
                return Err(format!("its confinement is required but this kernel does not enforce: {}", missing.join(", ")));
            }
        }
        let Some(d) = &self.rules else { return Ok(None) };
        let mut jail = jail(self, d, exec, args, env, log)?;
        jail.instance = self.instance;
        jail.report = Report { reads: std::mem::take(&mut jail.report.reads), writes: std::mem::take(&mut jail.report.writes), ..rep };
        Ok(Some(jail))
    }
}

fn jail(plan: &Plan, d: &Declared, exec: &Path, args: &[String], env: &[(OsString, OsString)], log: &mut dyn FnMut(&str)) -> Result<Jail, String> {
    let reach = resolve::reach(&plan.scope(Some(exec), args, env), d)?;
    for n in &reach.notes {
        log(n);
    }
    let abi = landlock::abi();
    let mut skipped = Vec::new();
    let ruleset = match abi {
        0 => None,
        _ => {
            let tcp = match &d.net {
                Net::Any => None,
                Net::Off => Some(landlock::Tcp { connect: &[], bind: &[] }),
                Net::Ports { connect, bind } => Some(landlock::Tcp { connect, bind }),
            };
            Some(landlock::build(abi, &reach, tcp, &mut skipped)?.0)
        }
    };
    let mut jail = Jail::new(ruleset, seccomp::program(&seccomp::Rules::of(d, abi)), &d.limits);
    jail.env = d.env.clone();
    jail.procs = procs::Bound::new(d.limits.procs(), log);
    (jail.report.reads, jail.report.writes) = reach.items();
    Ok(jail)
}

/// What a start leaves that lasts until its last process has ended (the
/// reaper of [`crate::child`] holds it): its `${TMP}` and its cgroup.
#[derive(Debug)]
pub struct Remains {
    tmp: Option<TmpDir>,
    cgroup: Option<procs::Cgroup>,
}

impl Remains {
    /// What `tmp` and `jail` leave; `None` when nothing.
    pub fn of(tmp: Option<TmpDir>, jail: Option<Jail>) -> Option<Remains> {
        let mut cgroup = jail.and_then(Jail::into_cgroup);
        if let Some(c) = &mut cgroup {
            c.forget_join();
        }
        (tmp.is_some() || cgroup.is_some()).then_some(Remains { tmp, cgroup })
    }

    /// Kills every process of the start that its cgroup holds.
    pub fn kill(&self) {
        if let Some(c) = &self.cgroup {
            c.kill();
        }
    }

    /// Whether the start's last process has ended, where a cgroup can
    /// tell (`None`: it has none).
    pub fn ended(&self) -> Option<bool> {
        self.cgroup.as_ref().map(procs::Cgroup::empty)
    }
}

impl Drop for Remains {
    fn drop(&mut self) {
        // Its cgroup first: the folder goes once nothing can write in it.
        drop(self.cgroup.take());
        drop(self.tmp.take());
    }
}


/// Everything the child needs to confine itself, built before the fork.
pub struct Jail {
    ruleset: Option<OwnedFd>,
    filter: Option<Vec<libc::sock_filter>>,
    fprog: libc::sock_fprog,
    rlimits: [(libc::__rlimit_resource_t, libc::rlim_t); 4],
    caps: Option<(sys::user_cap_header, [sys::user_cap_data; 2])>,
    /// Drop the bounding set up to this capability (when we may).
    drop_bounding: Option<libc::c_int>,
    /// `confine.env`: the host's variables it gets beyond the small set.
    env: Vec<String>,
    /// The highest descriptor to close where `close_range` is missing.
    max_fd: libc::c_uint,
    /// `limits.procs`: its cgroup, or `RLIMIT_NPROC`.
    procs: procs::Bound,
    /// The lineage its start was planned for (its `ZOT_EXT_INSTANCE`).
    pub instance: Option<crate::instance::Instance>,
    /// What listings show of the start while it runs: what is enforced,
    /// and its grants as this jail resolved them (docs/protocol.md §9.1: a
    /// link changed after the start changes nothing in what is shown).
    pub report: Report,
}

// SAFETY: `fprog` points into `filter`, owned by the same value.
unsafe impl Send for Jail {}

impl Jail {
    fn new(ruleset: Option<OwnedFd>, filter: Option<Vec<libc::sock_filter>>, limits: &policy::Limits) -> Jail {
        let hard = |res| {
            let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            // SAFETY: fills `r`.
            unsafe { libc::getrlimit(res, &mut r) };
            r.rlim_max
        };
        let lim = |res, v: Option<u64>, scale: u64| (res, v.map_or(libc::RLIM_INFINITY, |v| (v.saturating_mul(scale)).min(hard(res))));
        let rlimits = [
            (libc::RLIMIT_CORE, 0),
            lim(libc::RLIMIT_DATA, limits.memory_mb, 1 << 20),
            lim(libc::RLIMIT_NOFILE, limits.open_files, 1),
            lim(libc::RLIMIT_CPU, limits.cpu_seconds, 1),
        ];
        let mut hdr = sys::user_cap_header { version: sys::LINUX_CAPABILITY_VERSION_3, pid: 0 };
        let mut data = [sys::user_cap_data::default(); 2];
        // SAFETY: version 3 takes two data structs.
        let got = unsafe { libc::syscall(libc::SYS_capget, &mut hdr, data.as_mut_ptr()) } == 0;
        // CAP_SETPCAP (8): needed to drop from the bounding set.
        let setpcap = got && data[0].effective & (1 << 8) != 0;
        // Every set emptied, permitted too: a root host that may not drop
        // the bounding set (no CAP_SETPCAP, as in a container that took it
        // away) would otherwise see its child regain the whole bounding
        // set at the exec of a root process; with no new privileges, that
        // exec gives no more than the permitted set it had, nothing.
        let caps = (got && data.iter().any(|d| d.inheritable | d.permitted | d.effective != 0)).then(|| (hdr, [sys::user_cap_data::default(); 2]));
        let last = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(63);
        let mut jail = Jail {
            ruleset,
            fprog: libc::sock_fprog { len: 0, filter: std::ptr::null_mut() },
            filter,
            rlimits,
            caps,
            drop_bounding: setpcap.then_some(last),
            env: Vec::new(),
            // SAFETY: sysconf only reads a limit.
            max_fd: u32::try_from(unsafe { libc::sysconf(libc::_SC_OPEN_MAX) }).unwrap_or(1024),
            procs: procs::Bound::default(),
            instance: None,
            report: report(None, true),
        };
        if let Some(f) = &mut jail.filter {
            jail.fprog = libc::sock_fprog { len: f.len() as u16, filter: f.as_mut_ptr() };
        }
        jail
    }

    /// Whether the host's variable `name` reaches the confined process
    /// (docs/protocol.md §9.1 `env`): the small set, or named in `env`.
    /// The host's own additions and the manifest's `env` are not asked.
    pub fn keeps_var(&self, name: &OsStr) -> bool {
        name.to_str().is_some_and(|n| passes(n, &self.env))
    }

    /// Its cgroup, which lasts as long as the start's processes.
    fn into_cgroup(self) -> Option<procs::Cgroup> {
        self.procs.into_cgroup()
    }

    /// Confines the calling process, after the `setsid` of its start
    /// ([`crate::child`]), in the order of docs/protocol.md §9.2: its
    /// cgroup, `setrlimit`, every descriptor above 2 closed, capabilities,
    /// no new privileges, Landlock, seccomp last. The errno of the step
    /// that failed.
    ///
    /// # Safety
    /// For the child between fork and exec: system calls only, nothing
    /// allocated, `self` read in place.
    pub unsafe fn enter(&self) -> Result<(), libc::c_int> {
        let errno = || *libc::__errno_location();
        let check = |r: libc::c_long| if r < 0 { Err(errno()) } else { Ok(()) };
        // Its cgroup (§9.2) first, then the limits (`RLIMIT_NPROC` among them).
        self.procs.enter()?;
        for (res, v) in self.rlimits {
            if v != libc::RLIM_INFINITY || res == libc::RLIMIT_CORE {
                check(libc::setrlimit(res, &libc::rlimit { rlim_cur: v, rlim_max: v }) as libc::c_long)?;
            }
        }
        self.close_inherited();
        if let Some(last) = self.drop_bounding {
            for cap in 0..=last {
                if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno() != libc::EINVAL {
                    return Err(errno());
                }
            }
        }
        if libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno() != libc::EINVAL {
            return Err(errno());
        }
        if let Some((hdr, data)) = &self.caps {
            check(libc::syscall(libc::SYS_capset, hdr as *const _, data.as_ptr()))?;
        }
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) as libc::c_long)?;
        if let Some(fd) = &self.ruleset {
            check(libc::syscall(sys::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32))?;
            libc::close(fd.as_raw_fd());
        }
        if self.filter.is_some() {
            check(libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &self.fprog as *const libc::sock_fprog) as libc::c_long)?;
        }
        Ok(())
    }

    /// Closes every descriptor above 2 (the child's own table: the host's
    /// stays) but the ruleset's, which Landlock still needs and which is
    /// closed once used.
    unsafe fn close_inherited(&self) {
        let close = |from: libc::c_uint, to: libc::c_uint| {
            if from <= to && libc::syscall(libc::SYS_close_range, from, to, 0u32) != 0 {
                for fd in from..=to.min(self.max_fd) {
                    libc::close(fd as libc::c_int);
                }
            }
        };
        match self.ruleset.as_ref().map(|fd| fd.as_raw_fd() as libc::c_uint) {
            Some(keep) if keep >= 3 => {
                close(3, keep - 1);
                close(keep + 1, libc::c_uint::MAX);
            }
            _ => close(3, libc::c_uint::MAX),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_folders_by_source() {
        let home = Path::new("/h");
        assert_eq!(data_folder(home, "weather", None), Path::new("/h/data/weather"));
        assert_eq!(data_folder(home, "weather", Some("0011223344556677")), Path::new("/h/data/project/0011223344556677/weather"));
        // Not the folder that holds every project's.
        assert_eq!(data_folder(home, "project", None), Path::new("/h/data/project/global"));
        assert_eq!(data_folder(home, "project", Some("00")), Path::new("/h/data/project/00/project"));
    }

    #[test]
    fn a_confined_process_keeps_the_small_set_and_its_names() {
        let mut j = Jail::new(None, None, &policy::Limits::default());
        j.env = vec!["API_KEY".into()];
        for kept in ["PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "TMPDIR", "API_KEY"] {
            assert!(j.keeps_var(OsStr::new(kept)), "{kept}");
        }
        for dropped in ["SECRET_API_KEY", "API_KEY2", "LD_PRELOAD", "SSH_AUTH_SOCK", "PYTHONDONTWRITEBYTECODE", "ZOT_HOME", "LC"] {
            assert!(!j.keeps_var(OsStr::new(dropped)), "{dropped}");
        }
    }
}
