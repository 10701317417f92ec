//! The wire format: every frame of docs/protocol.md §2 in both directions, its
//! one-line encoding, and a decoder that never panics and says exactly what
//! was wrong with a line it cannot use.

mod frames;
pub use frames::*;

mod codec;
pub use codec::{decode, encode, head_id, DecodeError, Frame};
mod members;
mod variants;
mod repair;
pub use repair::{decode_repaired, repair, repair_note};
#[cfg(test)]
mod differential;
mod wireid;
pub use wireid::{Element, IdField, Keyed, Message, WireId};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ext(s: &str) -> Result<ExtFrame, DecodeError> {
        decode(s.as_bytes())
    }

    #[test]
    fn the_id_of_a_cut_reply() {
        let big = "x".repeat(100);
        let line = format!(r#"{{"type":"tool_result","content":[{{"type":"text","text":"{big}","id":"inner"}}],"id":"42","is_error":false"#);
        assert_eq!(head_id(line.as_bytes()).as_deref(), Some("42"));
        assert_eq!(head_id(br#"{"id":17,"type":"tool_result","content":[{"#).as_deref(), Some("17"));
        assert_eq!(head_id(br#" { "a" : {"id":"no"}, "b":"q\"id\"", "id" : "7" "#).as_deref(), Some("7"));
        assert_eq!(head_id(br#"{"type":"tool_result","content":[{"type":"text","text":"aaaa"#), None);
        assert_eq!(head_id(b"not json"), None);
        assert_eq!(head_id(br#"{"id":12"#), None, "a number cut short is not an id");
    }

    #[test]
    fn decodes_every_ext_frame() {
        assert!(matches!(ext(r#"{"type":"hello","name":"w","version":"1","capabilities":["tools"]}"#), Ok(ExtFrame::Hello { .. })));
        assert_eq!(ext(r#"{"type":"ready","extra":1}"#), Ok(ExtFrame::Ready));
        assert_eq!(ext("{\"type\":\"clear_notes\"}\r"), Ok(ExtFrame::ClearNotes));
        assert_eq!(ext(r#"{"type":"shutdown_ack"}"#), Ok(ExtFrame::ShutdownAck));
        let r = ext(r#"{"type":"command_response","id":"7","action":"display","display":"hi"}"#).unwrap();
        let ExtFrame::CommandResponse(r) = r else { panic!() };
        assert_eq!((r.id.as_str(), r.display.as_deref()), ("7", Some("hi")));
        let r = ext(r#"{"type":"tool_result","id":8,"content":[{"type":"text","text":"x"}]}"#).unwrap();
        assert_eq!(r, ExtFrame::ToolResult(ToolResult { id: "8".into(), content: vec![json!({"type":"text","text":"x"})], ..Default::default() }));
        let h = ext(r#"{"type":"hello","name":5,"capabilities":{"x":1}}"#).unwrap();
        assert_eq!(h, ExtFrame::Hello { name: String::new(), version: String::new(), capabilities: vec![] });
    }

    #[test]
    fn classifies_bad_lines() {
        assert!(matches!(ext("nope"), Err(DecodeError::NotJson(_))));
        assert!(matches!(ext("\u{0}\u{1}"), Err(DecodeError::NotJson(_))));
        assert_eq!(ext("[1,2]"), Err(DecodeError::NotObject));
        assert_eq!(ext(r#"{"type":3}"#), Err(DecodeError::NoType));
        assert_eq!(ext(r#"{"x":1}"#), Err(DecodeError::NoType));
        assert_eq!(ext(r#"{"type":"bogus"}"#), Err(DecodeError::UnknownType("bogus".into())));
        match ext(r#"{"type":"event_intercept_response","id":"3","block":"yes"}"#) {
            Err(DecodeError::BadFields { ty, id, .. }) => assert_eq!((ty.as_str(), id.as_deref()), ("event_intercept_response", Some("3"))),
            other => panic!("{other:?}"),
        }
        let deep = "[".repeat(100_000);
        assert!(ext(&deep).is_err());
        let invalid = b"{\"type\":\"notify\",\"message\":\"\xff\"}";
        assert!(decode::<ExtFrame>(invalid).is_err());
    }

    #[test]
    fn fast_decoding_agrees_with_the_tagged_enum() {
        let ext_lines = [
            r#"{"type":"tool_result","id":"8","content":[{"type":"text","text":"x\n\u00e9"},{"n":1.5e3,"k":[null,true]}],"is_error":true}"#,
            r#"{ "type" : "tool_result", "id": 9, "content": [], "extra": {"a": 1}}"#,
            r#"{"type":"tool_result","id":"1"}"#,
            r#"{"type":"command_response","id":"7","action":"display","display":"hi","open_panel":{"id":"p","lines":["a"]}}"#,
            r#"{"type":"command_response","id":"7","error":""}"#,
            r#"{"type":"event_intercept_response","id":"3","block":true,"reason":5,"modified_args":{"c":"ls"},"replace_text":"t"}"#,
        ];
        for line in ext_lines {
            let slow: ExtFrame = serde_json::from_slice(line.as_bytes()).unwrap();
            if !line.contains("command_response") {
                assert_eq!(ExtFrame::decode_fast(line.as_bytes()), Some(slow.clone()), "{line}");
            }
            assert_eq!(decode::<ExtFrame>(line.as_bytes()), Ok(slow));
        }
        let host_lines = [
            r#"{"type":"tool_call","id":"1","name":"x","args":{"i":[1,2,{"j":"k"}]}}"#,
            r#"{"type": "tool_call", "name": "x", "id": 2}"#,
            r#"{"type":"tool_call","id":"1","name":"x","args":null}"#,
            r#"{"type":"command_invoked","id":"4","name":"echo","args":"a b"}"#,
            r#"{"type":"command_invoked","id":"4","name":"echo","args":7}"#,
        ];
        for line in host_lines {
            let slow: HostFrame = serde_json::from_slice(line.as_bytes()).unwrap();
            if line.contains("tool_call") {
                assert_eq!(HostFrame::decode_fast(line.as_bytes()), Some(slow.clone()), "{line}");
            }
            assert_eq!(decode::<HostFrame>(line.as_bytes()), Ok(slow));
        }
        // Anything off goes to the general decoder and its exact errors.
        for line in [
            r#"{"type":"tool_result","id":[1]}"#,
            r#"{"type":"tool_result","type":"tool_result","id":"1"}"#,
            r#"{"type":"tool_\u0072esult","id":"1"}"#,
            r#"{"type":"tool_result","id":"1"} x"#,
            r#"{"id":"1","type":"tool_result"}"#,
            r#"{"type":"tool_result","id":"1","type":"hello"}"#,
        ] {
            assert_eq!(ExtFrame::decode_fast(line.as_bytes()), None, "{line}");
        }
        assert!(matches!(
            decode::<ExtFrame>(br#"{"type":"tool_result","id":"1","is_error":"no"}"#),
            Err(DecodeError::BadFields { id: Some(_), .. })
        ));
        assert!(matches!(decode::<ExtFrame>(br#"{"type":"tool_\u0072esult","id":"1"}"#), Ok(ExtFrame::ToolResult(_))));
    }

    #[test]
    fn host_frames_round_trip() {
        let mut payload = Payload::new();
        payload.insert("step".into(), json!(1));
        let f = HostFrame::Event { event: "turn_start".into(), payload };
        let line = encode(&f);
        assert_eq!(line, b"{\"type\":\"event\",\"event\":\"turn_start\",\"step\":1}\n");
        assert_eq!(decode::<HostFrame>(&line[..line.len() - 1]), Ok(f));
        let t = decode::<HostFrame>(br#"{"type":"tool_call","id":"1","name":"x"}"#).unwrap();
        assert_eq!(t, HostFrame::ToolCall { id: "1".into(), name: "x".into(), args: json!({}), operation_key: None, reconcile: None });
        assert_eq!(encode(&HostFrame::Shutdown), b"{\"type\":\"shutdown\"}\n");
    }
}
