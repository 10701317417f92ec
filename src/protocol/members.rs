//! A frame's members read by hand: the line parsed once into its members
//! in document order (duplicates kept), and the rules of §2's fields
//! (required, lenient, id, optional) with the error texts serde's derives
//! give, so that a malformed frame is refused in the same words. Written
//! out instead of derived: the derived tagged enums were a fifth of the
//! binary's serde code and copied every field into a buffer first.

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Unexpected, Visitor};
use serde_json::{Map, Value};
use std::fmt;

use super::frames::Panel;

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

    /// Whether a member of this name can be read by some frame type (and
    /// so is parsed); the value of any other is skipped unread, as a
    /// derived struct skips a field it does not know.
    fn reads(_key: &str) -> bool {
        true
    }
}

/// The members of a frame's top-level object, in document order.
pub struct Members(pub Vec<(String, Val)>);

/// Reads a frame's [`Members`]: those named in `reads` are parsed, the
/// others skipped unread (a string there that is not valid UTF-8, or holds
/// a lone surrogate, does not make the frame unreadable).
pub struct MembersSeed(pub fn(&str) -> bool);

impl<'de> DeserializeSeed<'de> for MembersSeed {
    type Value = Members;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Members, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for MembersSeed {
    type Value = Members;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
        let mut out = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if !(self.0)(&key) {
                map.next_value::<de::IgnoredAny>()?;
                continue;
            }
            let val = if key == "panel" || key == "open_panel" { map.next_value_seed(ValSeed(self.0))? } else { Val::Json(map.next_value()?) };
            out.push((key, val));
        }
        Ok(Members(out))
    }
}

/// A value that stays a list of members when it is an object; members of
/// that object its `reads` does not name are skipped unread.
struct ValSeed(fn(&str) -> bool);

impl<'de> DeserializeSeed<'de> for ValSeed {
    type Value = Val;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Val, D::Error> {
        d.deserialize_any(self)
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
        while let Some(key) = map.next_key::<String>()? {
            if (self.0)(&key) {
                out.push((key, map.next_value()?));
            } else {
                map.next_value::<de::IgnoredAny>()?;
            }
        }
        Ok(Val::Object(out))
    }
}

/// What went wrong with a field, in serde's words (no position: the
/// derived tagged enums read fields from their buffer, which has none).
pub type Res<T> = Result<T, String>;

fn missing(name: &str) -> String {
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

/// How a field's value is read: the rules of the frame types' fields.
#[derive(Clone, Copy)]
pub enum Rule {
    /// A string; anything else is refused.
    Str,
    /// A string or null; anything else is refused.
    OptStr,
    /// A string or null (empty then); anything else is refused.
    NullAsEmpty,
    /// A boolean; anything else is refused.
    Bool,
    /// An array; anything else is refused.
    Array,
    /// A `u32`; anything else is refused.
    U32,
    /// Any value.
    Any,
    /// Any value; null reads as absent.
    OptAny,
    /// A string or a number, as a string; anything else is refused.
    Id,
    /// A string or a number, as a string; anything else reads as empty.
    LenientId,
    /// A display-only string: anything else reads as empty.
    LenientStr,
    /// A display-only string: anything else reads as absent.
    LenientOptStr,
    /// A display-only flag: anything but a boolean reads as false.
    LenientBool,
    /// A list of strings: anything else reads as empty.
    LenientStrings,
    /// An array: anything else reads as empty.
    LenientArray,
    /// A panel; anything else is refused.
    Panel,
    /// A panel or null; anything else is refused.
    OptPanel,
}

/// A field's value as its rule read it.
pub enum Got {
    Str(String),
    OptStr(Option<String>),
    Bool(bool),
    Array(Vec<Value>),
    U32(u32),
    Json(Value),
    OptJson(Option<Value>),
    Strings(Vec<String>),
    Panel(Panel),
    OptPanel(Option<Panel>),
}

fn read(rule: Rule, v: Val) -> Res<Got> {
    Ok(match rule {
        Rule::Str => Got::Str(string(v)?),
        Rule::OptStr => Got::OptStr(opt_string(v)?),
        Rule::NullAsEmpty => Got::Str(opt_string(v)?.unwrap_or_default()),
        Rule::Bool => Got::Bool(boolean(v)?),
        Rule::Array => Got::Array(array(v)?),
        Rule::U32 => Got::U32(uint32(v)?),
        Rule::Any => Got::Json(v.json()),
        Rule::OptAny => Got::OptJson(Some(v.json()).filter(|v| !v.is_null())),
        Rule::Id => Got::Str(id_string(v)?),
        Rule::LenientId => Got::Str(id_string(v).unwrap_or_default()),
        Rule::LenientStr => Got::Str(lenient_string(v)),
        Rule::LenientOptStr => Got::OptStr(match v.json() {
            Value::String(s) => Some(s),
            _ => None,
        }),
        Rule::LenientBool => Got::Bool(v.json().as_bool().unwrap_or(false)),
        Rule::LenientStrings => Got::Strings(lenient_strings(v)),
        Rule::LenientArray => Got::Array(match v.json() {
            Value::Array(a) => a,
            _ => Vec::new(),
        }),
        Rule::Panel => Got::Panel(panel(v)?),
        Rule::OptPanel => Got::OptPanel(match v {
            Val::Json(Value::Null) => None,
            v => Some(panel(v)?),
        }),
    })
}

/// A frame's fields taken from its members by name, each read by its rule,
/// in document order: the first problem serde's derives would meet is the
/// one reported, and a second member of a known name is refused before its
/// value is read. Members of other names are kept in `rest`.
pub struct Taken {
    spec: &'static [(&'static str, Rule)],
    got: Vec<Option<Got>>,
    /// The members no field took, in document order.
    pub rest: Vec<(String, Val)>,
}

/// Takes the fields of `spec` from `m`.
pub fn take(m: Vec<(String, Val)>, spec: &'static [(&'static str, Rule)]) -> Res<Taken> {
    let mut t = Taken { spec, got: spec.iter().map(|_| None).collect(), rest: Vec::new() };
    for (k, v) in m {
        match spec.iter().position(|(name, _)| *name == k) {
            Some(i) if t.got[i].is_some() => return Err(format!("duplicate field `{k}`")),
            Some(i) => t.got[i] = Some(read(spec[i].1, v)?),
            None => t.rest.push((k, v)),
        }
    }
    Ok(t)
}

impl Taken {
    fn get(&mut self, i: usize) -> Option<Got> {
        self.got.get_mut(i).and_then(Option::take)
    }

    /// Field `i`, which must be there.
    fn need(&mut self, i: usize) -> Res<Got> {
        let name = self.spec.get(i).map_or("", |(n, _)| *n);
        self.get(i).ok_or_else(|| missing(name))
    }

    /// Field `i`, a string (or id) that must be there.
    pub fn need_str(&mut self, i: usize) -> Res<String> {
        Ok(match self.need(i)? {
            Got::Str(s) => s,
            _ => String::new(),
        })
    }

    /// Field `i`, a panel that must be there.
    pub fn need_panel(&mut self, i: usize) -> Res<Panel> {
        Ok(match self.need(i)? {
            Got::Panel(p) => p,
            _ => Panel::default(),
        })
    }

    /// Field `i` as a string, empty when absent.
    pub fn str(&mut self, i: usize) -> String {
        match self.get(i) {
            Some(Got::Str(s)) => s,
            _ => String::new(),
        }
    }

    /// Field `i` as an optional string.
    pub fn opt_str(&mut self, i: usize) -> Option<String> {
        match self.get(i) {
            Some(Got::OptStr(s)) => s,
            _ => None,
        }
    }

    /// Field `i` as a flag, false when absent.
    pub fn bool(&mut self, i: usize) -> bool {
        matches!(self.get(i), Some(Got::Bool(true)))
    }

    /// Field `i` as an array, empty when absent.
    pub fn array(&mut self, i: usize) -> Vec<Value> {
        match self.get(i) {
            Some(Got::Array(a)) => a,
            _ => Vec::new(),
        }
    }

    /// Field `i` as a list of strings, empty when absent.
    pub fn strings(&mut self, i: usize) -> Vec<String> {
        match self.get(i) {
            Some(Got::Strings(a)) => a,
            _ => Vec::new(),
        }
    }

    /// Field `i` as a `u32`, 0 when absent.
    pub fn u32(&mut self, i: usize) -> u32 {
        match self.get(i) {
            Some(Got::U32(n)) => n,
            _ => 0,
        }
    }

    /// Field `i` as any value; `None` when absent.
    pub fn json(&mut self, i: usize) -> Option<Value> {
        match self.get(i) {
            Some(Got::Json(v)) => Some(v),
            _ => None,
        }
    }

    /// Field `i` as an optional value.
    pub fn opt_json(&mut self, i: usize) -> Option<Value> {
        match self.get(i) {
            Some(Got::OptJson(v)) => v,
            _ => None,
        }
    }

    /// Field `i` as an optional panel.
    pub fn opt_panel(&mut self, i: usize) -> Option<Panel> {
        match self.get(i) {
            Some(Got::OptPanel(p)) => p,
            _ => None,
        }
    }
}

/// A string; anything else is refused.
fn string(v: Val) -> Res<String> {
    String::deserialize(v.json()).map_err(text)
}

/// A string or null; anything else is refused.
fn opt_string(v: Val) -> Res<Option<String>> {
    Option::<String>::deserialize(v.json()).map_err(text)
}

/// A boolean; anything else is refused.
fn boolean(v: Val) -> Res<bool> {
    bool::deserialize(v.json()).map_err(text)
}

/// An array of any values; anything else is refused.
fn array(v: Val) -> Res<Vec<Value>> {
    Vec::<Value>::deserialize(v.json()).map_err(text)
}

/// A `u32`; anything else is refused.
fn uint32(v: Val) -> Res<u32> {
    u32::deserialize(v.json()).map_err(text)
}

/// A display-only string: anything else reads as empty.
fn lenient_string(v: Val) -> String {
    match v.json() {
        Value::String(s) => s,
        _ => String::new(),
    }
}

/// A list of strings: anything else (one element that is not a string too) reads as empty.
fn lenient_strings(v: Val) -> Vec<String> {
    Vec::<String>::deserialize(v.json()).unwrap_or_default()
}

/// Ids are strings on the wire; a number is accepted and turned into one.
fn id_string(v: Val) -> Res<String> {
    match v.json() {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(format!("id must be a string, got {other}")),
    }
}

/// A panel: an object of lenient fields, or (as serde reads structs) an
/// array of them in order.
fn panel(v: Val) -> Res<Panel> {
    const SPEC: &[(&str, Rule)] = &[("id", Rule::LenientStr), ("title", Rule::LenientStr), ("lines", Rule::LenientStrings), ("footer", Rule::LenientStr)];
    match v {
        Val::Object(members) => {
            let mut t = take(members.into_iter().map(|(k, v)| (k, Val::Json(v))).collect(), SPEC)?;
            Ok(Panel { id: t.str(0), title: t.str(1), lines: t.strings(2), footer: t.str(3) })
        }
        Val::Json(Value::Array(items)) => {
            let n = items.len();
            if n > 4 {
                return Err(text(de::Error::invalid_length(n, &"4 elements in sequence")));
            }
            let mut it = items.into_iter().map(Val::Json);
            let mut next = || it.next().map(lenient_string).unwrap_or_default();
            let (id, title) = (next(), next());
            let lines = it.next().map(lenient_strings).unwrap_or_default();
            let footer = it.next().map(lenient_string).unwrap_or_default();
            Ok(Panel { id, title, lines, footer })
        }
        Val::Json(other) => Err(invalid_type(&other, "struct Panel")),
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
