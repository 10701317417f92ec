//! The seccomp filter of a confined process, a classic BPF program built
//! before the fork: a foreign architecture (and x32) refused; `ptrace`,
//! `process_vm_readv`/`writev` and `io_uring_*` refused always; `socket()`
//! of families other than Unix and netlink refused with `net: false`
//! (only the two internet families allowed besides with ports), and of
//! `AF_UNIX` with `unix: false` (`socketpair` stays).

use super::sys::*;
use libc::{sock_filter, BPF_ABS, BPF_JEQ, BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_RET, BPF_W};

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
    // socket(): allowed unless a family check below refuses it.
    let mut families: Vec<(u32, bool)> = vec![(libc::AF_UNIX as u32, unix)];
    if sockets != Sockets::All {
        families.push((libc::AF_NETLINK as u32, true));
    }
    if sockets == Sockets::Internet {
        families.push((libc::AF_INET as u32, true));
        families.push((libc::AF_INET6 as u32, true));
    }
    let checks = families.len() * 2 + 2;
    p.push(jump(BPF_JMP | BPF_JEQ | BPF_K, nr(libc::SYS_socket), 0, checks as u8));
    p.push(stmt(BPF_LD | BPF_W | BPF_ABS, SECCOMP_DATA_ARG0));
    for (family, ok) in families {
        p.push(jump(BPF_JMP | BPF_JEQ | BPF_K, family, 0, 1));
        p.push(if ok { allow } else { refuse(libc::EACCES) });
    }
    p.push(if sockets == Sockets::All { allow } else { refuse(libc::EACCES) });
    p.push(allow);
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the program over one system call, as the kernel would.
    fn run(p: &[sock_filter], nr: libc::c_long, arg0: u32) -> u32 {
        let data = |k: u32| match k {
            SECCOMP_DATA_ARCH => AUDIT_ARCH_NATIVE.unwrap(),
            SECCOMP_DATA_NR => nr as u32,
            SECCOMP_DATA_ARG0 => arg0,
            _ => panic!("unexpected load {k}"),
        };
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let i = p[pc];
            match i.code as u32 {
                c if c == BPF_LD | BPF_W | BPF_ABS => acc = data(i.k),
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
        assert_eq!(run(&off, libc::SYS_socket, inet), eacces);
        assert_eq!(run(&off, libc::SYS_socket, libc::AF_INET6 as u32), eacces);
        assert_eq!(run(&off, libc::SYS_socket, 43), eacces, "AF_SMC");
        assert_eq!(run(&off, libc::SYS_socket, unix), eacces);
        assert_eq!(run(&off, libc::SYS_socket, libc::AF_NETLINK as u32), ok);
        assert_eq!(run(&off, libc::SYS_socketpair, unix), ok);
        assert_eq!(run(&off, libc::SYS_ptrace, 0), eperm);
        assert_eq!(run(&off, libc::SYS_io_uring_setup, 0), eperm);
        assert_eq!(run(&off, libc::SYS_read, 0), ok);
        let ports = program(Sockets::Internet, true).unwrap();
        assert_eq!((run(&ports, libc::SYS_socket, inet), run(&ports, libc::SYS_socket, unix)), (ok, ok));
        assert_eq!(run(&ports, libc::SYS_socket, 43), eacces);
        let any = program(Sockets::All, false).unwrap();
        assert_eq!((run(&any, libc::SYS_socket, 43), run(&any, libc::SYS_socket, unix)), (ok, eacces));
        assert_eq!(run(&any, libc::SYS_process_vm_readv, 0), eperm);
    }
}
