//! The junk-line generator of the decoder tests (tests/robust_decoder.rs,
//! tests/robust_decoder_live.rs): a seeded PRNG written here (splitmix64,
//! no crates), JSON text including what `serde_json::Value` cannot hold,
//! frames of every `ExtFrame` and `HostFrame` type with random field
//! types and ids of every JSON type, the same with bytes flipped,
//! inserted, deleted, duplicated or cut, byte and token soups, and the
//! hand-written special cases. Included with `#[path]`.
#![allow(dead_code)]

pub const DEFAULT_SEED: u64 = 0x5eed_2024_0005_0001;

pub fn env_u64(name: &str, default: u64) -> u64 {
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
pub struct Rng(pub u64);

impl Rng {
    /// The generator of case `index` under `seed`: any case can be replayed
    /// alone from the two numbers a failure prints.
    pub fn for_case(seed: u64, index: u64) -> Rng {
        let mut r = Rng(seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        r.next();
        r
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: usize, den: usize) -> bool {
        self.below(den) < num
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

// ----- JSON text, including what serde_json::Value cannot hold ------------------

/// JSON as text: raw tokens (huge numbers, invalid literals), strings with
/// raw bytes inside the quotes, and objects with duplicate keys.
pub enum J {
    Raw(Vec<u8>),
    Str(String),
    /// Bytes between quotes as they are (escapes, invalid UTF-8, controls).
    RawStr(Vec<u8>),
    Arr(Vec<J>),
    Obj(Vec<(J, J)>),
}

pub fn s(x: &str) -> J {
    J::Str(x.to_string())
}

pub fn emit(j: &J, rng: &mut Rng, spaced: bool, out: &mut Vec<u8>) {
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

pub const NUMBERS: &[&str] = &[
    "0", "-0", "1", "-1", "7", "42", "1.5", "-2.25", "0.1", "1e2", "1E+2", "1e-7", "1e400", "-1e400", "1E-400",
    "1e308", "2.2250738585072014e-308", "5e-324", "99999999999999999999999", "-99999999999999999999999",
    "18446744073709551615", "18446744073709551616", "-9223372036854775808", "-9223372036854775809",
    "9223372036854775807", "4294967295", "4294967296", "-4294967296", "0.30000000000000004",
    "123456789012345678901234567890.123456789e-5", "1.7976931348623157e308", "1.7976931348623159e308",
    // Not JSON numbers.
    "01", "1.", ".5", "+1", "-", "1e", "1e+", "0x10", "NaN", "Infinity", "-Infinity", "1_000", "--1",
];

pub const STRINGS: &[&str] = &[
    "", "x", "echo", "ready", "hello", "tool_result", "héllo ✓", "日本語", "😀", "a\u{0}b", "\u{0}", "line\nbreak",
    "cr\r\nlf", "tab\there", "quote\"back\\slash", "\u{7f}\u{80}\u{ffff}", "\u{1b}[31mred\u{1b}[0m", "{\"type\":\"ready\"}",
    " ", "🦀🦀🦀", "\u{feff}bom", "\u{2028}\u{2029}", "0", "null",
];

/// Bytes for the inside of a string that a serializer would never write.
pub const RAW_STRINGS: &[&[u8]] = &[
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

pub const FRAME_TYPES_EXT: &[&str] = &[
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

pub const FRAME_TYPES_HOST: &[&str] = &[
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
pub enum Kind {
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
pub fn fields_of(ty: &str) -> &'static [(&'static str, Kind)] {
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
pub fn gen_string(rng: &mut Rng) -> J {
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

pub fn gen_number(rng: &mut Rng) -> J {
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
pub fn gen_any(rng: &mut Rng, depth: usize) -> J {
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
pub fn gen_id(rng: &mut Rng) -> J {
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

pub fn gen_str_list(rng: &mut Rng) -> J {
    J::Arr((0..rng.below(6)).map(|_| if rng.chance(9, 10) { gen_string(rng) } else { gen_any(rng, 1) }).collect())
}

pub fn gen_block(rng: &mut Rng) -> J {
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

pub fn gen_panel(rng: &mut Rng) -> J {
    let mut f = Vec::new();
    for (k, kind) in [("id", Str), ("title", Str), ("lines", StrList), ("footer", Str)] {
        if rng.chance(4, 5) {
            f.push((s(k), gen_field(rng, kind)));
        }
    }
    J::Obj(f)
}

/// A value for a field of kind `kind`: usually the right type.
pub fn gen_field(rng: &mut Rng, kind: Kind) -> J {
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

pub fn gen_any_object(rng: &mut Rng) -> J {
    match gen_any(rng, 4) {
        o @ J::Obj(_) => o,
        other => J::Obj(vec![(s("type"), s("object")), (s("x"), other)]),
    }
}

/// A frame of one of `types`, its fields shuffled, some missing, some of
/// the wrong type, some duplicated, with extra fields and odd `type`s.
pub fn gen_frame(rng: &mut Rng, types: &[&str]) -> J {
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

pub const TOKENS: &[&[u8]] = &[
    b"{", b"}", b"[", b"]", b":", b",", b"\"", b"\\", b"\"type\"", b"\"id\"", b"\"ready\"", b"\"tool_result\"", b"null",
    b"true", b"false", b"1", b"-0", b"1e400", b"\"x\"", b" ", b"\r", b"\n", b"\r\n", b"\t", b"\x00", b"\xff", b"\xc3",
    b"\xef\xbb\xbf", b"\\u0000", b"\\ud800", b"[[[[", b"]]]]", b"{\"a\":", b"\"content\":[", b"99999999999999999999999",
];

pub fn token_soup(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    if rng.chance(1, 2) {
        out.extend_from_slice(b"{\"type\":");
    }
    for _ in 0..rng.below(40) {
        out.extend_from_slice(rng.pick(TOKENS));
    }
    out
}

pub fn byte_soup(rng: &mut Rng) -> Vec<u8> {
    let n = rng.below(300);
    let printable = rng.chance(1, 2);
    (0..n)
        .map(|_| if printable { 0x20 + rng.below(0x5f) as u8 } else { rng.next() as u8 })
        .collect()
}

/// Random edits: bit flips, byte changes, insertions, deletions,
/// duplications, truncation.
pub fn mutate(rng: &mut Rng, buf: &mut Vec<u8>) {
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
pub fn nested(depth: usize, objects: bool, inner: &str) -> String {
    let (open, close) = if objects { ("{\"a\":", "}") } else { ("[", "]") };
    format!("{}{inner}{}", open.repeat(depth), close.repeat(depth))
}

/// Hand-made lines: the edges every decoder gets wrong once.
pub fn special_cases() -> Vec<Vec<u8>> {
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
pub fn generated_case(seed: u64, index: u64) -> Vec<u8> {
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
pub fn special_seed(rng: &mut Rng) -> Vec<u8> {
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
