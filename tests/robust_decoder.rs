//! The line decoder under fire (issue 5, reliability), in process: lines
//! from the seeded generator (tests/common/junk.rs), hundreds of thousands
//! of them: frames of every type, the same damaged, byte and token soups,
//! invalid UTF-8, NUL bytes, CRLF, duplicate keys, huge numbers, very long
//! strings and deep nesting. `decode` must never panic, and every frame it
//! accepts must survive `encode` → `decode` unchanged, as one line. The
//! host's reader thread runs on a small stack (`THREAD_STACK`); the deep
//! nesting lines check that decoding on it does not overflow.
//!
//! Environment: `ZOT_FUZZ_ITERS` (generated cases, default 200000),
//! `ZOT_FUZZ_SEED` (default fixed).

mod common;
#[path = "common/junk.rs"]
mod junk;

use junk::*;
use serde_json::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;
use zot_host::protocol::{decode, encode, DecodeError, ExtFrame, Frame, HostFrame};

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
