//! The seccomp filter of a confined process, a classic BPF program built
//! before the fork (docs/protocol.md §9.3). It answers `ENOSYS` to every
//! system call of another architecture or of x32 (their numbers mean other
//! calls), and refuses:
//! - always: `ptrace`, `process_vm_readv`/`writev`, `io_uring_*`, the
//!   keyring calls, extended-attribute writes, `fanotify_init`, `bpf`,
//!   `perf_event_open`, `userfaultfd`; System V IPC (`shm*`, `msg*`,
//!   `sem*`: segments, queues and semaphore sets shared by key or id with
//!   every process of the user, which no path rule sees, as `/dev/shm`
//!   is shared and granted only when declared); `ioctl` `TIOCSTI`, `TIOCLINUX`,
//!   `TIOCSCTTY` and `TIOCSPGRP` (typing into a terminal, or taking one);
//!   another process's limits and scheduling (allowed for itself, pid 0);
//!   a mode with the set-user-ID or set-group-ID bit, in `chmod` and its
//!   kin and in a file made by `open`/`openat`/`creat`/`mknod` (a program
//!   others could run with the user's rights, or a root host's), and
//!   `openat2` (its flags and mode are out of reach in memory: `ENOSYS`,
//!   so that libc and runtimes fall back to `openat`);
//! - with `net: false` or ports, `socket()` of families beyond Unix and
//!   netlink (with ports, TCP and UDP sockets of the two internet families
//!   too), and `socketpair` beyond `AF_UNIX`; with ports and no `bind`,
//!   `listen` (which binds an unbound socket to a port Landlock never sees);
//! - with `unix: false`, `socket(AF_UNIX)` and datagram `socketpair`s (a
//!   datagram socket may `sendto` any socket file by name);
//! - with `watch: false`, `inotify_add_watch` and `fcntl(F_NOTIFY)`;
//! - with `namespaces: false`, user namespaces (`unshare`/`clone` with
//!   `CLONE_NEWUSER`, `setns`; `clone3`, whose flags are out of reach in
//!   memory, answered `ENOSYS`, so that libc falls back to `clone`);
//! - on Landlock ABI below 3 (which cannot refuse it), `truncate` and
//!   opening with `O_TRUNC`.
//!
//! Sockets are refused with `EACCES` (as Landlock refuses a port), the
//! rest with `EPERM`.

use super::policy::{Declared, Net};
use super::sys::*;
use libc::{sock_filter, BPF_ABS, BPF_ALU, BPF_AND, BPF_JEQ, BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_RET, BPF_W};

/// Which families `socket()` may open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sockets {
    /// Every family.
    All,
    /// Unix, netlink, and IPv4/IPv6 (TCP then confined by port).
    Internet,
    /// Unix and netlink only.
    Local,
}

/// What the filter refuses beyond what it always refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    pub sockets: Sockets,
    /// `unix`: may open Unix sockets (and datagram pairs).
    pub unix: bool,
    /// Ports are declared without `bind`: `listen` is refused.
    pub no_listen: bool,
    /// `watch`: may use `inotify_add_watch`.
    pub watch: bool,
    /// `namespaces`: may create user namespaces.
    pub namespaces: bool,
    /// Landlock cannot refuse `truncate` (ABI below 3): the filter does.
    pub no_truncate: bool,
}

impl Rules {
    /// The rules of `d` on a kernel of Landlock ABI `abi`.
    pub fn of(d: &Declared, abi: u32) -> Rules {
        Rules {
            sockets: match d.net {
                Net::Off => Sockets::Local,
                Net::Ports { .. } => Sockets::Internet,
                Net::Any => Sockets::All,
            },
            unix: d.unix,
            no_listen: matches!(&d.net, Net::Ports { bind, .. } if bind.is_empty()),
            watch: d.watch,
            namespaces: d.namespaces,
            no_truncate: abi < 3,
        }
    }
}

const fn stmt(code: u32, k: u32) -> sock_filter {
    sock_filter { code: code as u16, jt: 0, jf: 0, k }
}

const fn jump(code: u32, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code: code as u16, jt, jf, k }
}

fn ret(v: u32) -> sock_filter {
    stmt(BPF_RET | BPF_K, v)
}

fn refuse(errno: i32) -> sock_filter {
    ret(libc::SECCOMP_RET_ERRNO | errno as u32)
}

fn allow() -> sock_filter {
    ret(libc::SECCOMP_RET_ALLOW)
}

fn load(arg: u32) -> sock_filter {
    stmt(BPF_LD | BPF_W | BPF_ABS, arg)
}

fn jeq(k: u32, jt: usize, jf: usize) -> sock_filter {
    debug_assert!(jt <= 255 && jf <= 255, "a jump too far for classic BPF");
    jump(BPF_JMP | BPF_JEQ | BPF_K, k, jt as u8, jf as u8)
}

fn nr(n: libc::c_long) -> u32 {
    n as u32
}

/// A block that ends in a return on every path.
type Block = Vec<sock_filter>;

/// Refused whatever its arguments.
fn always(errno: i32) -> Block {
    vec![refuse(errno)]
}

/// Refused when the low 32 bits of `arg` are one of `values`.
fn unless_none_of(arg: u32, values: &[u32], errno: i32) -> Block {
    let mut b = vec![load(arg)];
    for (i, &v) in values.iter().enumerate() {
        b.push(jeq(v, values.len() - i, 0));
    }
    b.extend([allow(), refuse(errno)]);
    b
}

/// Allowed only when every `(arg, value)` holds.
fn only_if(conds: &[(u32, u32)], errno: i32) -> Block {
    let mut b = Vec::new();
    for (i, &(arg, v)) in conds.iter().enumerate() {
        b.extend([load(arg), jeq(v, 0, 2 * (conds.len() - 1 - i) + 1)]);
    }
    b.extend([allow(), refuse(errno)]);
    b
}

/// Refused when `arg` has any bit of `mask`.
fn unless_bits(arg: u32, mask: u32, errno: i32) -> Block {
    vec![load(arg), jump(BPF_JMP | BPF_JSET | BPF_K, mask, 0, 1), refuse(errno), allow()]
}

/// The mode bits that make a program run with its owner's rights.
const SET_ID: u32 = libc::S_ISUID | libc::S_ISGID;

/// `open`/`openat`: flags in `flags`, mode in `mode`. Refused when
/// `no_truncate` and the flags truncate, or when it may make a file
/// (`O_CREAT`, `O_TMPFILE`) and the mode has a set-ID bit.
fn open(flags: u32, mode: u32, no_truncate: bool) -> Block {
    let makes = (libc::O_CREAT | (libc::O_TMPFILE & !libc::O_DIRECTORY)) as u32;
    let mut b = vec![load(flags)];
    if no_truncate {
        b.extend([jump(BPF_JMP | BPF_JSET | BPF_K, libc::O_TRUNC as u32, 0, 1), refuse(libc::EPERM)]);
    }
    b.extend([jump(BPF_JMP | BPF_JSET | BPF_K, makes, 1, 0), allow()]);
    b.extend(unless_bits(mode, SET_ID, libc::EPERM));
    b
}

/// `socket()`: allowed unless a family check refuses it. With ports, an
/// internet socket must be TCP or UDP: Landlock confines TCP ports only,
/// and an MPTCP (or SCTP) socket would reach any port (MPTCP connects to
/// a plain TCP listener as TCP).
fn socket(sockets: Sockets, unix: bool) -> Block {
    let mut families: Vec<(u32, bool)> = vec![(libc::AF_UNIX as u32, unix)];
    if sockets != Sockets::All {
        families.push((libc::AF_NETLINK as u32, true));
    }
    let inet = sockets == Sockets::Internet;
    let mut b = vec![load(SECCOMP_DATA_ARG0)];
    for (family, ok) in families {
        b.push(jeq(family, 0, 1));
        b.push(if ok { allow() } else { refuse(libc::EACCES) });
    }
    if inet {
        b.push(jeq(libc::AF_INET as u32, 2, 0));
        b.push(jeq(libc::AF_INET6 as u32, 1, 0));
    }
    b.push(if sockets == Sockets::All { allow() } else { refuse(libc::EACCES) });
    if inet {
        b.extend([
            load(SECCOMP_DATA_ARG1),
            stmt(BPF_ALU | BPF_AND | BPF_K, 0xf),
            jeq(libc::SOCK_STREAM as u32, 1, 0),
            jeq(libc::SOCK_DGRAM as u32, 0, 4),
            load(SECCOMP_DATA_ARG2),
            jeq(0, 3, 0),
            jeq(libc::IPPROTO_TCP as u32, 2, 0),
            jeq(libc::IPPROTO_UDP as u32, 1, 0),
            refuse(libc::EACCES),
            allow(),
        ]);
    }
    b
}

/// `socketpair()`: of `AF_UNIX` only unless any network; without `unix`,
/// of the connected types only (a datagram socket can `sendto` a socket
/// file by name). `None`: nothing to check.
fn socketpair(sockets: Sockets, unix: bool) -> Option<Block> {
    if sockets == Sockets::All && unix {
        return None;
    }
    let mut b = Vec::new();
    if !unix {
        b.extend([
            load(SECCOMP_DATA_ARG1),
            stmt(BPF_ALU | BPF_AND | BPF_K, 0xf),
            jeq(libc::SOCK_STREAM as u32, 1, 0),
            jeq(libc::SOCK_SEQPACKET as u32, 0, if sockets == Sockets::All { 1 } else { 3 }),
        ]);
    }
    if sockets != Sockets::All {
        b.extend([load(SECCOMP_DATA_ARG0), jeq(libc::AF_UNIX as u32, 0, 1)]);
    }
    b.extend([allow(), refuse(libc::EACCES)]);
    Some(b)
}

/// System V IPC's calls, each with its own number on the architectures
/// the filter is built for.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const SYSV_IPC: [libc::c_long; 12] = [
    libc::SYS_shmget,
    libc::SYS_shmat,
    libc::SYS_shmdt,
    libc::SYS_shmctl,
    libc::SYS_msgget,
    libc::SYS_msgsnd,
    libc::SYS_msgrcv,
    libc::SYS_msgctl,
    libc::SYS_semget,
    libc::SYS_semop,
    libc::SYS_semtimedop,
    libc::SYS_semctl,
];
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const SYSV_IPC: [libc::c_long; 0] = [];

/// The program; `None` where this architecture has no filter here.
pub fn program(r: &Rules) -> Option<Vec<sock_filter>> {
    let arch = AUDIT_ARCH_NATIVE?;
    let mut p = vec![load(SECCOMP_DATA_ARCH), jeq(arch, 1, 0), refuse(libc::ENOSYS), load(SECCOMP_DATA_NR)];
    if cfg!(target_arch = "x86_64") {
        p.push(jump(BPF_JMP | BPF_JSET | BPF_K, X32_SYSCALL_BIT, 0, 1));
        p.push(refuse(libc::ENOSYS));
    }
    let eperm = libc::EPERM;
    let mut calls: Vec<(libc::c_long, Block)> = [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_setxattr,
        libc::SYS_lsetxattr,
        libc::SYS_fsetxattr,
        SYS_setxattrat,
        libc::SYS_removexattr,
        libc::SYS_lremovexattr,
        libc::SYS_fremovexattr,
        SYS_removexattrat,
        libc::SYS_fanotify_init,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
    ]
    .into_iter()
    .chain(SYSV_IPC)
    .map(|n| (n, always(eperm)))
    .collect();
    // The kernel reads an ioctl's request as an unsigned int: its low 32
    // bits are all there is to compare.
    let tty = [libc::TIOCSTI, libc::TIOCLINUX, libc::TIOCSCTTY, libc::TIOCSPGRP].map(|r| r as u32);
    calls.push((libc::SYS_ioctl, unless_none_of(SECCOMP_DATA_ARG1, &tty, eperm)));
    // Another process's limits and scheduling: itself only, as pid 0 (a
    // pid is an int to the kernel: the low 32 bits are the whole of it).
    for n in [libc::SYS_prlimit64, libc::SYS_sched_setaffinity, libc::SYS_sched_setscheduler, libc::SYS_sched_setparam, libc::SYS_sched_setattr] {
        calls.push((n, only_if(&[(SECCOMP_DATA_ARG0, 0)], eperm)));
    }
    calls.push((libc::SYS_ioprio_set, only_if(&[(SECCOMP_DATA_ARG0, IOPRIO_WHO_PROCESS), (SECCOMP_DATA_ARG1, 0)], eperm)));
    calls.push((libc::SYS_setpriority, only_if(&[(SECCOMP_DATA_ARG0, libc::PRIO_PROCESS), (SECCOMP_DATA_ARG1, 0)], eperm)));
    if !r.watch {
        calls.push((libc::SYS_inotify_add_watch, always(eperm)));
        // dnotify, the older way to watch a folder: fcntl(F_NOTIFY).
        calls.push((libc::SYS_fcntl, unless_none_of(SECCOMP_DATA_ARG1, &[libc::F_NOTIFY as u32], eperm)));
    }
    if !r.namespaces {
        let newuser = libc::CLONE_NEWUSER as u32;
        calls.push((libc::SYS_unshare, unless_bits(SECCOMP_DATA_ARG0, newuser, eperm)));
        // The flags are clone's first argument on x86_64 and aarch64 alike.
        calls.push((libc::SYS_clone, unless_bits(SECCOMP_DATA_ARG0, newuser, eperm)));
        calls.push((libc::SYS_clone3, always(libc::ENOSYS)));
        calls.push((libc::SYS_setns, always(eperm)));
    }
    if r.no_truncate {
        calls.push((libc::SYS_truncate, always(eperm)));
    }
    calls.push((libc::SYS_openat, open(SECCOMP_DATA_ARG2, SECCOMP_DATA_ARG3, r.no_truncate)));
    calls.push((libc::SYS_openat2, always(libc::ENOSYS)));
    calls.push((libc::SYS_fchmod, unless_bits(SECCOMP_DATA_ARG1, SET_ID, eperm)));
    calls.push((libc::SYS_fchmodat, unless_bits(SECCOMP_DATA_ARG2, SET_ID, eperm)));
    calls.push((SYS_fchmodat2, unless_bits(SECCOMP_DATA_ARG2, SET_ID, eperm)));
    calls.push((libc::SYS_mknodat, unless_bits(SECCOMP_DATA_ARG2, SET_ID, eperm)));
    #[cfg(target_arch = "x86_64")]
    {
        calls.push((libc::SYS_open, open(SECCOMP_DATA_ARG1, SECCOMP_DATA_ARG2, r.no_truncate)));
        calls.push((libc::SYS_creat, if r.no_truncate { always(eperm) } else { unless_bits(SECCOMP_DATA_ARG1, SET_ID, eperm) }));
        calls.push((libc::SYS_chmod, unless_bits(SECCOMP_DATA_ARG1, SET_ID, eperm)));
        calls.push((libc::SYS_mknod, unless_bits(SECCOMP_DATA_ARG1, SET_ID, eperm)));
    }
    if r.no_listen {
        calls.push((libc::SYS_listen, always(libc::EACCES)));
    }
    calls.push((libc::SYS_socket, socket(r.sockets, r.unix)));
    if let Some(b) = socketpair(r.sockets, r.unix) {
        calls.push((libc::SYS_socketpair, b));
    }
    // Each block returns on every path, so a call that is not its own
    // finds its number still loaded for the next comparison.
    for (n, block) in calls {
        debug_assert!(block.len() <= 255, "a block too long for classic BPF");
        p.push(jeq(nr(n), 0, block.len()));
        p.extend(block);
    }
    p.push(allow());
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One system call as `seccomp_data` has it: the low 32 bits of its
    /// first three arguments.
    #[derive(Clone, Copy)]
    struct Call {
        arch: u32,
        nr: u32,
        args: [u32; 4],
    }

    fn call(n: libc::c_long, args: [u32; 3]) -> Call {
        call4(n, [args[0], args[1], args[2], 0])
    }

    fn call4(n: libc::c_long, args: [u32; 4]) -> Call {
        Call { arch: AUDIT_ARCH_NATIVE.unwrap(), nr: n as u32, args }
    }

    /// Runs the program over `c` as the kernel would.
    fn run(p: &[sock_filter], c: Call) -> u32 {
        let data = |k: u32| match k {
            SECCOMP_DATA_ARCH => c.arch,
            SECCOMP_DATA_NR => c.nr,
            SECCOMP_DATA_ARG0 => c.args[0],
            SECCOMP_DATA_ARG1 => c.args[1],
            SECCOMP_DATA_ARG2 => c.args[2],
            SECCOMP_DATA_ARG3 => c.args[3],
            _ => panic!("unexpected load {k}"),
        };
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let i = p[pc];
            match i.code as u32 {
                c if c == BPF_LD | BPF_W | BPF_ABS => acc = data(i.k),
                c if c == BPF_ALU | BPF_AND | BPF_K => acc &= i.k,
                c if c == BPF_RET | BPF_K => return i.k,
                c if c == BPF_JMP | BPF_JEQ | BPF_K || c == BPF_JMP | BPF_JSET | BPF_K => {
                    let hit = if c & BPF_JSET == BPF_JSET { acc & i.k != 0 } else { acc == i.k };
                    pc += usize::from(if hit { i.jt } else { i.jf });
                }
                c => panic!("unexpected op {c:#x}"),
            }
            pc += 1;
        }
    }

    const OK: u32 = libc::SECCOMP_RET_ALLOW;
    const EACCES: u32 = libc::SECCOMP_RET_ERRNO | libc::EACCES as u32;
    const EPERM: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
    const ENOSYS: u32 = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;

    /// The rules of `confine: {}` on a kernel of Landlock ABI 7.
    fn strict() -> Rules {
        Rules { sockets: Sockets::Local, unix: false, no_listen: false, watch: false, namespaces: false, no_truncate: false }
    }

    fn prog(r: Rules) -> Vec<sock_filter> {
        let p = program(&r).unwrap();
        // Every jump lands inside, on an instruction; the last returns.
        for (pc, i) in p.iter().enumerate() {
            if i.code as u32 & 0x07 == libc::BPF_JMP {
                assert!(pc + 1 + usize::from(i.jt.max(i.jf)) < p.len(), "jump out at {pc}");
            }
        }
        assert_eq!(p.last().map(|i| i.code as u32), Some(BPF_RET | BPF_K));
        assert!(p.len() < 4096, "BPF_MAXINSNS");
        p
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn sockets_by_family_type_and_protocol() {
        let (inet, unix) = (libc::AF_INET as u32, libc::AF_UNIX as u32);
        let off = prog(strict());
        let any = prog(Rules { sockets: Sockets::All, ..strict() });
        let sock = |p: &[sock_filter], family: u32| run(p, call(libc::SYS_socket, [family, libc::SOCK_STREAM as u32, 0]));
        assert_eq!(sock(&off, inet), EACCES);
        assert_eq!(sock(&off, libc::AF_INET6 as u32), EACCES);
        assert_eq!(sock(&off, 43), EACCES, "AF_SMC");
        assert_eq!(sock(&off, unix), EACCES);
        assert_eq!(sock(&off, libc::AF_NETLINK as u32), OK);
        let ports = prog(Rules { sockets: Sockets::Internet, unix: true, ..strict() });
        assert_eq!((sock(&ports, inet), sock(&ports, unix)), (OK, OK));
        assert_eq!(sock(&ports, 43), EACCES);
        let (stream, dgram) = (libc::SOCK_STREAM as u32 | libc::SOCK_CLOEXEC as u32, libc::SOCK_DGRAM as u32);
        let inet6 = libc::AF_INET6 as u32;
        for (args, want) in [
            ([inet, stream, 0], OK),
            ([inet6, stream, libc::IPPROTO_TCP as u32], OK),
            ([inet, dgram, 0], OK),
            ([inet6, dgram, libc::IPPROTO_UDP as u32], OK),
            ([inet, stream, libc::IPPROTO_MPTCP as u32], EACCES),
            ([inet6, stream, libc::IPPROTO_MPTCP as u32], EACCES),
            ([inet, libc::SOCK_SEQPACKET as u32, 0], EACCES),
            ([inet, stream, libc::IPPROTO_SCTP as u32], EACCES),
            ([inet, dgram, libc::IPPROTO_ICMP as u32], EACCES),
            ([inet, libc::SOCK_RAW as u32, libc::IPPROTO_TCP as u32], EACCES),
        ] {
            assert_eq!(run(&ports, call(libc::SYS_socket, args)), want, "{args:?}");
        }
        assert_eq!(run(&ports, call(libc::SYS_socket, [unix, stream, 0])), OK);
        assert_eq!(run(&ports, call(libc::SYS_read, [inet, stream, 262])), OK);
        assert_eq!(run(&any, call(libc::SYS_socket, [inet, stream, libc::IPPROTO_MPTCP as u32])), OK);
        assert_eq!((sock(&any, 43), sock(&any, unix)), (OK, EACCES));
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn socketpair_is_connected_and_unix_only_unless_declared() {
        let unix = libc::AF_UNIX as u32;
        let pair = |p: &[sock_filter], family: u32, ty: i32| run(p, call(libc::SYS_socketpair, [family, ty as u32, 0]));
        let cloexec = libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
        for r in [strict(), Rules { sockets: Sockets::Internet, ..strict() }, Rules { sockets: Sockets::All, ..strict() }] {
            let p = prog(r);
            assert_eq!(pair(&p, unix, libc::SOCK_STREAM), OK, "{r:?}");
            assert_eq!(pair(&p, unix, libc::SOCK_STREAM | cloexec), OK, "{r:?}");
            assert_eq!(pair(&p, unix, libc::SOCK_SEQPACKET), OK, "{r:?}");
            assert_eq!(pair(&p, unix, libc::SOCK_DGRAM), EACCES, "{r:?}");
            assert_eq!(pair(&p, unix, libc::SOCK_DGRAM | cloexec), EACCES, "{r:?}");
            assert_eq!(pair(&p, unix, libc::SOCK_RAW), EACCES, "{r:?}");
        }
        // Declared: a datagram pair; a family beyond Unix only with any network.
        let declared = prog(Rules { unix: true, ..strict() });
        assert_eq!(pair(&declared, unix, libc::SOCK_DGRAM), OK);
        assert_eq!(pair(&declared, libc::AF_TIPC as u32, libc::SOCK_STREAM), EACCES);
        assert_eq!(pair(&prog(strict()), libc::AF_TIPC as u32, libc::SOCK_STREAM), EACCES);
        let open = prog(Rules { sockets: Sockets::All, unix: true, ..strict() });
        assert_eq!(pair(&open, unix, libc::SOCK_DGRAM), OK);
        assert_eq!(pair(&open, libc::AF_TIPC as u32, libc::SOCK_DGRAM), OK);
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn listen_only_where_a_bind_port_is_declared() {
        let no_bind = prog(Rules { sockets: Sockets::Internet, no_listen: true, ..strict() });
        assert_eq!(run(&no_bind, call(libc::SYS_listen, [3, 128, 0])), EACCES);
        assert_eq!(run(&no_bind, call(libc::SYS_accept4, [3, 0, 0])), OK);
        let bind = prog(Rules { sockets: Sockets::Internet, ..strict() });
        assert_eq!(run(&bind, call(libc::SYS_listen, [3, 128, 0])), OK);
        let d = |net: serde_json::Value| super::super::policy::parse(&serde_json::json!({"net": net}), "/x".into()).unwrap();
        assert!(Rules::of(&d(serde_json::json!({"connect": [443]})), 7).no_listen);
        assert!(!Rules::of(&d(serde_json::json!({"connect": [443], "bind": [8080]})), 7).no_listen);
        assert!(!Rules::of(&d(serde_json::json!(false)), 7).no_listen, "no internet socket to listen on");
        assert!(!Rules::of(&d(serde_json::json!(true)), 7).no_listen);
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn always_refused_whatever_is_declared() {
        let open = Rules { sockets: Sockets::All, unix: true, no_listen: false, watch: true, namespaces: true, no_truncate: false };
        for r in [strict(), open] {
            let p = prog(r);
            for n in [
                libc::SYS_ptrace,
                libc::SYS_process_vm_readv,
                libc::SYS_process_vm_writev,
                libc::SYS_io_uring_setup,
                libc::SYS_io_uring_enter,
                libc::SYS_io_uring_register,
                libc::SYS_keyctl,
                libc::SYS_add_key,
                libc::SYS_request_key,
                libc::SYS_setxattr,
                libc::SYS_lsetxattr,
                libc::SYS_fsetxattr,
                SYS_setxattrat,
                libc::SYS_removexattr,
                libc::SYS_lremovexattr,
                libc::SYS_fremovexattr,
                SYS_removexattrat,
                libc::SYS_fanotify_init,
                libc::SYS_bpf,
                libc::SYS_perf_event_open,
                libc::SYS_userfaultfd,
                libc::SYS_shmget,
                libc::SYS_shmat,
                libc::SYS_shmdt,
                libc::SYS_shmctl,
                libc::SYS_msgget,
                libc::SYS_msgsnd,
                libc::SYS_msgrcv,
                libc::SYS_msgctl,
                libc::SYS_semget,
                libc::SYS_semop,
                libc::SYS_semtimedop,
                libc::SYS_semctl,
            ] {
                assert_eq!(run(&p, call(n, [0, 0, 0])), EPERM, "{n} under {r:?}");
            }
            // Reading extended attributes, and what is near the refused calls, stays.
            for n in [libc::SYS_getxattr, libc::SYS_lgetxattr, libc::SYS_fgetxattr, libc::SYS_listxattr, libc::SYS_read, libc::SYS_write, libc::SYS_inotify_init1, libc::SYS_fanotify_mark] {
                assert_eq!(run(&p, call(n, [0, 0, 0])), OK, "{n} under {r:?}");
            }
            assert_eq!(run(&p, call(464, [0, 0, 0])), OK, "getxattrat");
            assert_eq!(run(&p, call(465, [0, 0, 0])), OK, "listxattrat");
        }
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn terminal_ioctls_that_type_or_take_the_terminal() {
        let p = prog(strict());
        let ioctl = |req: u64| run(&p, call(libc::SYS_ioctl, [0, req as u32, (req >> 32) as u32]));
        for req in [libc::TIOCSTI, libc::TIOCLINUX, libc::TIOCSCTTY, libc::TIOCSPGRP] {
            assert_eq!(ioctl(req), EPERM, "{req:#x}");
            // The kernel reads the request as an unsigned int: high bits set change nothing.
            assert_eq!(ioctl(req | 0xdead_0000_0000), EPERM, "{req:#x} with high bits");
        }
        for req in [libc::TCGETS, libc::TIOCGPGRP, libc::TIOCGWINSZ, libc::FIONREAD, libc::TIOCNOTTY] {
            assert_eq!(ioctl(req), OK, "{req:#x}");
        }
        assert_eq!(run(&p, call(libc::SYS_ioctl, [0, libc::SYS_socket as u32, 0])), OK, "an ioctl is never taken for socket()");
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn limits_and_scheduling_of_itself_only() {
        let p = prog(strict());
        let host = 4242;
        for n in [libc::SYS_prlimit64, libc::SYS_sched_setaffinity, libc::SYS_sched_setscheduler, libc::SYS_sched_setparam, libc::SYS_sched_setattr] {
            assert_eq!(run(&p, call(n, [host, 0, 0])), EPERM, "{n}");
            assert_eq!(run(&p, call(n, [0, 0, 0])), OK, "{n} on itself");
        }
        let who = IOPRIO_WHO_PROCESS;
        assert_eq!(run(&p, call(libc::SYS_ioprio_set, [who, 0, 4])), OK);
        assert_eq!(run(&p, call(libc::SYS_ioprio_set, [who, host, 4])), EPERM);
        assert_eq!(run(&p, call(libc::SYS_ioprio_set, [2, 0, 4])), EPERM, "IOPRIO_WHO_PGRP");
        assert_eq!(run(&p, call(libc::SYS_ioprio_set, [3, 0, 4])), EPERM, "IOPRIO_WHO_USER root");
        let (process, pgrp, user) = (libc::PRIO_PROCESS, libc::PRIO_PGRP, libc::PRIO_USER);
        assert_eq!(run(&p, call(libc::SYS_setpriority, [process, 0, 10])), OK);
        assert_eq!(run(&p, call(libc::SYS_setpriority, [process, host, 10])), EPERM);
        assert_eq!(run(&p, call(libc::SYS_setpriority, [pgrp, 0, 10])), EPERM);
        assert_eq!(run(&p, call(libc::SYS_setpriority, [user, 0, 10])), EPERM);
        // Reading is not changing.
        assert_eq!(run(&p, call(libc::SYS_getpriority, [user, host, 0])), OK);
        assert_eq!(run(&p, call(libc::SYS_sched_getaffinity, [host, 0, 0])), OK);
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn watching_and_user_namespaces_unless_declared() {
        let (p, open) = (prog(strict()), prog(Rules { watch: true, namespaces: true, ..strict() }));
        assert_eq!(run(&p, call(libc::SYS_inotify_add_watch, [3, 0, 0])), EPERM);
        assert_eq!(run(&open, call(libc::SYS_inotify_add_watch, [3, 0, 0])), OK);
        let notify = libc::F_NOTIFY as u32;
        assert_eq!(run(&p, call(libc::SYS_fcntl, [3, notify, 0])), EPERM);
        assert_eq!(run(&open, call(libc::SYS_fcntl, [3, notify, 0])), OK);
        assert_eq!(run(&p, call(libc::SYS_fcntl, [3, libc::F_GETFL as u32, 0])), OK, "other fcntl commands stay");
        let newuser = libc::CLONE_NEWUSER as u32;
        let thread = (libc::CLONE_VM | libc::CLONE_FS | libc::CLONE_FILES | libc::CLONE_SIGHAND | libc::CLONE_THREAD) as u32;
        let fork = libc::SIGCHLD as u32;
        for (n, flags, strict_want) in [
            (libc::SYS_unshare, newuser, EPERM),
            (libc::SYS_unshare, newuser | libc::CLONE_NEWNS as u32, EPERM),
            (libc::SYS_unshare, libc::CLONE_FILES as u32, OK),
            (libc::SYS_clone, newuser | fork, EPERM),
            (libc::SYS_clone, fork, OK),
            (libc::SYS_clone, thread, OK),
            (libc::SYS_clone3, 0, ENOSYS),
            (libc::SYS_setns, 3, EPERM),
        ] {
            assert_eq!(run(&p, call(n, [flags, 0, 0])), strict_want, "{n} {flags:#x}");
            assert_eq!(run(&open, call(n, [flags, 0, 0])), OK, "{n} {flags:#x} declared");
        }
        let d = super::super::policy::parse(&serde_json::json!({"watch": true, "namespaces": true}), "/x".into()).unwrap();
        assert_eq!(Rules::of(&d, 7), Rules { watch: true, namespaces: true, ..strict() });
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn truncation_refused_by_the_filter_only_below_landlock_abi_3() {
        let d = super::super::policy::parse(&serde_json::json!({}), "/x".into()).unwrap();
        assert!(Rules::of(&d, 0).no_truncate && Rules::of(&d, 2).no_truncate && !Rules::of(&d, 3).no_truncate);
        let (old, new) = (prog(Rules::of(&d, 2)), prog(Rules::of(&d, 3)));
        let trunc = libc::O_WRONLY as u32 | libc::O_TRUNC as u32;
        let plain = libc::O_WRONLY as u32 | libc::O_CREAT as u32 | libc::O_APPEND as u32;
        for (c, want) in [
            (call(libc::SYS_truncate, [0, 0, 0]), EPERM),
            (call(libc::SYS_openat, [libc::AT_FDCWD as u32, 0, trunc]), EPERM),
            (call(libc::SYS_openat, [libc::AT_FDCWD as u32, 0, libc::O_RDONLY as u32 | libc::O_TRUNC as u32]), EPERM),
            (call(libc::SYS_openat, [libc::AT_FDCWD as u32, 0, plain]), OK),
            (call(libc::SYS_ftruncate, [3, 0, 0]), OK),
        ] {
            assert_eq!(run(&old, c), want, "{} {:?}", c.nr, c.args);
            assert_eq!(run(&new, c), OK, "{} {:?} on ABI 3", c.nr, c.args);
        }
        assert_eq!(run(&old, call(libc::SYS_openat2, [0, 0, 0])), ENOSYS);
        #[cfg(target_arch = "x86_64")]
        {
            assert_eq!(run(&old, call(libc::SYS_open, [0, trunc, 0])), EPERM);
            assert_eq!(run(&old, call(libc::SYS_open, [0, plain, 0])), OK);
            assert_eq!(run(&old, call(libc::SYS_creat, [0, 0o644, 0])), EPERM);
            assert_eq!(run(&new, call(libc::SYS_creat, [0, 0o644, 0])), OK);
        }
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn no_set_id_program_is_made_whatever_is_declared() {
        let open_rules = Rules { sockets: Sockets::All, unix: true, no_listen: false, watch: true, namespaces: true, no_truncate: false };
        let at = libc::AT_FDCWD as u32;
        let creat = (libc::O_WRONLY | libc::O_CREAT) as u32;
        let tmpfile = (libc::O_RDWR | libc::O_TMPFILE) as u32;
        for r in [strict(), open_rules, Rules { no_truncate: true, ..strict() }] {
            let p = prog(r);
            for (c, want) in [
                (call(libc::SYS_fchmod, [3, 0o4755, 0]), EPERM),
                (call(libc::SYS_fchmod, [3, 0o2755, 0]), EPERM),
                (call(libc::SYS_fchmod, [3, 0o1777, 0]), OK),
                (call(libc::SYS_fchmod, [3, 0o755, 0]), OK),
                (call(libc::SYS_fchmodat, [at, 0, 0o6755]), EPERM),
                (call(libc::SYS_fchmodat, [at, 0, 0o644]), OK),
                (call(SYS_fchmodat2, [at, 0, 0o4700]), EPERM),
                (call(SYS_fchmodat2, [at, 0, 0o700]), OK),
                (call(libc::SYS_mknodat, [at, 0, libc::S_IFREG | 0o4755]), EPERM),
                (call(libc::SYS_mknodat, [at, 0, libc::S_IFIFO | 0o600]), OK),
                (call4(libc::SYS_openat, [at, 0, creat, 0o4755]), EPERM),
                (call4(libc::SYS_openat, [at, 0, tmpfile, 0o2700]), EPERM),
                (call4(libc::SYS_openat, [at, 0, creat, 0o755]), OK),
                // Without O_CREAT the mode is not read: whatever is there stays.
                (call4(libc::SYS_openat, [at, 0, libc::O_RDONLY as u32, 0o4755]), OK),
                (call4(libc::SYS_openat, [at, 0, (libc::O_RDONLY | libc::O_DIRECTORY) as u32, 0o4755]), OK),
                (call(libc::SYS_openat2, [at, 0, 24]), ENOSYS),
            ] {
                assert_eq!(run(&p, c), want, "{} {:?} under {r:?}", c.nr, c.args);
            }
            #[cfg(target_arch = "x86_64")]
            {
                assert_eq!(run(&p, call(libc::SYS_chmod, [0, 0o4755, 0])), EPERM);
                assert_eq!(run(&p, call(libc::SYS_chmod, [0, 0o755, 0])), OK);
                assert_eq!(run(&p, call(libc::SYS_mknod, [0, libc::S_IFREG | 0o2755, 0])), EPERM);
                assert_eq!(run(&p, call(libc::SYS_open, [0, creat, 0o4755])), EPERM);
                assert_eq!(run(&p, call(libc::SYS_open, [0, creat, 0o644])), OK);
                assert_eq!(run(&p, call(libc::SYS_creat, [0, 0o4755, 0])), EPERM);
                let creat_plain = if r.no_truncate { EPERM } else { OK };
                assert_eq!(run(&p, call(libc::SYS_creat, [0, 0o644, 0])), creat_plain);
            }
        }
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn another_architecture_and_x32_get_enosys() {
        let p = prog(Rules { sockets: Sockets::All, unix: true, watch: true, namespaces: true, ..strict() });
        let i386 = 0x4000_0003; // AUDIT_ARCH_I386
        let arm = 0x4000_0028; // AUDIT_ARCH_ARM
        for arch in [i386, arm] {
            assert_eq!(run(&p, Call { arch, nr: 3, args: [0; 4] }), ENOSYS, "{arch:#x}");
        }
        if cfg!(target_arch = "x86_64") {
            assert_eq!(run(&p, call(libc::SYS_read as libc::c_long | X32_SYSCALL_BIT as libc::c_long, [0; 3])), ENOSYS, "x32");
        }
        assert_eq!(run(&p, call(libc::SYS_read, [0; 3])), OK);
    }
}
