//! The hand-written decoder against serde's derived one, kept here as the
//! reference: both must give the same frame or the same error, words
//! included, on every frame type with each field missing, doubled, null
//! and of every JSON type, and on lines that are no frame at all.

use super::*;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

/// The decoder as it was: the derived tagged enum, then a second look at
/// the line to say what was wrong.
fn reference<F: Frame + DeserializeOwned>(line: &[u8]) -> Result<F, DecodeError> {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(rename = "type")]
        ty: Option<Value>,
        id: Option<Value>,
    }
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let object = line.iter().find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r')) == Some(&b'{');
    let err = match serde_json::from_slice::<F>(line) {
        Ok(f) if object && !f.is_unknown() => return Ok(f),
        Ok(_) => None,
        Err(e) => Some(e),
    };
    let v: Value = serde_json::from_slice(line).map_err(|e| DecodeError::NotJson(e.to_string()))?;
    if !v.is_object() {
        return Err(DecodeError::NotObject);
    }
    let probe: Probe = serde_json::from_value(v).map_err(|_| DecodeError::NotObject)?;
    let Some(Value::String(ty)) = probe.ty else { return Err(DecodeError::NoType) };
    match err {
        None => Err(DecodeError::UnknownType(ty)),
        Some(e) => {
            let id = match probe.id {
                Some(Value::String(s)) => Some(s),
                Some(Value::Number(n)) => Some(n.to_string()),
                _ => None,
            };
            Err(DecodeError::BadFields { ty, id, msg: e.to_string() })
        }
    }
}

/// Each frame type with its fields and a value each field accepts.
const EXT: &[(&str, &[(&str, &str)])] = &[
    ("hello", &[("name", r#""w""#), ("version", r#""1""#), ("capabilities", r#"["tools"]"#)]),
    ("register_command", &[("name", r#""c""#), ("description", r#""d""#)]),
    (
        "register_tool",
        &[
            ("name", r#""t""#),
            ("description", r#""d""#),
            ("schema", r#"{"type":"object"}"#),
            ("output_schema", "{}"),
            ("deferred", "true"),
            ("exposure", r#""codemode""#),
            ("interactive", "true"),
            ("namespace", r#""n""#),
            ("namespace_description", r#""nd""#),
            ("namespace_instructions", r#""ni""#),
            ("replay", r#""safe""#),
            ("title", r#""T""#),
            ("annotations", r#"{"readOnlyHint":true}"#),
        ],
    ),
    ("subscribe", &[("events", r#"["turn_start"]"#), ("intercept", r#"["tool_call"]"#)]),
    ("ready", &[]),
    (
        "command_response",
        &[
            ("id", r#""7""#),
            ("action", r#""display""#),
            ("prompt", r#""p""#),
            ("insert", r#""i""#),
            ("display", r#""hi""#),
            ("open_panel", r#"{"id":"p","title":"t","lines":["a"],"footer":"f"}"#),
            ("error", r#""e""#),
            ("tool_name", r#""x""#),
            ("tool_args", r#"{"a":1}"#),
        ],
    ),
    (
        "tool_result",
        &[
            ("id", r#""8""#),
            ("content", r#"[{"type":"text","text":"x"}]"#),
            ("is_error", "true"),
            ("structured_content", r#"{"k":[1]}"#),
            ("activate_tools", r#"["d"]"#),
        ],
    ),
    (
        "event_intercept_response",
        &[
            ("id", r#""3""#),
            ("block", "true"),
            ("reason", r#""r""#),
            ("modified_args", r#"{"c":"ls"}"#),
            ("replace_text", r#""t""#),
            ("system_prompt", r#""s""#),
        ],
    ),
    ("notify", &[("level", r#""warn""#), ("message", r#""m""#)]),
    ("clear_notes", &[]),
    ("open_panel", &[("panel", r#"{"id":"p","lines":["a","b"]}"#)]),
    ("panel_render", &[("panel_id", r#""p""#), ("title", r#""t""#), ("lines", r#"["x"]"#), ("footer", r#""f""#)]),
    ("panel_close", &[("panel_id", r#""p""#)]),
    ("submit", &[("text", r#""go""#)]),
    ("call_tool", &[("id", r#""c1""#), ("name", r#""echo""#), ("args", r#"{"a":1}"#), ("parent_id", r#""9""#)]),
    ("call_tool_cancel", &[("id", r#""c1""#)]),
    ("submit_slash", &[("text", r#""/x""#)]),
    ("shutdown_ack", &[]),
];

const HOST: &[(&str, &[(&str, &str)])] = &[
    (
        "hello_ack",
        &[
            ("protocol_version", "1"),
            ("zot_version", r#""0.1""#),
            ("provider", r#""p""#),
            ("model", r#""m""#),
            ("cwd", r#""/""#),
            ("extension_dir", r#""/e""#),
            ("data_dir", r#""/d""#),
            ("capabilities", r#"["call_tool"]"#),
        ],
    ),
    ("command_invoked", &[("id", r#""4""#), ("name", r#""echo""#), ("args", r#""a b""#)]),
    ("tool_call", &[("id", r#""1""#), ("name", r#""x""#), ("args", r#"{"i":1}"#), ("operation_key", r#""k""#), ("reconcile", "true")]),
    (
        "tool_result",
        &[
            ("id", r#""1""#),
            ("name", r#""x""#),
            ("content", "[]"),
            ("is_error", "false"),
            ("truncated", "true"),
            ("structured_content", "[1]"),
        ],
    ),
    ("tool_cancel", &[("id", r#""1""#)]),
    ("event", &[("event", r#""turn_start""#), ("step", "1"), ("id", r#""e""#), ("panel", r#"{"a":1,"a":2}"#)]),
    ("event_intercept", &[("id", r#""5""#), ("event", r#""tool_call""#), ("args", "{}"), ("open_panel", "[1]")]),
    ("panel_key", &[("panel_id", r#""p""#), ("key", r#""rune""#), ("text", r#""x""#)]),
    ("panel_close", &[("panel_id", r#""p""#)]),
    ("shutdown", &[]),
];

/// Values of every JSON type, and the shapes a panel may come in.
const VALUES: &[&str] = &[
    r#""s""#,
    r#""\u00e9\n""#,
    "0",
    "5",
    "-3",
    "1.5",
    "1e3",
    "4294967296",
    "18446744073709551615",
    "99999999999999999999999",
    "true",
    "false",
    "null",
    "[]",
    r#"["a","b"]"#,
    r#"["a",1]"#,
    "{}",
    r#"{"id":"p","title":"t","lines":["x"],"footer":"f","more":1}"#,
    r#"{"id":"a","id":"b"}"#,
    r#"{"lines":5,"title":null}"#,
    r#"["i","t",["l"],"f"]"#,
    r#"["i"]"#,
    r#"["i","t",["l"],"f","extra"]"#,
];

fn frame(ty: &str, fields: &[(&str, String)]) -> String {
    let mut s = format!(r#"{{"type":"{ty}""#);
    for (k, v) in fields {
        s.push_str(&format!(r#","{k}":{v}"#));
    }
    s.push('}');
    s
}

/// Every frame type: as given, without each field, each field doubled
/// (either value first) and each field of each value in [`VALUES`].
fn corpus(types: &[(&str, &[(&str, &str)])]) -> Vec<String> {
    let mut out = Vec::new();
    for (ty, fields) in types {
        let base: Vec<(&str, String)> = fields.iter().map(|(k, v)| (*k, v.to_string())).collect();
        out.push(frame(ty, &base));
        out.push(frame(ty, &[]));
        for i in 0..base.len() {
            let mut without = base.clone();
            without.remove(i);
            out.push(frame(ty, &without));
            for v in VALUES {
                let mut with = base.clone();
                with[i].1 = v.to_string();
                out.push(frame(ty, &with));
                let mut twice = base.clone();
                twice.push((base[i].0, v.to_string()));
                out.push(frame(ty, &twice));
                twice.swap(i, base.len());
                out.push(frame(ty, &twice));
            }
        }
        // The type elsewhere than first, doubled, and another member beside.
        let mut s = frame("x", &base);
        s = s.replacen(r#""type":"x""#, r#""extra":{"type":1}"#, 1);
        out.push(format!("{},\"type\":\"{ty}\"}}", &s[..s.len() - 1]));
        out.push(format!("{},\"type\":\"{ty}\"}}", &frame(ty, &base)[..frame(ty, &base).len() - 1]));
        out.push(format!("{},\"type\":5}}", &frame(ty, &base)[..frame(ty, &base).len() - 1]));
    }
    out
}

/// Lines that are not frames, or are frames only just.
const ODD: &[&str] = &[
    "",
    " ",
    "nope",
    "[1,2]",
    r#"["ready"]"#,
    "\"ready\"",
    "5",
    "null",
    "{",
    "{}",
    r#"{"x":1}"#,
    r#"{"type":3}"#,
    r#"{"type":null}"#,
    r#"{"type":["ready"]}"#,
    r#"{"type":"bogus","id":5}"#,
    r#"{"type":"bogus","type":"ready"}"#,
    r#"{"type":3,"type":"ready"}"#,
    r#"{"type":"ready","type":3}"#,
    r#"{"type":"tool_\u0072esult","id":"1"}"#,
    r#"{"type":"ready"} x"#,
    r#"{"type":"ready",}"#,
    "{\"type\":\"ready\"}\r",
    " \t{\"type\":\"ready\"} ",
    r#"{"type":"ready","x":"\ud800"}"#,
    r#"{"type":"ready","x":1e400}"#,
    r#"{"type":"tool_result","id":"1","content":[1e400]}"#,
    r#"{"type":"tool_result","id":99999999999999999999999,"content":[]}"#,
    r#"{"type":"tool_result","id":1.0,"id":"2","is_error":"no"}"#,
    r#"{"type":"tool_result","id":"1","type":"hello"}"#,
    r#"{"id":"1","type":"tool_result","is_error":1}"#,
    "{\"type\":\"notify\",\"message\":\"\u{7f}\"}",
];

/// Lines whose only member the derive could not hold is one no extension
/// frame reads.
const UNREAD: &[&str] = &[r#"{"type":"ready","x":"\ud800"}"#, r#"{"type":"ready","x":1e400}"#];

fn check<F: Frame + DeserializeOwned + PartialEq + std::fmt::Debug>(lines: &[String]) -> usize {
    let mut ok = 0;
    for line in lines {
        let (new, old) = (decode::<F>(line.as_bytes()), reference::<F>(line.as_bytes()));
        assert_eq!(new, old, "{line}");
        ok += usize::from(new.is_ok());
    }
    ok
}

#[test]
fn the_hand_written_decoder_agrees_with_the_derived_one() {
    let mut ext = corpus(EXT);
    let mut host = corpus(HOST);
    let odd: Vec<String> = ODD.iter().map(|s| s.to_string()).collect();
    let deep = format!("{{\"type\":\"ready\",\"x\":{}1{}}}", "[".repeat(200), "]".repeat(200));
    let invalid = String::from_utf8_lossy(b"{\"type\":\"notify\",\"message\":\"\xff\"}").into_owned();
    ext.extend(odd.iter().cloned().chain([deep.clone(), invalid.clone()]));
    host.extend(odd.into_iter().chain([deep.clone(), invalid]));
    // Members no frame reads are skipped unread in an extension's frame
    // (docs/protocol.md §2), where the derive parsed them: there, what the
    // derive could not hold does not make the frame unreadable.
    for line in UNREAD.iter().map(|s| s.to_string()).chain([deep.clone()]) {
        assert_eq!(decode::<ExtFrame>(line.as_bytes()), Ok(ExtFrame::Ready), "{line}");
        assert!(matches!(reference::<ExtFrame>(line.as_bytes()), Err(DecodeError::NotJson(_))), "{line}");
    }
    ext.retain(|l| !UNREAD.contains(&l.as_str()) && *l != deep);
    let (n_ext, n_host) = (ext.len(), host.len());
    let (ok_ext, ok_host) = (check::<ExtFrame>(&ext), check::<HostFrame>(&host));
    // Both kinds of answer were asked for, many times.
    assert!(ok_ext > 500 && n_ext - ok_ext > 500, "{ok_ext} of {n_ext}");
    assert!(ok_host > 300 && n_host - ok_host > 300, "{ok_host} of {n_host}");
    // Bytes that are not UTF-8 are not JSON to either.
    let raw = b"{\"type\":\"notify\",\"message\":\"\xff\"}";
    assert_eq!(decode::<ExtFrame>(raw), reference::<ExtFrame>(raw));
}
