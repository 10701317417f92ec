//! Request ids kept as the JSON text they came as (docs/protocol.md §4): an id
//! is echoed digit for digit and escape for escape (an integer beyond 64
//! bits, a number with a fraction, a string with `\u` escapes), and two
//! ids are the same when their texts are byte-equal. A `serde_json::Value`
//! would round a large integer to a float; [`Keyed`] reads a request
//! object in one pass, keeping the members named as ids as text and
//! every other member as a `Value`.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::fmt;
use std::sync::Arc;

/// The JSON text of an id that is a string or a number, exactly as it
/// came. Equal, hashed and ordered by that text: `1`, `1.0` and `"1"` are
/// three ids.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WireId(Arc<str>);

impl WireId {
    /// `raw` as an id, when it is a JSON string or number.
    pub fn from_raw(raw: &RawValue) -> Option<WireId> {
        let text = raw.get();
        match text.as_bytes().first() {
            Some(b'"' | b'-' | b'0'..=b'9') => Some(WireId(Arc::from(text))),
            _ => None,
        }
    }

    /// The id of a JSON string or number held as a value (a number that
    /// was read into a `Value` already is as exact as that value is).
    pub fn from_value(v: &Value) -> Option<WireId> {
        match v {
            Value::String(_) | Value::Number(_) => Some(WireId(Arc::from(v.to_string()))),
            _ => None,
        }
    }

    /// The id that is the JSON string `s`.
    pub fn string(s: &str) -> WireId {
        WireId(Arc::from(Value::String(s.to_string()).to_string()))
    }

    /// Its JSON text.
    pub fn text(&self) -> &str {
        &self.0
    }

    /// As a `Value`: exact for strings and for numbers a `Value` holds
    /// exactly; only for code that needs a `Value` (never for an echo).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }
}

impl fmt::Debug for WireId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for WireId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Written as its text, untouched, by serde_json's serializer.
impl Serialize for WireId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // The text was a JSON value when it was read, so this never fails;
        // should it, the id is written as a string rather than lost.
        match serde_json::from_str::<&RawValue>(&self.0) {
            Ok(raw) => raw.serialize(s),
            Err(_) => s.serialize_str(&self.0),
        }
    }
}

/// An id member as it came.
#[derive(Debug, Clone, PartialEq)]
pub enum IdField {
    /// Not there.
    Absent,
    /// A string or a number.
    Id(WireId),
    /// Anything else (`null`, a boolean, an object, an array).
    Other(Value),
}

impl IdField {
    fn of(raw: &RawValue) -> Result<IdField, serde_json::Error> {
        match WireId::from_raw(raw) {
            Some(id) => Ok(IdField::Id(id)),
            None => serde_json::from_str(raw.get()).map(IdField::Other),
        }
    }
}

/// A JSON object read with the members that name ids kept as text
/// ([`IdField`]) and the others as values, in one pass.
#[derive(Debug, Clone, PartialEq)]
pub struct Keyed {
    /// `id`.
    pub id: IdField,
    /// `target` (what serve's `cancel` names).
    pub target: IdField,
    /// `params.requestId` (what JSON-RPC's `notifications/cancelled`
    /// names); `params` keeps it too, as a value.
    pub request_id: IdField,
    /// Every other member.
    pub rest: Map<String, Value>,
}

impl Keyed {
    /// Puts `target` back among the other members as a value (for a
    /// request where it is not an id but a payload field).
    pub fn target_to_rest(&mut self) {
        match std::mem::replace(&mut self.target, IdField::Absent) {
            IdField::Absent => {}
            IdField::Id(id) => {
                self.rest.insert("target".into(), id.to_value());
            }
            IdField::Other(v) => {
                self.rest.insert("target".into(), v);
            }
        }
    }
}

struct KeyedVisitor;

impl<'de> Visitor<'de> for KeyedVisitor {
    type Value = Keyed;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Keyed, A::Error> {
        let mut k = Keyed { id: IdField::Absent, target: IdField::Absent, request_id: IdField::Absent, rest: Map::new() };
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "params" {
                let Params(params, request_id) = map.next_value()?;
                k.request_id = request_id;
                k.rest.insert("params".into(), params);
                continue;
            }
            let slot = match key.as_ref() {
                "id" => Some(&mut k.id),
                "target" => Some(&mut k.target),
                _ => None,
            };
            match slot {
                Some(slot) => {
                    let raw: &'de RawValue = map.next_value()?;
                    // A repeated member: the last one counts, as for the others.
                    *slot = IdField::of(raw).map_err(de::Error::custom)?;
                }
                None => {
                    let v: Value = map.next_value()?;
                    k.rest.insert(key.into_owned(), v);
                }
            }
        }
        Ok(k)
    }
}

impl<'de> Deserialize<'de> for Keyed {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Keyed, D::Error> {
        d.deserialize_map(KeyedVisitor)
    }
}

/// A `params` member: its value, and its `requestId` kept as text when it
/// is an object that has one.
struct Params(Value, IdField);

impl<'de> Deserialize<'de> for Params {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Params, D::Error> {
        d.deserialize_any(ParamsVisitor)
    }
}

struct ParamsVisitor;

impl<'de> Visitor<'de> for ParamsVisitor {
    type Value = Params;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params, A::Error> {
        let (mut m, mut id) = (Map::new(), IdField::Absent);
        while let Some(key) = map.next_key::<String>()? {
            if key == "requestId" {
                let raw: &'de RawValue = map.next_value()?;
                id = IdField::of(raw).map_err(de::Error::custom)?;
                let v: Value = serde_json::from_str(raw.get()).map_err(de::Error::custom)?;
                m.insert(key, v);
            } else {
                m.insert(key, map.next_value()?);
            }
        }
        Ok(Params(Value::Object(m), id))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Params, A::Error> {
        Value::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(|v| Params(v, IdField::Absent))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Params, E> {
        Ok(Params(Value::Bool(v), IdField::Absent))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Params, E> {
        Ok(Params(Value::from(v), IdField::Absent))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Params, E> {
        Ok(Params(Value::from(v), IdField::Absent))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Params, E> {
        Ok(Params(Value::from(v), IdField::Absent))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Params, E> {
        Ok(Params(Value::from(v), IdField::Absent))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Params, E> {
        Ok(Params(Value::Null, IdField::Absent))
    }
}

/// One element of a JSON-RPC message or batch: an object, read as
/// [`Keyed`], or any other value.
#[derive(Debug, Clone, PartialEq)]
pub enum Element {
    /// An object.
    Object(Keyed),
    /// Anything else.
    Other(Value),
}

/// A whole JSON-RPC line: one element, or a batch of them.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// Not an array.
    One(Element),
    /// An array.
    Batch(Vec<Element>),
}

struct ElementVisitor;

macro_rules! scalar {
    ($name:ident, $t:ty) => {
        fn $name<E: de::Error>(self, v: $t) -> Result<Element, E> {
            Ok(Element::Other(Value::from(v)))
        }
    };
}

impl<'de> Visitor<'de> for ElementVisitor {
    type Value = Element;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    scalar!(visit_bool, bool);
    scalar!(visit_i64, i64);
    scalar!(visit_u64, u64);
    scalar!(visit_f64, f64);
    scalar!(visit_str, &str);

    fn visit_string<E: de::Error>(self, v: String) -> Result<Element, E> {
        Ok(Element::Other(Value::String(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Element, E> {
        Ok(Element::Other(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Element, A::Error> {
        Value::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(Element::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Element, A::Error> {
        KeyedVisitor.visit_map(map).map(Element::Object)
    }
}

impl<'de> Deserialize<'de> for Element {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Element, D::Error> {
        d.deserialize_any(ElementVisitor)
    }
}

struct MessageVisitor;

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = Message;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Message, A::Error> {
        let mut items = Vec::new();
        while let Some(e) = seq.next_element::<Element>()? {
            items.push(e);
        }
        Ok(Message::Batch(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Message, A::Error> {
        KeyedVisitor.visit_map(map).map(|k| Message::One(Element::Object(k)))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Message, E> {
        ElementVisitor.visit_bool(v).map(Message::One)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Message, E> {
        ElementVisitor.visit_i64(v).map(Message::One)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Message, E> {
        ElementVisitor.visit_u64(v).map(Message::One)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Message, E> {
        ElementVisitor.visit_f64(v).map(Message::One)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Message, E> {
        ElementVisitor.visit_str(v).map(Message::One)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Message, E> {
        ElementVisitor.visit_unit().map(Message::One)
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Message, D::Error> {
        d.deserialize_any(MessageVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_keep_their_text_and_compare_as_text() {
        let k: Keyed = serde_json::from_str(r#"{"type":"x","id":123456789012345678901234567890,"target":"a\u0041","n":1}"#).unwrap();
        let IdField::Id(id) = &k.id else { panic!("{k:?}") };
        assert_eq!(id.text(), "123456789012345678901234567890");
        assert_eq!(serde_json::to_string(id).unwrap(), "123456789012345678901234567890");
        let IdField::Id(t) = &k.target else { panic!("{k:?}") };
        assert_eq!(t.text(), r#""a\u0041""#);
        assert_ne!(Some(t.clone()), WireId::from_value(&Value::String("aA".into())));
        assert_eq!(k.rest.len(), 2);
        let k: Keyed = serde_json::from_str(r#"{"id":null,"target":true}"#).unwrap();
        assert_eq!((k.id, k.target), (IdField::Other(Value::Null), IdField::Other(Value::Bool(true))));
        assert!(serde_json::from_str::<Keyed>("[1]").is_err());
    }

    #[test]
    fn a_message_is_one_element_or_a_batch() {
        let m: Message = serde_json::from_str(r#"[{"id":18446744073709551617},2,"s",null,[1]]"#).unwrap();
        let Message::Batch(items) = m else { panic!() };
        assert_eq!(items.len(), 5);
        let Element::Object(k) = &items[0] else { panic!() };
        assert_eq!(k.id, IdField::Id(WireId::from_raw(&RawValue::from_string("18446744073709551617".into()).unwrap()).unwrap()));
        assert_eq!(items[4], Element::Other(serde_json::json!([1])));
        assert_eq!(serde_json::from_str::<Message>("7").unwrap(), Message::One(Element::Other(Value::from(7))));
    }
}
