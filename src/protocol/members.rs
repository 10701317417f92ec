//! A frame's members read by hand: the line parsed once into its members
//! in document order (duplicates kept), and the rules of §2's fields
//! (required, lenient, id, optional) with the error texts serde's derives
//! give, so that a malformed frame is refused in the same words. Written
//! out instead of derived: the derived tagged enums were a fifth of the
//! binary's serde code and copied every field into a buffer first.

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Unexpected, Visitor};
use serde_json::{Map, Value};
use std::fmt;

use super::Panel;

/// A member's value. Objects under the keys that hold a panel keep their
/// own duplicate keys, which the panel's fields refuse.
pub enum Val {
    /// Any JSON value.
    Json(Value),
    /// An object under `panel` or `open_panel`, members in document order.
    Object(Vec<(String, Value)>),
}

impl Val {
    /// As a `Value`; a duplicate key's last value wins, as in any `Value`.
    pub fn json(self) -> Value {
        match self {
            Val::Json(v) => v,
            Val::Object(m) => Value::Object(payload(m.into_iter().map(|(k, v)| (k, Val::Json(v))).collect())),
        }
    }
}

/// Frames built from their members (sealed: only this module's frames).
pub trait FromMembers: Sized {
    /// The frame of `type` `ty` from its other members; `None` for a type
    /// this side does not know.
    fn from_members(ty: &str, m: Vec<(String, Val)>) -> Res<Option<Self>>;
}

/// The members of a frame's top-level object, in document order.
pub struct Members(pub Vec<(String, Val)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Members, D::Error> {
        d.deserialize_any(MembersVisitor)
    }
}

struct MembersVisitor;

impl<'de> Visitor<'de> for MembersVisitor {
    type Value = Members;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
        let mut out = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let val = if key == "panel" || key == "open_panel" { map.next_value_seed(ValSeed)? } else { Val::Json(map.next_value()?) };
            out.push((key, val));
        }
        Ok(Members(out))
    }
}

/// A value that stays a list of members when it is an object.
struct ValSeed;

impl<'de> DeserializeSeed<'de> for ValSeed {
    type Value = Val;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Val, D::Error> {
        d.deserialize_any(ValSeed)
    }
}

impl<'de> Visitor<'de> for ValSeed {
    type Value = Val;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Val, E> {
        Ok(Val::Json(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Val, E> {
        Ok(Val::Json(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Val, E> {
        Ok(Val::Json(Value::from(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Val, E> {
        Ok(Val::Json(Value::from(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Val, E> {
        Ok(Val::Json(Value::String(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<Val, E> {
        Ok(Val::Json(Value::String(v)))
    }
    fn visit_unit<E>(self) -> Result<Val, E> {
        Ok(Val::Json(Value::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Val, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element()? {
            out.push(v);
        }
        Ok(Val::Json(Value::Array(out)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Val, A::Error> {
        let mut out = Vec::new();
        while let Some(entry) = map.next_entry()? {
            out.push(entry);
        }
        Ok(Val::Object(out))
    }
}

/// What went wrong with a field, in serde's words (no position: the
/// derived tagged enums read fields from their buffer, which has none).
pub type Res<T> = Result<T, String>;

pub fn missing(name: &str) -> String {
    format!("missing field `{name}`")
}

fn text(e: serde_json::Error) -> String {
    e.to_string()
}

fn invalid_type(v: &Value, expected: &str) -> String {
    let unexp = match v {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => Unexpected::Unsigned(u),
            (_, Some(i), _) => Unexpected::Signed(i),
            (_, _, f) => Unexpected::Float(f.unwrap_or_default()),
        },
        Value::String(s) => Unexpected::Str(s),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    };
    text(de::Error::invalid_type(unexp, &expected))
}

/// Stores `name`'s value in `slot` through `read`; a second `name` is refused
/// before its value is read, as serde's derives do.
pub fn set<T>(slot: &mut Option<T>, name: &str, v: Val, read: impl FnOnce(Val) -> Res<T>) -> Res<()> {
    if slot.is_some() {
        return Err(format!("duplicate field `{name}`"));
    }
    *slot = Some(read(v)?);
    Ok(())
}

/// A field that must be there.
pub fn need<T>(slot: Option<T>, name: &str) -> Res<T> {
    slot.ok_or_else(|| missing(name))
}

/// A string; anything else is refused.
pub fn string(v: Val) -> Res<String> {
    String::deserialize(v.json()).map_err(text)
}

/// A string or null; anything else is refused.
pub fn opt_string(v: Val) -> Res<Option<String>> {
    Option::<String>::deserialize(v.json()).map_err(text)
}

/// A boolean; anything else is refused.
pub fn boolean(v: Val) -> Res<bool> {
    bool::deserialize(v.json()).map_err(text)
}

/// An array of any values; anything else is refused.
pub fn array(v: Val) -> Res<Vec<Value>> {
    Vec::<Value>::deserialize(v.json()).map_err(text)
}

/// A `u32`; anything else is refused.
pub fn uint32(v: Val) -> Res<u32> {
    u32::deserialize(v.json()).map_err(text)
}

/// Any value.
pub fn any(v: Val) -> Res<Value> {
    Ok(v.json())
}

/// Any value; null reads as absent.
pub fn opt_any(v: Val) -> Res<Option<Value>> {
    Ok(Some(v.json()).filter(|v| !v.is_null()))
}

/// A display-only string: anything else reads as empty.
pub fn lenient_string(v: Val) -> Res<String> {
    Ok(match v.json() {
        Value::String(s) => s,
        _ => String::new(),
    })
}

/// A display-only string that may be absent: anything else reads as absent.
pub fn lenient_opt_string(v: Val) -> Res<Option<String>> {
    Ok(match v.json() {
        Value::String(s) => Some(s),
        _ => None,
    })
}

/// A display-only flag: anything but a boolean reads as false.
pub fn lenient_bool(v: Val) -> Res<bool> {
    Ok(v.json().as_bool().unwrap_or(false))
}

/// A list of strings: anything else (one element that is not a string too) reads as empty.
pub fn lenient_strings(v: Val) -> Res<Vec<String>> {
    Ok(Vec::<String>::deserialize(v.json()).unwrap_or_default())
}

/// A list of any values: anything but an array reads as empty.
pub fn lenient_array(v: Val) -> Res<Vec<Value>> {
    Ok(match v.json() {
        Value::Array(a) => a,
        _ => Vec::new(),
    })
}

/// Ids are strings on the wire; a number is accepted and turned into one.
pub fn id_string(v: Val) -> Res<String> {
    match v.json() {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(format!("id must be a string, got {other}")),
    }
}

/// An id that may be of the wrong type: `""` then.
pub fn lenient_id(v: Val) -> Res<String> {
    Ok(id_string(v).unwrap_or_default())
}

/// A string that may be `null`: empty then.
pub fn null_as_empty(v: Val) -> Res<String> {
    opt_string(v).map(Option::unwrap_or_default)
}

/// A panel: an object of lenient fields, or (as serde reads structs) an
/// array of them in order.
pub fn panel(v: Val) -> Res<Panel> {
    let mut p = Panel::default();
    match v {
        Val::Object(members) => {
            let (mut id, mut title, mut lines, mut footer) = (None, None, None, None);
            for (k, v) in members {
                let v = Val::Json(v);
                match k.as_str() {
                    "id" => set(&mut id, "id", v, lenient_string)?,
                    "title" => set(&mut title, "title", v, lenient_string)?,
                    "lines" => set(&mut lines, "lines", v, lenient_strings)?,
                    "footer" => set(&mut footer, "footer", v, lenient_string)?,
                    _ => {}
                }
            }
            p = Panel { id: id.unwrap_or_default(), title: title.unwrap_or_default(), lines: lines.unwrap_or_default(), footer: footer.unwrap_or_default() };
        }
        Val::Json(Value::Array(items)) => {
            let n = items.len();
            if n > 4 {
                return Err(text(de::Error::invalid_length(n, &"4 elements in sequence")));
            }
            let mut it = items.into_iter().map(Val::Json);
            if let Some(v) = it.next() {
                p.id = lenient_string(v)?;
            }
            if let Some(v) = it.next() {
                p.title = lenient_string(v)?;
            }
            if let Some(v) = it.next() {
                p.lines = lenient_strings(v)?;
            }
            if let Some(v) = it.next() {
                p.footer = lenient_string(v)?;
            }
        }
        Val::Json(other) => return Err(invalid_type(&other, "struct Panel")),
    }
    Ok(p)
}

/// A panel or null.
pub fn opt_panel(v: Val) -> Res<Option<Panel>> {
    match v {
        Val::Json(Value::Null) => Ok(None),
        v => panel(v).map(Some),
    }
}

/// The members not taken by a frame's own fields, as an event's payload.
pub fn payload(rest: Vec<(String, Val)>) -> Map<String, Value> {
    // Inserted one by one: collecting would sort the pairs first, one more
    // copy of the stable sort in the binary.
    let mut map = Map::new();
    for (k, v) in rest {
        map.insert(k, v.json());
    }
    map
}
