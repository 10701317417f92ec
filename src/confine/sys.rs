//! The Landlock and seccomp uapi that `libc` lacks, under their names in
//! `linux/landlock.h` and `linux/audit.h`.

#![allow(non_camel_case_types, non_upper_case_globals)]

pub const SYS_landlock_create_ruleset: libc::c_long = 444;
pub const SYS_landlock_add_rule: libc::c_long = 445;
pub const SYS_landlock_restrict_self: libc::c_long = 446;

pub const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1 << 0;
pub const LANDLOCK_RULE_PATH_BENEATH: u32 = 1;
pub const LANDLOCK_RULE_NET_PORT: u32 = 2;

pub const LANDLOCK_ACCESS_FS_EXECUTE: u64 = 1 << 0;
pub const LANDLOCK_ACCESS_FS_WRITE_FILE: u64 = 1 << 1;
pub const LANDLOCK_ACCESS_FS_READ_FILE: u64 = 1 << 2;
pub const LANDLOCK_ACCESS_FS_READ_DIR: u64 = 1 << 3;
pub const LANDLOCK_ACCESS_FS_REMOVE_DIR: u64 = 1 << 4;
pub const LANDLOCK_ACCESS_FS_REMOVE_FILE: u64 = 1 << 5;
pub const LANDLOCK_ACCESS_FS_MAKE_CHAR: u64 = 1 << 6;
pub const LANDLOCK_ACCESS_FS_MAKE_DIR: u64 = 1 << 7;
pub const LANDLOCK_ACCESS_FS_MAKE_REG: u64 = 1 << 8;
pub const LANDLOCK_ACCESS_FS_MAKE_SOCK: u64 = 1 << 9;
pub const LANDLOCK_ACCESS_FS_MAKE_FIFO: u64 = 1 << 10;
pub const LANDLOCK_ACCESS_FS_MAKE_BLOCK: u64 = 1 << 11;
pub const LANDLOCK_ACCESS_FS_MAKE_SYM: u64 = 1 << 12;
/// ABI 2.
pub const LANDLOCK_ACCESS_FS_REFER: u64 = 1 << 13;
/// ABI 3.
pub const LANDLOCK_ACCESS_FS_TRUNCATE: u64 = 1 << 14;
/// ABI 5.
pub const LANDLOCK_ACCESS_FS_IOCTL_DEV: u64 = 1 << 15;

/// ABI 4.
pub const LANDLOCK_ACCESS_NET_BIND_TCP: u64 = 1 << 0;
pub const LANDLOCK_ACCESS_NET_CONNECT_TCP: u64 = 1 << 1;

/// ABI 6.
pub const LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
pub const LANDLOCK_SCOPE_SIGNAL: u64 = 1 << 1;

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct landlock_ruleset_attr {
    pub handled_access_fs: u64,
    /// ABI 4.
    pub handled_access_net: u64,
    /// ABI 6.
    pub scoped: u64,
}

#[repr(C, packed)]
#[derive(Debug, Clone, Copy)]
pub struct landlock_path_beneath_attr {
    pub allowed_access: u64,
    pub parent_fd: i32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct landlock_net_port_attr {
    pub allowed_access: u64,
    pub port: u64,
}

/// `AUDIT_ARCH_*` of the architecture this is built for, as `seccomp_data.arch` holds it.
#[cfg(target_arch = "x86_64")]
pub const AUDIT_ARCH_NATIVE: Option<u32> = Some(0xC000_003E); // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
pub const AUDIT_ARCH_NATIVE: Option<u32> = Some(0xC000_00B7); // AUDIT_ARCH_AARCH64
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const AUDIT_ARCH_NATIVE: Option<u32> = None;

/// The `*xattrat` calls (Linux 6.13), numbered alike on every architecture.
pub const SYS_setxattrat: libc::c_long = 463;
pub const SYS_removexattrat: libc::c_long = 466;

/// `fchmodat2` (Linux 6.6), numbered alike on every architecture.
pub const SYS_fchmodat2: libc::c_long = 452;

/// `IOPRIO_WHO_PROCESS` of `ioprio_set`.
pub const IOPRIO_WHO_PROCESS: u32 = 1;

/// `__X32_SYSCALL_BIT`: x32 system calls on x86_64 carry it.
pub const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// Offsets in `struct seccomp_data`.
pub const SECCOMP_DATA_NR: u32 = 0;
pub const SECCOMP_DATA_ARCH: u32 = 4;
/// The low 32 bits of `args[0]` (little-endian).
pub const SECCOMP_DATA_ARG0: u32 = 16;
/// The low 32 bits of `args[1]`.
pub const SECCOMP_DATA_ARG1: u32 = 24;
/// The low 32 bits of `args[2]`.
pub const SECCOMP_DATA_ARG2: u32 = 32;
/// The low 32 bits of `args[3]`.
pub const SECCOMP_DATA_ARG3: u32 = 40;

/// `struct __user_cap_header_struct` / `__user_cap_data_struct`, version 3.
pub const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct user_cap_header {
    pub version: u32,
    pub pid: i32,
}
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct user_cap_data {
    pub effective: u32,
    pub permitted: u32,
    pub inheritable: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    #[test]
    fn layouts_match_the_kernel_headers() {
        assert_eq!(size_of::<landlock_ruleset_attr>(), 24);
        assert_eq!(offset_of!(landlock_ruleset_attr, handled_access_net), 8);
        assert_eq!(offset_of!(landlock_ruleset_attr, scoped), 16);
        assert_eq!(size_of::<landlock_path_beneath_attr>(), 12);
        assert_eq!(align_of::<landlock_path_beneath_attr>(), 1);
        assert_eq!(offset_of!(landlock_path_beneath_attr, parent_fd), 8);
        assert_eq!(size_of::<landlock_net_port_attr>(), 16);
        assert_eq!(offset_of!(landlock_net_port_attr, port), 8);
        assert_eq!(size_of::<user_cap_header>(), 8);
        assert_eq!(size_of::<user_cap_data>(), 12);
        assert_eq!(offset_of!(libc::seccomp_data, arch) as u32, SECCOMP_DATA_ARCH);
        assert_eq!(offset_of!(libc::seccomp_data, args) as u32, SECCOMP_DATA_ARG0);
        assert_eq!(LANDLOCK_ACCESS_FS_IOCTL_DEV, 0x8000);
    }
}
