//! The seccomp filter of a confined process, a classic BPF program built
//! before the fork: a foreign architecture (and x32) refused; `ptrace`,
//! `process_vm_readv`/`writev` and `io_uring_*` refused always, and so is
//! `ioctl` `TIOCSTI` (and `TIOCLINUX`): `/dev/tty` is open to a confined
//! process, and pushing bytes into its input would have the user's shell,
//! outside the confinement, run them as typed; `socket()`
//! of families other than Unix and netlink refused with `net: false`
//! (only the two internet families allowed besides with ports), and of
//! `AF_UNIX` with `unix: false` (`socketpair` stays).

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

const fn stmt(code: u32, k: u32) -> sock_filter {
    sock_filter { code: code as u16, jt: 0, jf: 0, k }
}

const fn jump(code: u32, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code: code as u16, jt, jf, k }
}

/// The program; `None` where this architecture has no filter here.
pub fn program(sockets: Sockets, unix: bool) -> Option<Vec<sock_filter>> {
    let arch = AUDIT_ARCH_NATIVE?;
    let ret = |v: u32| stmt(BPF_RET | BPF_K, v);
    let refuse = |errno: i32| ret(libc::SECCOMP_RET_ERRNO | errno as u32);
    let allow = ret(libc::SECCOMP_RET_ALLOW);
    let nr = |n: libc::c_long| n as u32;
    let mut p = vec![
        stmt(BPF_LD | BPF_W | BPF_ABS, SECCOMP_DATA_ARCH),
        jump(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
        refuse(libc::EPERM),
        stmt(BPF_LD | BPF_W | BPF_ABS, SECCOMP_DATA_NR),
    ];
    if cfg!(target_arch = "x86_64") {
        p.push(jump(BPF_JMP | BPF_JSET | BPF_K, X32_SYSCALL_BIT, 0, 1));
        p.push(refuse(libc::EPERM));
    }
    for n in [libc::SYS_ptrace, libc::SYS_process_vm_readv, libc::SYS_process_vm_writev, libc::SYS_io_uring_setup, libc::SYS_io_uring_enter, libc::SYS_io_uring_register] {
        p.push(jump(BPF_JMP | BPF_JEQ | BPF_K, nr(n), 0, 1));
        p.push(refuse(libc::EPERM));
    }
    // ioctl(fd, TIOCSTI | TIOCLINUX): the kernel reads the request as an
    // unsigned int, so its low 32 bits are all there is to compare.
    // Any other ioctl is allowed there: nothing below is about it.
    p.push(jump(BPF_JMP | BPF_JEQ | BPF_K, nr(libc::SYS_ioctl), 0, 5));
    p.push(stmt(BPF_LD | BPF_W | BPF_ABS, SECCOMP_DATA_ARG1));
    p.push(jump(BPF_JMP | BPF_JEQ | BPF_K, libc::TIOCSTI as u32, 1, 0));
    p.push(jump(BPF_JMP | BPF_JEQ | BPF_K, libc::TIOCLINUX as u32, 0, 1));
    p.push(refuse(libc::EPERM));
    p.push(allow);
    // socket(): allowed unless a family check below refuses it. With
    // ports, an internet socket must be TCP or UDP: Landlock confines TCP
    // ports only, and an MPTCP (or SCTP) socket would reach any port (MPTCP
    // connects to a plain TCP listener as TCP).
    let mut families: Vec<(u32, bool)> = vec![(libc::AF_UNIX as u32, unix)];
    if sockets != Sockets::All {
        families.push((libc::AF_NETLINK as u32, true));
    }
    let inet = sockets == Sockets::Internet;
    let inet_block = [
        stmt(BPF_LD | BPF_W | BPF_ABS, SECCOMP_DATA_ARG1),
        stmt(BPF_ALU | BPF_AND | BPF_K, 0xf),
        jump(BPF_JMP | BPF_JEQ | BPF_K, libc::SOCK_STREAM as u32, 1, 0),
        jump(BPF_JMP | BPF_JEQ | BPF_K, libc::SOCK_DGRAM as u32, 0, 4),
        stmt(BPF_LD | BPF_W | BPF_ABS, SECCOMP_DATA_ARG2),
        jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 3, 0),
        jump(BPF_JMP | BPF_JEQ | BPF_K, libc::IPPROTO_TCP as u32, 2, 0),
        jump(BPF_JMP | BPF_JEQ | BPF_K, libc::IPPROTO_UDP as u32, 1, 0),
        refuse(libc::EACCES),
        allow,
    ];
    let checks = families.len() * 2 + 2 + if inet { 2 + inet_block.len() } else { 0 };
    p.push(jump(BPF_JMP | BPF_JEQ | BPF_K, nr(libc::SYS_socket), 0, checks as u8));
    p.push(stmt(BPF_LD | BPF_W | BPF_ABS, SECCOMP_DATA_ARG0));
    for (family, ok) in families {
        p.push(jump(BPF_JMP | BPF_JEQ | BPF_K, family, 0, 1));
        p.push(if ok { allow } else { refuse(libc::EACCES) });
    }
    if inet {
        p.push(jump(BPF_JMP | BPF_JEQ | BPF_K, libc::AF_INET as u32, 2, 0));
        p.push(jump(BPF_JMP | BPF_JEQ | BPF_K, libc::AF_INET6 as u32, 1, 0));
    }
    p.push(if sockets == Sockets::All { allow } else { refuse(libc::EACCES) });
    if inet {
        p.extend(inet_block);
    }
    p.push(allow);
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the program over one system call, its argument as both
    /// `args[0]` and `args[1]`, as the kernel would.
    fn run(p: &[sock_filter], nr: libc::c_long, arg0: u32) -> u32 {
        run3(p, nr, [arg0, arg0, 0])
    }

    fn run3(p: &[sock_filter], nr: libc::c_long, args: [u32; 3]) -> u32 {
        let data = |k: u32| match k {
            SECCOMP_DATA_ARCH => AUDIT_ARCH_NATIVE.unwrap(),
            SECCOMP_DATA_NR => nr as u32,
            SECCOMP_DATA_ARG0 => args[0],
            SECCOMP_DATA_ARG1 => args[1],
            SECCOMP_DATA_ARG2 => args[2],
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

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn refuses_what_it_should_and_nothing_else() {
        let eacces = libc::SECCOMP_RET_ERRNO | libc::EACCES as u32;
        let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        let ok = libc::SECCOMP_RET_ALLOW;
        let (inet, unix) = (libc::AF_INET as u32, libc::AF_UNIX as u32);
        let off = program(Sockets::Local, false).unwrap();
        let any = program(Sockets::All, false).unwrap();
        assert_eq!(run(&off, libc::SYS_socket, inet), eacces);
        assert_eq!(run(&off, libc::SYS_socket, libc::AF_INET6 as u32), eacces);
        assert_eq!(run(&off, libc::SYS_socket, 43), eacces, "AF_SMC");
        assert_eq!(run(&off, libc::SYS_socket, unix), eacces);
        assert_eq!(run(&off, libc::SYS_socket, libc::AF_NETLINK as u32), ok);
        assert_eq!(run(&off, libc::SYS_socketpair, unix), ok);
        assert_eq!(run(&off, libc::SYS_ptrace, 0), eperm);
        assert_eq!(run(&off, libc::SYS_io_uring_setup, 0), eperm);
        assert_eq!(run(&off, libc::SYS_read, 0), ok);
        // run() passes its argument as both args[0] and args[1].
        assert_eq!(run(&off, libc::SYS_ioctl, libc::TIOCSTI as u32), eperm);
        assert_eq!(run(&off, libc::SYS_ioctl, libc::TIOCLINUX as u32), eperm);
        assert_eq!(run(&off, libc::SYS_ioctl, libc::TCGETS as u32), ok);
        assert_eq!(run(&off, libc::SYS_ioctl, libc::SYS_socket as u32), ok, "an ioctl is never taken for socket()");
        assert_eq!(run(&any, libc::SYS_ioctl, libc::TIOCSTI as u32), eperm);
        let ports = program(Sockets::Internet, true).unwrap();
        assert_eq!((run(&ports, libc::SYS_socket, inet), run(&ports, libc::SYS_socket, unix)), (ok, ok));
        assert_eq!(run(&ports, libc::SYS_socket, 43), eacces);
        let (stream, dgram) = (libc::SOCK_STREAM as u32 | libc::SOCK_CLOEXEC as u32, libc::SOCK_DGRAM as u32);
        let inet6 = libc::AF_INET6 as u32;
        for (args, want) in [
            ([inet, stream, 0], ok),
            ([inet6, stream, libc::IPPROTO_TCP as u32], ok),
            ([inet, dgram, 0], ok),
            ([inet6, dgram, libc::IPPROTO_UDP as u32], ok),
            ([inet, stream, libc::IPPROTO_MPTCP as u32], eacces),
            ([inet6, stream, libc::IPPROTO_MPTCP as u32], eacces),
            ([inet, libc::SOCK_SEQPACKET as u32, 0], eacces),
            ([inet, stream, libc::IPPROTO_SCTP as u32], eacces),
            ([inet, dgram, libc::IPPROTO_ICMP as u32], eacces),
            ([inet, libc::SOCK_RAW as u32, libc::IPPROTO_TCP as u32], eacces),
        ] {
            assert_eq!(run3(&ports, libc::SYS_socket, args), want, "{args:?}");
        }
        assert_eq!(run3(&ports, libc::SYS_socket, [unix, stream, 0]), ok);
        assert_eq!(run3(&ports, libc::SYS_read, [inet, stream, 262]), ok);
        assert_eq!(run3(&any, libc::SYS_socket, [inet, stream, libc::IPPROTO_MPTCP as u32]), ok);
        assert_eq!((run(&any, libc::SYS_socket, 43), run(&any, libc::SYS_socket, unix)), (ok, eacces));
        assert_eq!(run(&any, libc::SYS_process_vm_readv, 0), eperm);
    }
}
