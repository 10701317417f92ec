//! The line decoder under fire (issue 5, reliability). A seeded PRNG
//! written here (splitmix64, no crates) makes hundreds of thousands of
//! lines: frames of every `ExtFrame` and `HostFrame` type with random
//! field types and ids of every JSON type, the same with bytes flipped,
//! inserted, deleted, duplicated or cut, byte and token soups, invalid
//! UTF-8, NUL bytes, CRLF, duplicate keys, huge numbers, very long strings
//! and deep nesting. `decode` must never panic, and every frame it accepts
//! must survive `encode` → `decode` unchanged, as one line.
//!
//! The live part sends thousands of those lines through a real extension's
//! stdout (tests/fixtures/spew.py) while tools of that extension and of a
//! healthy one keep being called: every call is answered, none stalls, and
//! each junk line is logged as skipped, exactly once. The host's reader
//! thread runs on a small stack (`THREAD_STACK`); the deep nesting lines
//! check that decoding on it does not overflow.
//!
//! Environment: `ZOT_FUZZ_ITERS` (generated cases, default 200000),
//! `ZOT_FUZZ_SEED` (default fixed), `ZOT_FUZZ_LIVE_LINES` (default 8000).

mod common;

use common::*;
use serde_json::{json, Value};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zot_host::protocol::{decode, encode, DecodeError, ExtFrame, Frame, HostFrame};

const DEFAULT_SEED: u64 = 0x5eed_2024_0005_0001;

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => {
            let v = v.trim();
            let parsed = match v.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => v.parse(),
            };
            parsed.unwrap_or_else(|_| panic!("{name}={v:?} is not a number"))
        }
        Err(_) => default,
    }
}

// ----- the PRNG ----------------------------------------------------------------

/// splitmix64: tiny, fast, and every seed gives a full-period stream.
struct Rng(u64);

impl Rng {
    /// The generator of case `index` under `seed`: any case can be replayed
    /// alone from the two numbers a failure prints.
    fn for_case(seed: u64, index: u64) -> Rng {
        let mut r = Rng(seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        r.next();
        r
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability `num / den`.
    fn chance(&mut self, num: usize, den: usize) -> bool {
        self.below(den) < num
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

// ----- JSON text, including what serde_json::Value cannot hold ------------------

/// JSON as text: raw tokens (huge numbers, invalid literals), strings with
/// raw bytes inside the quotes, and objects with duplicate keys.
enum J {
    Raw(Vec<u8>),
    Str(String),
    /// Bytes between quotes as they are (escapes, invalid UTF-8, controls).
    RawStr(Vec<u8>),
    Arr(Vec<J>),
    Obj(Vec<(J, J)>),
}

fn s(x: &str) -> J {
    J::Str(x.to_string())
}

fn emit(j: &J, rng: &mut Rng, spaced: bool, out: &mut Vec<u8>) {
    let ws = |rng: &mut Rng, out: &mut Vec<u8>| {
        if spaced && rng.chance(1, 4) {
            out.extend_from_slice(rng.pick(&[&b" "[..], b"  ", b"\t", b"\r\n", b"\n", b" \r "]));
        }
    };
    match j {
        J::Raw(b) => out.extend_from_slice(b),
        J::Str(t) => out.extend_from_slice(serde_json::to_string(t).expect("string").as_bytes()),
        J::RawStr(b) => {
            out.push(b'"');
            out.extend_from_slice(b);
            out.push(b'"');
        }
        J::Arr(items) => {
            out.push(b'[');
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                ws(rng, out);
                emit(it, rng, spaced, out);
            }
            ws(rng, out);
            out.push(b']');
        }
        J::Obj(fields) => {
            out.push(b'{');
            for (i, (k, v)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                ws(rng, out);
                emit(k, rng, spaced, out);
                ws(rng, out);
                out.push(b':');
                ws(rng, out);
                emit(v, rng, spaced, out);
            }
            ws(rng, out);
            out.push(b'}');
        }
    }
}

const NUMBERS: &[&str] = &[
    "0", "-0", "1", "-1", "7", "42", "1.5", "-2.25", "0.1", "1e2", "1E+2", "1e-7", "1e400", "-1e400", "1E-400",
    "1e308", "2.2250738585072014e-308", "5e-324", "99999999999999999999999", "-99999999999999999999999",
    "18446744073709551615", "18446744073709551616", "-9223372036854775808", "-9223372036854775809",
    "9223372036854775807", "4294967295", "4294967296", "-4294967296", "0.30000000000000004",
    "123456789012345678901234567890.123456789e-5", "1.7976931348623157e308", "1.7976931348623159e308",
    // Not JSON numbers.
    "01", "1.", ".5", "+1", "-", "1e", "1e+", "0x10", "NaN", "Infinity", "-Infinity", "1_000", "--1",
];

const STRINGS: &[&str] = &[
    "", "x", "echo", "ready", "hello", "tool_result", "héllo ✓", "日本語", "😀", "a\u{0}b", "\u{0}", "line\nbreak",
    "cr\r\nlf", "tab\there", "quote\"back\\slash", "\u{7f}\u{80}\u{ffff}", "\u{1b}[31mred\u{1b}[0m", "{\"type\":\"ready\"}",
    " ", "🦀🦀🦀", "\u{feff}bom", "\u{2028}\u{2029}", "0", "null",
];

/// Bytes for the inside of a string that a serializer would never write.
const RAW_STRINGS: &[&[u8]] = &[
    b"\\u0000",
    b"\\ud800",
    b"\\udfff",
    b"\\ud83d\\ude00",
    b"\\ud83d",
    b"\\ud83dx",
    b"\\uDC00\\uD800",
    b"\\x41",
    b"\\",
    b"\\u12",
    b"\\uzzzz",
    b"\xff\xfe",
    b"\xc3",
    b"\xc0\x80",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xe2\x82",
    b"a\x00b",
    b"\x01\x1f",
    b"tab\tin",
    b"new\nline",
    b"\r",
    b"\\/\\b\\f\\n\\r\\t\\\"\\\\",
];

const FRAME_TYPES_EXT: &[&str] = &[
    "hello",
    "register_command",
    "register_tool",
    "subscribe",
    "ready",
    "command_response",
    "tool_result",
    "event_intercept_response",
    "notify",
    "clear_notes",
    "open_panel",
    "panel_render",
    "panel_close",
    "submit",
    "shutdown_ack",
];

const FRAME_TYPES_HOST: &[&str] = &[
    "hello_ack",
    "command_invoked",
    "tool_call",
    "tool_cancel",
    "event",
    "event_intercept",
    "panel_key",
    "panel_close",
    "shutdown",
];

#[derive(Clone, Copy)]
enum Kind {
    Str,
    StrList,
    Obj,
    Bool,
    Id,
    U32,
    Blocks,
    Panel,
    Any,
}

use Kind::*;

/// The fields of each frame type and the type each should have.
fn fields_of(ty: &str) -> &'static [(&'static str, Kind)] {
    match ty {
        "hello" => &[("name", Str), ("version", Str), ("capabilities", StrList)],
        "register_command" => &[("name", Str), ("description", Str)],
        "register_tool" => &[("name", Str), ("description", Str), ("schema", Obj)],
        "subscribe" => &[("events", StrList), ("intercept", StrList)],
        "command_response" => &[
            ("id", Id),
            ("action", Str),
            ("prompt", Str),
            ("insert", Str),
            ("display", Str),
            ("open_panel", Panel),
            ("error", Str),
        ],
        "tool_result" => &[("id", Id), ("content", Blocks), ("is_error", Bool)],
        "event_intercept_response" => &[
            ("id", Id),
            ("block", Bool),
            ("reason", Str),
            ("modified_args", Obj),
            ("replace_text", Str),
        ],
        "notify" => &[("level", Str), ("message", Str)],
        "open_panel" => &[("panel", Panel)],
        "panel_render" => &[("panel_id", Str), ("title", Str), ("lines", StrList), ("footer", Str)],
        "panel_close" => &[("panel_id", Str)],
        "submit" => &[("text", Str)],
        "hello_ack" => &[
            ("protocol_version", U32),
            ("zot_version", Str),
            ("provider", Str),
            ("model", Str),
            ("cwd", Str),
            ("extension_dir", Str),
            ("data_dir", Str),
        ],
        "command_invoked" => &[("id", Id), ("name", Str), ("args", Str)],
        "tool_call" => &[("id", Id), ("name", Str), ("args", Obj)],
        "tool_cancel" => &[("id", Id)],
        "event" => &[("event", Str), ("step", Any), ("tool_args", Obj), ("text", Str)],
        "event_intercept" => &[("id", Id), ("event", Str), ("tool_name", Str), ("tool_args", Obj), ("text", Str)],
        "panel_key" => &[("panel_id", Str), ("key", Str), ("text", Str)],
        _ => &[],
    }
}

/// A string: usually short and plain, sometimes strange, rarely long.
fn gen_string(rng: &mut Rng) -> J {
    match rng.below(40) {
        0..=19 => s(rng.pick(STRINGS)),
        20..=25 => {
            let n = rng.below(24);
            J::Str((0..n).map(|_| char::from_u32(rng.below(0x3000) as u32).unwrap_or('?')).collect())
        }
        26..=32 => {
            let n = rng.below(12);
            J::Str((0..n).map(|_| (b'a' + rng.below(26) as u8) as char).collect())
        }
        33..=38 => J::RawStr(rng.pick(RAW_STRINGS).to_vec()),
        _ => match rng.below(100) {
            0 => J::Str("z".repeat(64 * 1024 + rng.below(4096))),
            1..=20 => J::Str("long ".repeat(1 + rng.below(400))),
            _ => J::Str("w".repeat(rng.below(300))),
        },
    }
}

fn gen_number(rng: &mut Rng) -> J {
    match rng.below(6) {
        0..=2 => J::Raw(rng.pick(NUMBERS).as_bytes().to_vec()),
        3 => J::Raw(rng.next().to_string().into_bytes()),
        4 => {
            // Any finite f64, as the shortest text that reads back as it.
            let f = f64::from_bits(rng.next());
            if f.is_finite() {
                J::Raw(serde_json::to_string(&f).expect("float").into_bytes())
            } else {
                J::Raw(b"1e999".to_vec())
            }
        }
        _ => {
            let digits = 1 + if rng.chance(1, 10) { rng.below(400) } else { rng.below(40) };
            let mut b: Vec<u8> = (0..digits).map(|_| b'0' + rng.below(10) as u8).collect();
            if b[0] == b'0' && b.len() > 1 {
                b[0] = b'1';
            }
            if rng.chance(1, 2) {
                b.extend_from_slice(format!("e{}", rng.below(700) as i64 - 350).as_bytes());
            }
            J::Raw(b)
        }
    }
}

/// Any JSON value, `depth` levels deep at most.
fn gen_any(rng: &mut Rng, depth: usize) -> J {
    let top = if depth == 0 { 5 } else { 8 };
    match rng.below(top) {
        0 => J::Raw(b"null".to_vec()),
        1 => J::Raw(rng.pick(&[&b"true"[..], b"false", b"tru", b"nul", b"False", b"None"]).to_vec()),
        2 | 3 => gen_number(rng),
        4 => gen_string(rng),
        5 => J::Arr((0..rng.below(5)).map(|_| gen_any(rng, depth - 1)).collect()),
        _ => J::Obj(
            (0..rng.below(5))
                .map(|_| {
                    let k = if rng.chance(1, 3) { s(rng.pick(&["type", "id", "name", "text", "a"])) } else { gen_string(rng) };
                    (k, gen_any(rng, depth - 1))
                })
                .collect(),
        ),
    }
}

/// An id of any JSON type.
fn gen_id(rng: &mut Rng) -> J {
    match rng.below(10) {
        0..=2 => J::Str(rng.below(1000).to_string()),
        3 => gen_string(rng),
        4 | 5 => gen_number(rng),
        6 => J::Raw(b"null".to_vec()),
        7 => J::Raw(rng.pick(&[&b"true"[..], b"false"]).to_vec()),
        8 => J::Arr(vec![J::Raw(b"1".to_vec())]),
        _ => J::Obj(vec![(s("id"), J::Raw(b"1".to_vec()))]),
    }
}

fn gen_str_list(rng: &mut Rng) -> J {
    J::Arr((0..rng.below(6)).map(|_| if rng.chance(9, 10) { gen_string(rng) } else { gen_any(rng, 1) }).collect())
}

fn gen_block(rng: &mut Rng) -> J {
    match rng.below(4) {
        0 | 1 => J::Obj(vec![(s("type"), s("text")), (s("text"), gen_string(rng))]),
        2 => J::Obj(vec![
            (s("type"), s("image")),
            (s("mime_type"), s("image/png")),
            (s("data"), s("iVBORw0KGgo=")),
        ]),
        _ => gen_any(rng, 3),
    }
}

fn gen_panel(rng: &mut Rng) -> J {
    let mut f = Vec::new();
    for (k, kind) in [("id", Str), ("title", Str), ("lines", StrList), ("footer", Str)] {
        if rng.chance(4, 5) {
            f.push((s(k), gen_field(rng, kind)));
        }
    }
    J::Obj(f)
}

/// A value for a field of kind `kind`: usually the right type.
fn gen_field(rng: &mut Rng, kind: Kind) -> J {
    if rng.chance(1, 5) {
        return gen_any(rng, 3);
    }
    match kind {
        Str => gen_string(rng),
        StrList => gen_str_list(rng),
        Obj => gen_any_object(rng),
        Bool => J::Raw(rng.pick(&[&b"true"[..], b"false"]).to_vec()),
        Id => gen_id(rng),
        U32 => J::Raw(rng.pick(&["0", "1", "2", "4294967295", "4294967296", "-1", "1.0"]).as_bytes().to_vec()),
        Blocks => J::Arr((0..rng.below(4)).map(|_| gen_block(rng)).collect()),
        Panel => gen_panel(rng),
        Any => gen_any(rng, 3),
    }
}

fn gen_any_object(rng: &mut Rng) -> J {
    match gen_any(rng, 4) {
        o @ J::Obj(_) => o,
        other => J::Obj(vec![(s("type"), s("object")), (s("x"), other)]),
    }
}

/// A frame of one of `types`, its fields shuffled, some missing, some of
/// the wrong type, some duplicated, with extra fields and odd `type`s.
fn gen_frame(rng: &mut Rng, types: &[&str]) -> J {
    let ty = rng.pick(types);
    let mut fields: Vec<(J, J)> = Vec::new();
    let type_value = match rng.below(30) {
        0 => s(&ty.to_uppercase()),
        1 => gen_any(rng, 2),
        2 => s(rng.pick(FRAME_TYPES_EXT)),
        3 => s(rng.pick(FRAME_TYPES_HOST)),
        4 => s(&format!("{ty} ")),
        _ => s(ty),
    };
    if !rng.chance(1, 40) {
        fields.push((s("type"), type_value));
    }
    for &(name, kind) in fields_of(ty) {
        if rng.chance(1, 8) {
            continue;
        }
        fields.push((s(name), gen_field(rng, kind)));
    }
    for _ in 0..rng.below(3) {
        if rng.chance(1, 2) {
            let k = if rng.chance(1, 2) { s("extra") } else { gen_string(rng) };
            fields.push((k, gen_any(rng, 2)));
        }
    }
    // Duplicate keys, `type` and `id` included.
    if rng.chance(1, 10) && !fields.is_empty() {
        let i = rng.below(fields.len());
        let key = match &fields[i].0 {
            J::Str(k) => k.clone(),
            _ => "type".into(),
        };
        let v = if key == "type" { s(rng.pick(FRAME_TYPES_EXT)) } else { gen_any(rng, 2) };
        fields.push((J::Str(key), v));
    }
    // Shuffle.
    for i in (1..fields.len()).rev() {
        let j = rng.below(i + 1);
        fields.swap(i, j);
    }
    J::Obj(fields)
}

const TOKENS: &[&[u8]] = &[
    b"{", b"}", b"[", b"]", b":", b",", b"\"", b"\\", b"\"type\"", b"\"id\"", b"\"ready\"", b"\"tool_result\"", b"null",
    b"true", b"false", b"1", b"-0", b"1e400", b"\"x\"", b" ", b"\r", b"\n", b"\r\n", b"\t", b"\x00", b"\xff", b"\xc3",
    b"\xef\xbb\xbf", b"\\u0000", b"\\ud800", b"[[[[", b"]]]]", b"{\"a\":", b"\"content\":[", b"99999999999999999999999",
];

fn token_soup(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    if rng.chance(1, 2) {
        out.extend_from_slice(b"{\"type\":");
    }
    for _ in 0..rng.below(40) {
        out.extend_from_slice(rng.pick(TOKENS));
    }
    out
}

fn byte_soup(rng: &mut Rng) -> Vec<u8> {
    let n = rng.below(300);
    let printable = rng.chance(1, 2);
    (0..n)
        .map(|_| if printable { 0x20 + rng.below(0x5f) as u8 } else { rng.next() as u8 })
        .collect()
}

/// Random edits: bit flips, byte changes, insertions, deletions,
/// duplications, truncation.
fn mutate(rng: &mut Rng, buf: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(4) {
        let len = buf.len();
        match rng.below(9) {
            0 if len > 0 => {
                let i = rng.below(len);
                buf[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                buf[i] = rng.next() as u8;
            }
            2 => {
                let i = rng.below(len + 1);
                let t = rng.pick(TOKENS);
                buf.splice(i..i, t.iter().copied());
            }
            3 if len > 0 => {
                let i = rng.below(len);
                let n = (1 + rng.below(8)).min(len - i);
                buf.drain(i..i + n);
            }
            4 => {
                let i = rng.below(len + 1);
                buf.truncate(i);
            }
            5 if len > 0 => {
                let i = rng.below(len);
                let n = (1 + rng.below(32)).min(len - i);
                let chunk: Vec<u8> = buf[i..i + n].to_vec();
                let at = rng.below(buf.len() + 1);
                buf.splice(at..at, chunk);
            }
            6 if len > 1 => {
                let (i, j) = (rng.below(len), rng.below(len));
                buf.swap(i, j);
            }
            7 => {
                let i = rng.below(len + 1);
                let b = rng.pick(&[b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', 0u8, 0xff, b'\r', b'\n', b'0']);
                buf.insert(i, b);
            }
            _ => {
                if rng.chance(1, 2) {
                    buf.extend_from_slice(b"\r");
                } else {
                    buf.extend_from_slice(b" trailing");
                }
            }
        }
    }
}

/// A value nested `depth` levels deep, closed properly: arrays or objects.
fn nested(depth: usize, objects: bool, inner: &str) -> String {
    let (open, close) = if objects { ("{\"a\":", "}") } else { ("[", "]") };
    format!("{}{inner}{}", open.repeat(depth), close.repeat(depth))
}

/// Hand-made lines: the edges every decoder gets wrong once.
fn special_cases() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = Vec::new();
    let mut add = |b: &[u8]| v.push(b.to_vec());
    add(b"");
    add(b"\r");
    add(b"\r\r");
    add(b"\n");
    add(b" ");
    add(b"\x00");
    add(b"\x00\x00\x00\x00");
    add(b"\xef\xbb\xbf{\"type\":\"ready\"}");
    add(b"{\"type\":\"ready\"}\r");
    add(b"{\"type\":\"ready\"}\r\n");
    add(b"{\"type\":\"ready\"}\r\r");
    add(b"{\"type\":\"ready\"}\x00");
    add(b"{\"type\":\"ready\"} {\"type\":\"ready\"}");
    add(b"{\"type\":\"ready\",\"type\":\"hello\"}");
    add(b"{\"type\":\"hello\",\"type\":\"ready\"}");
    add(b"{\"type\":\"ready\",\"type\":5}");
    add(b"{\"type\":5,\"type\":\"ready\"}");
    add(b"{\"type\":\"tool_result\",\"id\":\"1\",\"id\":\"2\",\"content\":[]}");
    add(b"{\"type\":\"tool_result\",\"id\":\"1\",\"content\":[],\"content\":[]}");
    add(b"{\"type\":\"notify\",\"message\":\"a\",\"message\":\"b\"}");
    add(b"{\"type\":\"event\",\"event\":\"x\",\"event\":\"y\"}");
    add(b"{\"type\":\"event\",\"event\":\"x\",\"step\":1,\"step\":2}");
    add(b"{\"type\":\"event_intercept\",\"id\":\"1\",\"event\":\"x\",\"id\":\"2\"}");
    add(b"{\"type\":\"tool_result\",\"id\":1e400,\"content\":[]}");
    add(b"{\"type\":\"tool_result\",\"id\":99999999999999999999999,\"content\":[]}");
    add(b"{\"type\":\"tool_result\",\"id\":-0,\"content\":[]}");
    add(b"{\"type\":\"tool_result\",\"id\":1.0,\"content\":[1e400]}");
    add(b"{\"type\":\"tool_result\",\"id\":\"1\",\"content\":[99999999999999999999999, -1e-400, 5e-324]}");
    add(b"{\"type\":\"hello_ack\",\"protocol_version\":4294967296}");
    add(b"{\"type\":\"hello_ack\",\"protocol_version\":1e400}");
    add(b"{\"type\":\"notify\",\"message\":\"\\ud800\"}");
    add(b"{\"type\":\"notify\",\"message\":\"\\u0000\"}");
    add(b"{\"type\":\"notify\",\"message\":\"\xff\"}");
    add(b"{\"type\":\"notify\",\"message\":\"\xed\xa0\x80\"}");
    add(b"{\"type\":\"notify\",\"message\":\"a\x00b\"}");
    add(b"{\"type\":\"no\x00tify\"}");
    add(b"{\"type\":\"ready\"\x00}");
    add(b"{\"ty\\u0070e\":\"ready\"}");
    add(b"{\"type\":\"re\\u0061dy\"}");
    add(b"{\"type\":null}");
    add(b"{\"type\":[\"ready\"]}");
    add(b"{\"type\":{\"type\":\"ready\"}}");
    add(b"[{\"type\":\"ready\"}]");
    add(b"\"ready\"");
    add(b"null");
    add(b"1e400");
    add(b"99999999999999999999999");
    add(b"{}");
    add(b"{");
    add(b"}");
    add(b"{\"type\":\"tool_result\"");
    add(b"{\"type\":\"tool_result\",\"id\":\"1\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}");
    let mut v2 = v;
    for depth in [10_000usize, 100_000] {
        v2.push("[".repeat(depth).into_bytes());
        v2.push("{\"a\":".repeat(depth).into_bytes());
        v2.push(format!("{{\"type\":\"notify\",\"message\":{}", "[".repeat(depth)).into_bytes());
        v2.push(format!("{{\"type\":\"tool_result\",\"id\":\"1\",\"content\":{}", "[".repeat(depth)).into_bytes());
        v2.push(format!("{{\"type\":\"event\",\"event\":\"e\",\"p\":{}", "{\"a\":".repeat(depth)).into_bytes());
    }
    // Properly closed nesting around the parser's depth limit, in every
    // place a frame can hold arbitrary JSON, and in lenient fields.
    for depth in [100usize, 125, 126, 127, 128, 129, 130, 200, 5000] {
        for objects in [false, true] {
            let n = nested(depth, objects, "1");
            v2.push(n.clone().into_bytes());
            v2.push(format!("{{\"type\":\"notify\",\"level\":\"info\",\"message\":{n}}}").into_bytes());
            v2.push(format!("{{\"type\":\"hello\",\"name\":\"x\",\"capabilities\":{n}}}").into_bytes());
            v2.push(format!("{{\"type\":\"register_tool\",\"name\":\"t\",\"schema\":{{\"x\":{n}}}}}").into_bytes());
            v2.push(format!("{{\"type\":\"tool_result\",\"id\":\"1\",\"content\":[{n}]}}").into_bytes());
            v2.push(format!("{{\"type\":\"event_intercept_response\",\"id\":\"1\",\"modified_args\":{{\"a\":{n}}}}}").into_bytes());
            v2.push(format!("{{\"type\":\"open_panel\",\"panel\":{{\"id\":\"p\",\"lines\":{n}}}}}").into_bytes());
            v2.push(format!("{{\"type\":\"subscribe\",\"events\":{n}}}").into_bytes());
            v2.push(format!("{{\"type\":\"tool_call\",\"id\":\"1\",\"name\":\"t\",\"args\":{{\"a\":{n}}}}}").into_bytes());
            v2.push(format!("{{\"type\":\"event\",\"event\":\"e\",\"deep\":{n}}}").into_bytes());
            v2.push(format!("{{\"type\":\"event_intercept\",\"id\":\"2\",\"event\":\"e\",\"deep\":{n}}}").into_bytes());
        }
    }
    // Very long strings and lines.
    v2.push(format!("{{\"type\":\"notify\",\"message\":\"{}\"}}", "m".repeat(4 << 20)).into_bytes());
    v2.push(format!("{{\"type\":\"tool_result\",\"id\":\"1\",\"content\":[{{\"type\":\"text\",\"text\":\"{}\"}}]}}", "\\u00e9".repeat(200_000)).into_bytes());
    v2.push(format!("{{\"type\":\"submit\",\"text\":\"{}", "u".repeat(1 << 20)).into_bytes());
    v2.push(format!("{{\"type\":\"tool_result\",\"id\":\"{}\",\"content\":[]}}", "9".repeat(100_000)).into_bytes());
    v2.push(format!("{{\"type\":\"tool_result\",\"id\":{},\"content\":[]}}", "9".repeat(100_000)).into_bytes());
    v2.push(format!("{{\"type\":\"notify\",\"message\":{}}}", "1".repeat(100_000)).into_bytes());
    v2.push("[1,".repeat(50_000).into_bytes());
    v2.push(format!("{{{}\"type\":\"ready\"}}", "\"k\":1,".repeat(50_000)).into_bytes());
    v2
}

/// Case `index` of the generated stream.
fn generated_case(seed: u64, index: u64) -> Vec<u8> {
    let mut rng = Rng::for_case(seed, index);
    let mut out = Vec::new();
    match rng.below(20) {
        0..=6 => emit(&gen_frame(&mut rng, FRAME_TYPES_EXT), &mut rng, false, &mut out),
        7..=8 => emit(&gen_frame(&mut rng, FRAME_TYPES_HOST), &mut rng, false, &mut out),
        9..=13 => {
            let types = if rng.chance(3, 4) { FRAME_TYPES_EXT } else { FRAME_TYPES_HOST };
            let spaced = rng.chance(1, 3);
            emit(&gen_frame(&mut rng, types), &mut rng, spaced, &mut out);
            mutate(&mut rng, &mut out);
        }
        14 => emit(&gen_any(&mut rng, 4), &mut rng, true, &mut out),
        15 => out = byte_soup(&mut rng),
        16 => out = token_soup(&mut rng),
        17 => {
            // Two frames glued, or one inside another's string.
            let mut a = Vec::new();
            emit(&gen_frame(&mut rng, FRAME_TYPES_EXT), &mut rng, false, &mut a);
            emit(&gen_frame(&mut rng, FRAME_TYPES_EXT), &mut rng, false, &mut out);
            let at = rng.below(out.len() + 1);
            out.splice(at..at, a);
        }
        _ => {
            let s = special_seed(&mut rng);
            out = s;
            mutate(&mut rng, &mut out);
        }
    }
    if rng.chance(1, 30) {
        out.push(b'\r');
    }
    out
}

/// A short special case to mutate (the long ones are checked once, as is).
fn special_seed(rng: &mut Rng) -> Vec<u8> {
    let seeds: &[&[u8]] = &[
        b"{\"type\":\"ready\"}",
        b"{\"type\":\"hello\",\"name\":\"x\",\"version\":\"1\",\"capabilities\":[\"tools\"]}",
        b"{\"type\":\"tool_result\",\"id\":\"12\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"is_error\":false}",
        b"{\"type\":\"command_response\",\"id\":3,\"action\":\"open_panel\",\"open_panel\":{\"id\":\"p\",\"title\":\"t\",\"lines\":[\"a\"],\"footer\":\"f\"}}",
        b"{\"type\":\"event_intercept_response\",\"id\":\"4\",\"block\":true,\"reason\":\"r\",\"modified_args\":{\"a\":1},\"replace_text\":\"t\"}",
        b"{\"type\":\"register_tool\",\"name\":\"t\",\"description\":\"d\",\"schema\":{\"type\":\"object\"}}",
        b"{\"type\":\"event\",\"event\":\"turn_start\",\"step\":1}",
        b"{\"type\":\"event_intercept\",\"id\":\"9\",\"event\":\"tool_call\",\"tool_id\":\"t\",\"tool_name\":\"bash\",\"tool_args\":{}}",
        b"{\"type\":\"tool_call\",\"id\":\"5\",\"name\":\"echo\",\"args\":{\"x\":[1,2,{\"y\":null}]}}",
        b"{\"type\":\"hello_ack\",\"protocol_version\":1,\"zot_version\":\"0.1.0\",\"cwd\":\"/\"}",
        b"{\"type\":\"panel_key\",\"panel_id\":\"p\",\"key\":\"rune\",\"text\":\"x\"}",
    ];
    let mut b = rng.pick(seeds).to_vec();
    if rng.chance(1, 4) {
        let depth = 120 + rng.below(20);
        b = format!("{{\"type\":\"notify\",\"message\":{}}}", nested(depth, rng.chance(1, 2), "0")).into_bytes();
    }
    b
}

// ----- the checks ----------------------------------------------------------------

/// What decoding one line gave, for the statistics.
#[derive(Default, Debug)]
struct Tally {
    cases: u64,
    bytes: u64,
    ok_ext: u64,
    ok_host: u64,
    not_json: u64,
    not_object: u64,
    no_type: u64,
    unknown_type: u64,
    bad_fields: u64,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.cases += o.cases;
        self.bytes += o.bytes;
        self.ok_ext += o.ok_ext;
        self.ok_host += o.ok_host;
        self.not_json += o.not_json;
        self.not_object += o.not_object;
        self.no_type += o.no_type;
        self.unknown_type += o.unknown_type;
        self.bad_fields += o.bad_fields;
    }

    fn count_err(&mut self, e: &DecodeError) {
        match e {
            DecodeError::NotJson(_) => self.not_json += 1,
            DecodeError::NotObject => self.not_object += 1,
            DecodeError::NoType => self.no_type += 1,
            DecodeError::UnknownType(_) => self.unknown_type += 1,
            DecodeError::BadFields { .. } => self.bad_fields += 1,
        }
    }
}

/// Decodes `line` as `F` and checks what came back; Err describes a
/// violated property. Ok(true) when a frame was accepted.
fn check_as<F: Frame + PartialEq + std::fmt::Debug>(line: &[u8], what: &str, tally: &mut Tally) -> Result<bool, String> {
    let r = catch_unwind(AssertUnwindSafe(|| decode::<F>(line))).map_err(|p| format!("decode::<{what}> panicked: {}", panic_text(&p)))?;
    match r {
        Ok(frame) => {
            let enc = catch_unwind(AssertUnwindSafe(|| encode(&frame))).map_err(|p| format!("encode panicked on {frame:?}: {}", panic_text(&p)))?;
            if enc.last() != Some(&b'\n') || enc[..enc.len() - 1].contains(&b'\n') {
                return Err(format!("encode of {frame:?} is not exactly one line: {:?}", String::from_utf8_lossy(&enc)));
            }
            let back = catch_unwind(AssertUnwindSafe(|| decode::<F>(&enc[..enc.len() - 1])))
                .map_err(|p| format!("decode of the re-encoded frame panicked: {}", panic_text(&p)))?;
            if back.as_ref() != Ok(&frame) {
                return Err(format!(
                    "{what} does not survive encode/decode:\n  frame   {frame:?}\n  encoded {}\n  decoded {back:?}",
                    String::from_utf8_lossy(&enc)
                ));
            }
            // An accepted frame was a JSON object whose `type` names it. The
            // grammar is what counts: a field the frame does not use may hold
            // what serde_json's Value cannot (a lone surrogate escape, 1e400),
            // and skipping that field unread is fine.
            let stripped = line.strip_suffix(b"\r").unwrap_or(line);
            serde_json::from_slice::<serde::de::IgnoredAny>(stripped)
                .map_err(|e| format!("{what} accepted a line that is not JSON: {e}"))?;
            let ty = serde_json::from_slice::<TypeOnly>(stripped)
                .map_err(|e| format!("{what} accepted a line that is not an object with one string type: {e}"))?
                .ty;
            let tag: Value = serde_json::from_slice(&enc).map_err(|e| format!("encoded frame is not JSON: {e}"))?;
            if tag.get("type") != Some(&Value::String(ty.clone())) {
                return Err(format!("{what} accepted a line whose type is {ty:?} as {:?}", tag.get("type")));
            }
            Ok(true)
        }
        Err(e) => {
            let _ = e.to_string();
            if what == "ExtFrame" && matches!(e, DecodeError::NotJson(_)) {
                let stripped = line.strip_suffix(b"\r").unwrap_or(line);
                if serde_json::from_slice::<Value>(stripped).is_ok() {
                    return Err(format!("{what}: a valid JSON line was classified as not JSON: {e}"));
                }
            }
            tally.count_err(&e);
            Ok(false)
        }
    }
}

/// A frame's `type`, every other field skipped unread.
#[derive(serde::Deserialize)]
struct TypeOnly {
    #[serde(rename = "type")]
    ty: String,
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_default()
}

fn check_line(line: &[u8], tally: &mut Tally) -> Result<(), String> {
    tally.cases += 1;
    tally.bytes += line.len() as u64;
    if check_as::<ExtFrame>(line, "ExtFrame", tally)? {
        tally.ok_ext += 1;
    }
    if check_as::<HostFrame>(line, "HostFrame", &mut Tally::default())? {
        tally.ok_host += 1;
    }
    Ok(())
}

/// At most 1500 characters of a failure message.
fn clip(msg: &str) -> String {
    if msg.chars().count() <= 1500 {
        return msg.to_string();
    }
    let head: String = msg.chars().take(1500).collect();
    format!("{head} … ({} chars)", msg.chars().count())
}

fn show(line: &[u8]) -> String {
    let cut = &line[..line.len().min(300)];
    format!("{:?}{}", String::from_utf8_lossy(cut), if line.len() > 300 { format!(" … ({} bytes)", line.len()) } else { String::new() })
}

/// Runs `f` on a thread with the host's reader-thread stack size, so a
/// decode that needs more stack than the host gives it fails here too.
fn on_reader_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .name("fuzz-on-reader-stack".into())
        .stack_size(zot_host::host::THREAD_STACK)
        .spawn(f)
        .expect("spawn")
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
}

#[test]
fn special_cases_never_panic_and_round_trip() {
    let failures = on_reader_stack(|| {
        let mut tally = Tally::default();
        let mut failures = Vec::new();
        for (i, line) in special_cases().iter().enumerate() {
            if let Err(e) = check_line(line, &mut tally) {
                failures.push(format!("special case {i} {}: {}", show(line), clip(&e)));
            }
        }
        eprintln!("special cases: {tally:?}");
        // The hand-made lines cover both outcomes and every kind of error.
        assert!(tally.ok_ext > 0 && tally.not_json > 0 && tally.not_object > 0, "{tally:?}");
        assert!(tally.no_type > 0 && tally.unknown_type > 0 && tally.bad_fields > 0, "{tally:?}");
        failures
    });
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn generated_lines_never_panic_and_round_trip() {
    let seed = env_u64("ZOT_FUZZ_SEED", DEFAULT_SEED);
    let iters = env_u64("ZOT_FUZZ_ITERS", 200_000);
    // Cases are split over a few threads, each with the reader's stack.
    let shards = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 4) as u64;
    let start = Instant::now();
    let workers: Vec<_> = (0..shards)
        .map(|shard| {
            std::thread::Builder::new()
                .name(format!("fuzz-{shard}"))
                .stack_size(zot_host::host::THREAD_STACK)
                .spawn(move || {
                    let mut tally = Tally::default();
                    let mut failures = Vec::new();
                    let mut i = shard;
                    while i < iters {
                        let line = generated_case(seed, i);
                        if let Err(e) = check_line(&line, &mut tally) {
                            failures.push(format!("case {i} (ZOT_FUZZ_SEED={seed:#x}) {}: {}", show(&line), clip(&e)));
                            if failures.len() >= 10 {
                                break;
                            }
                        }
                        i += shards;
                    }
                    (failures, tally)
                })
                .expect("spawn")
        })
        .collect();
    let mut failures = Vec::new();
    let mut tally = Tally::default();
    for w in workers {
        let (f, t) = w.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        failures.extend(f);
        tally.add(&t);
    }
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "decoder fuzz: seed {seed:#x}, {} cases on {shards} threads, {:.1} MB, {:.2}s, {:.0} cases/s; {tally:?}",
        tally.cases,
        tally.bytes as f64 / 1e6,
        secs,
        tally.cases as f64 / secs
    );
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(tally.cases, iters);
    // The generator reaches every outcome in quantity: a generator that only
    // made junk (or only valid frames) would test little.
    let floor = iters / 100;
    for (what, n) in [
        ("accepted ExtFrames", tally.ok_ext),
        ("accepted HostFrames", tally.ok_host),
        ("not JSON", tally.not_json),
        ("not an object", tally.not_object),
        ("no type", tally.no_type),
        ("unknown type", tally.unknown_type),
        ("bad fields", tally.bad_fields),
    ] {
        assert!(n >= floor, "only {n} cases gave {what} (want ≥ {floor}): {tally:?}");
    }
}

#[test]
fn arrays_are_never_frames() {
    // Serde's tagged enums read `["type", field, ...]` by position; the
    // protocol says a line that is not a JSON object is skipped.
    for line in [
        &b"[\"ready\"]"[..],
        b" [\"ready\"]\r",
        b"[\"hello\",\"x\",\"1\",[]]",
        b"[\"notify\",\"info\",\"hi\"]",
        b"[\"tool_result\",\"1\",[{\"type\":\"text\",\"text\":\"x\"}],false]",
        b"[\"command_response\",\"1\",\"display\"]",
    ] {
        assert_eq!(decode::<ExtFrame>(line), Err(DecodeError::NotObject), "{}", show(line));
    }
    for line in [&b"[\"tool_call\",\"1\",\"rm\",{}]"[..], b"[\"shutdown\"]", b"[\"tool_cancel\",\"9\"]"] {
        assert_eq!(decode::<HostFrame>(line), Err(DecodeError::NotObject), "{}", show(line));
    }
    assert!(matches!(decode::<ExtFrame>(b"[\"ready\""), Err(DecodeError::NotJson(_))));
    assert_eq!(decode::<ExtFrame>(b" \t{\"type\":\"ready\"}"), Ok(ExtFrame::Ready));
}

#[test]
fn numbers_pass_through_the_host_unchanged() {
    // A tool's result and a tool's args are decoded and encoded again on
    // their way through the host: every finite f64 must come out as it
    // went in, and integers beyond i64/u64 as the nearest f64.
    let mut rng = Rng::for_case(DEFAULT_SEED, 7);
    for i in 0..20_000 {
        let f = loop {
            let f = f64::from_bits(rng.next());
            if f.is_finite() {
                break f;
            }
        };
        let text = serde_json::to_string(&f).expect("float");
        let line = format!("{{\"type\":\"tool_result\",\"id\":\"{i}\",\"content\":[{text},{{\"v\":[{text}]}}]}}");
        let Ok(ExtFrame::ToolResult(r)) = decode::<ExtFrame>(line.as_bytes()) else { panic!("{line}") };
        assert_eq!(r.content[0].as_f64(), Some(f), "{text} was read as {}", r.content[0]);
        let enc = encode(&ExtFrame::ToolResult(r));
        let want = format!("{},\"is_error\":false}}\n", &line[..line.len() - 1]);
        assert_eq!(String::from_utf8_lossy(&enc), want, "{text}");
        let line = format!("{{\"type\":\"tool_call\",\"id\":\"{i}\",\"name\":\"t\",\"args\":{{\"x\":{text}}}}}");
        let Ok(frame @ HostFrame::ToolCall { .. }) = decode::<HostFrame>(line.as_bytes()) else { panic!("{line}") };
        assert_eq!(String::from_utf8_lossy(&encode(&frame)), format!("{line}\n"), "{text}");
    }
    for (text, want) in [("99999999999999999999999", 1e23), ("18446744073709551616", 18446744073709551616.0)] {
        let line = format!("{{\"type\":\"tool_result\",\"id\":\"1\",\"content\":[{text}]}}");
        let Ok(ExtFrame::ToolResult(r)) = decode::<ExtFrame>(line.as_bytes()) else { panic!("{line}") };
        assert_eq!(r.content[0].as_f64(), Some(want), "{text}");
    }
    // Out of range is a decode error, never an infinity.
    assert!(decode::<ExtFrame>(b"{\"type\":\"tool_result\",\"id\":\"1\",\"content\":[1e400]}").is_err());
    assert_eq!(
        decode::<ExtFrame>(b"{\"type\":\"tool_result\",\"id\":99999999999999999999999,\"content\":[]}")
            .map(|f| matches!(f, ExtFrame::ToolResult(r) if r.id.parse::<f64>() == Ok(1e23))),
        Ok(true)
    );
}

#[test]
fn the_generator_is_deterministic() {
    // A failure report names a seed and a case: both must replay it.
    for i in [0u64, 1, 17, 4242, 199_999] {
        assert_eq!(generated_case(DEFAULT_SEED, i), generated_case(DEFAULT_SEED, i), "case {i}");
    }
    assert_ne!(generated_case(DEFAULT_SEED, 5), generated_case(DEFAULT_SEED ^ 1, 5));
}

// ----- live: junk through a real extension's stdout ---------------------------------

/// Lines for the live run: every generated case split where the host's
/// reader splits it, minus lines that would answer a real call (a reply
/// frame, or a malformed reply with an id), which would race the test's
/// own calls. Returns the lines and how many of them the host must skip.
fn live_lines(seed: u64, n: u64) -> (Vec<Vec<u8>>, usize) {
    let mut raw: Vec<Vec<u8>> = Vec::new();
    // Deep nesting first and last: the reader thread's stack must take it.
    let deep = |r: &mut Vec<Vec<u8>>| {
        r.push("[".repeat(10_000).into_bytes());
        r.push("{\"a\":".repeat(10_000).into_bytes());
        r.push(format!("{{\"type\":\"notify\",\"message\":{}", "[".repeat(10_000)).into_bytes());
        for depth in [126usize, 127, 128, 129] {
            for objects in [false, true] {
                let n = nested(depth, objects, "1");
                r.push(format!("{{\"type\":\"notify\",\"level\":\"info\",\"message\":{n}}}").into_bytes());
                r.push(format!("{{\"type\":\"register_tool\",\"name\":\"deep\",\"schema\":{{\"x\":{n}}}}}").into_bytes());
                r.push(format!("{{\"type\":\"open_panel\",\"panel\":{{\"id\":\"p\",\"lines\":{n}}}}}").into_bytes());
            }
        }
    };
    deep(&mut raw);
    for i in 0..n {
        raw.push(generated_case(seed ^ 0x11fe, i));
    }
    deep(&mut raw);
    let mut lines = Vec::new();
    let mut skipped = 0;
    for case in raw {
        for line in case.split(|&b| b == b'\n') {
            match decode::<ExtFrame>(line) {
                Ok(ExtFrame::ToolResult(_) | ExtFrame::CommandResponse(_) | ExtFrame::EventInterceptResponse(_)) => continue,
                Err(DecodeError::BadFields { ref ty, id: Some(_), .. })
                    if matches!(ty.as_str(), "command_response" | "tool_result" | "event_intercept_response") =>
                {
                    continue
                }
                Err(_) => skipped += 1,
                Ok(_) => {}
            }
            lines.push(line.to_vec());
        }
    }
    (lines, skipped)
}

#[test]
fn junk_through_a_live_pipe_never_stalls_the_host() {
    let seed = env_u64("ZOT_FUZZ_SEED", DEFAULT_SEED);
    let n = env_u64("ZOT_FUZZ_LIVE_LINES", 8000);
    let t = TempDir::new("fuzz-live");
    let (lines, expect_skipped) = live_lines(seed, n);
    let junk = t.path().join("junk.txt");
    let mut data = Vec::new();
    for l in &lines {
        data.extend_from_slice(l);
        data.push(b'\n');
    }
    std::fs::write(&junk, &data).expect("write junk");
    assert!(expect_skipped > lines.len() / 2, "{expect_skipped} of {}", lines.len());

    // The healthy extension is first in load order, so nothing the junk
    // registers can take its tool.
    let healthy = py_ext(t.path(), "a-healthy", "healthy", &["--tools", "hecho"]);
    let spew = write_manifest(
        t.path(),
        "b-spew",
        json!({"name": "spew", "exec": "python3", "args": [fixture("spew.py").display().to_string(), junk.display().to_string(), "150"]}),
    );
    let (host, _events) = start_host(host_config(t.path(), vec![healthy, spew]));
    let report = host.wait_ready().expect("ready");
    assert_eq!(report.ready, vec!["healthy".to_string(), "spew".to_string()], "{report:?}");
    let host = Arc::new(host);

    let done = Arc::new(AtomicBool::new(false));
    let max_ms = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let limit = Duration::from_secs(120);

    // The healthy extension is called from another thread the whole time.
    let side = {
        let (host, done, max_ms) = (host.clone(), done.clone(), max_ms.clone());
        std::thread::spawn(move || -> Result<u64, String> {
            let mut calls = 0u64;
            while !done.load(Ordering::SeqCst) || calls < 20 {
                let t0 = Instant::now();
                let r = host.tool("hecho", Some(json!({"n": calls}))).map_err(|e| format!("healthy call {calls}: {e}"))?;
                max_ms.fetch_max(t0.elapsed().as_millis() as u64, Ordering::SeqCst);
                let v = echo_of(&r.content);
                if r.is_error || v["args"]["n"] != json!(calls) || v["from"] != "healthy" {
                    return Err(format!("healthy call {calls} got {r:?}"));
                }
                calls += 1;
                if start.elapsed() > limit {
                    return Err("the healthy loop ran out of time".into());
                }
            }
            Ok(calls)
        })
    };

    let mut calls = 0u64;
    let mut progress = Vec::new();
    let outcome = (|| -> Result<(), String> {
        loop {
            let t0 = Instant::now();
            let r = host.tool("spew_echo", Some(json!({"n": calls}))).map_err(|e| format!("spew call {calls}: {e}"))?;
            max_ms.fetch_max(t0.elapsed().as_millis() as u64, Ordering::SeqCst);
            let v: Value = serde_json::from_str(&text_of(&r.content)).map_err(|e| format!("spew call {calls}: {e}: {r:?}"))?;
            if r.is_error || v["args"]["n"] != json!(calls) {
                return Err(format!("spew call {calls} got {r:?}"));
            }
            calls += 1;
            let (written, total) = (v["written"].as_u64().unwrap_or(0), v["total"].as_u64().unwrap_or(u64::MAX));
            progress.push(written);
            if written == total && calls >= 20 {
                return Ok(());
            }
            if start.elapsed() > limit {
                return Err(format!("the junk was not all written within {limit:?} ({written} of {total})"));
            }
        }
    })();
    done.store(true, Ordering::SeqCst);
    let side_calls = side.join().expect("healthy thread");
    let elapsed = start.elapsed();
    let log = read_log(t.path(), "spew");
    let context = || format!("log tail:\n{}", log.lines().rev().take(30).collect::<Vec<_>>().join("\n"));
    outcome.unwrap_or_else(|e| panic!("{e}\n{}", context()));
    let side_calls = side_calls.unwrap_or_else(|e| panic!("{e}\n{}", context()));
    // The junk was written while calls were going on, not all before them.
    let mid = progress.iter().filter(|&&w| w > 0 && w < lines.len() as u64).count();
    assert!(mid >= 10, "junk and results were not interleaved: {progress:?}");
    let max_ms = max_ms.load(Ordering::SeqCst);
    eprintln!(
        "live junk: {} lines ({} to skip, {:.1} MB) in {:.2}s; calls: {calls} to spew ({mid} mid-stream), {side_calls} to healthy; slowest call {max_ms} ms",
        lines.len(),
        expect_skipped,
        data.len() as f64 / 1e6,
        elapsed.as_secs_f64()
    );
    // Each spew call carries 150 junk lines, which a loaded machine may take
    // seconds to write and read; a host that stalled on the junk would hold
    // a call for much of the file's 8000 lines, or time it out (15 s).
    assert!(max_ms < 10_000, "a call took {max_ms} ms: the host stalled\n{}", context());

    // Every junk line was logged as skipped, exactly once, each on one line.
    let count = || read_log(t.path(), "spew").lines().filter(|l| l.starts_with("[zot] skipped a stdout line")).count();
    wait_until(Duration::from_secs(30), || count() >= expect_skipped);
    let got = count();
    assert_eq!(got, expect_skipped, "skipped lines logged\n{}", context());

    // Both extensions are still up and answering.
    let l = host.list().expect("list");
    for e in &l.extensions {
        assert_eq!(e.state, zot_host::host::State::Ready, "{e:?}");
    }
    assert!(!host.tool("hecho", None).expect("healthy after").is_error);
    assert!(!host.tool("spew_echo", None).expect("spew after").is_error);
    host.shutdown();
}

#[test]
fn live_lines_filter_is_exact() {
    // The live test's expected count relies on this split: every kept line
    // is either skipped by the host or a frame that answers no call.
    let (lines, skipped) = live_lines(DEFAULT_SEED, 2000);
    let errs = lines.iter().filter(|l| decode::<ExtFrame>(l).is_err()).count();
    assert_eq!(errs, skipped);
    assert!(lines.iter().all(|l| !l.contains(&b'\n')));
    assert!(fixture("spew.py").is_file());
}
