//! The names MCP tools and prompts are offered by (docs/protocol.md §8.3):
//! `mcp__<server>__<tool>`, every character outside `[A-Za-z0-9_-]`
//! replaced by `_`, at most 64 bytes, a longer one cut and ended with `_`
//! and 8 hex digits of a hash of the whole name, so two long names that
//! share a start stay apart.

/// The longest name offered, in bytes.
pub const MAX_NAME: usize = 64;

/// The name a server's tool (or prompt) `item` is offered by.
pub fn offered(server: &str, item: &str) -> String {
    let full = full(server, item);
    if full.len() <= MAX_NAME {
        return full;
    }
    let tail = format!("_{:08x}", fnv1a(format!("{server}\0{item}").as_bytes()));
    // Every byte is ASCII after sanitising, so any cut is on a boundary.
    format!("{}{tail}", &full[..MAX_NAME - tail.len()])
}

/// The name before it is cut to [`MAX_NAME`] bytes.
pub fn full(server: &str, item: &str) -> String {
    format!("mcp__{}__{}", sanitize(server), sanitize(item))
}

/// `s` with every character outside `[A-Za-z0-9_-]` replaced by `_`.
pub fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// 32-bit FNV-1a: small, stable across runs and builds.
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, b| (h ^ u32::from(*b)).wrapping_mul(0x0100_0193))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised_and_bounded() {
        assert_eq!(offered("fs", "read_file"), "mcp__fs__read_file");
        assert_eq!(offered("my.srv", "get weather/now"), "mcp__my_srv__get_weather_now");
        assert_eq!(offered("s", "é"), "mcp__s___");
        let a = offered("server", &"x".repeat(80));
        let b = offered("server", &format!("{}y", "x".repeat(80)));
        assert_eq!(a.len(), MAX_NAME);
        assert_eq!(b.len(), MAX_NAME);
        assert_ne!(a, b, "the hash tail keeps long names apart");
        assert!(a.starts_with("mcp__server__xxx"));
        let tail = &a[a.len() - 9..];
        assert!(tail.starts_with('_') && tail[1..].chars().all(|c| c.is_ascii_hexdigit()), "{a}");
        assert_eq!(offered("s", &"x".repeat(56)).len(), 64, "exactly 64 bytes is kept whole");
        assert!(!offered("s", &"x".repeat(56)).contains("_0"));
    }
}
