//! Tool schema rules: what is wrong with a `register_tool` schema as JSON
//! Schema and as the shape of tool arguments.

use super::outcome::Severity;
use serde_json::Value;

const SCHEMA_TYPES: [&str; 7] = ["object", "array", "string", "number", "integer", "boolean", "null"];

pub(super) type SchemaFinding = (Severity, &'static str, String, String);

/// What is wrong with a tool's schema, as JSON Schema and as tool
/// arguments.
pub(super) fn schema_findings(schema: &Value) -> Vec<SchemaFinding> {
    let mut out = Vec::new();
    let Value::Object(obj) = schema else {
        let what = match schema {
            Value::Null => "missing".to_string(),
            other => format!("a {}, not a JSON object", kind(other)),
        };
        out.push((
            Severity::Error,
            "schema_not_object",
            format!("the schema is {what}; the host refuses the tool"),
            "send \"schema\":{\"type\":\"object\",\"properties\":{...}}".to_string(),
        ));
        return out;
    };
    match obj.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        None => out.push((
            Severity::Warning,
            "schema_not_object_type",
            "the schema has no \"type\":\"object\"; model APIs expect tool arguments to be an object".into(),
            "add \"type\":\"object\" at the top of the schema".into(),
        )),
        Some(Value::String(t)) if SCHEMA_TYPES.contains(&t.as_str()) => out.push((
            Severity::Warning,
            "schema_not_object_type",
            format!("the schema's type is {t:?}; tool arguments are always an object"),
            "use \"type\":\"object\" with properties".into(),
        )),
        Some(_) => {}
    }
    walk(schema, "schema", 0, &mut out);
    out
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn walk(v: &Value, path: &str, depth: usize, out: &mut Vec<SchemaFinding>) {
    if depth > 32 {
        return;
    }
    let Value::Object(obj) = v else {
        if !v.is_boolean() {
            out.push((Severity::Error, "schema_invalid", format!("{path} is a {}, not a schema object", kind(v)), "every subschema is a JSON object (or true/false)".into()));
        }
        return;
    };
    if let Some(t) = obj.get("type") {
        let ok = match t {
            Value::String(s) => SCHEMA_TYPES.contains(&s.as_str()),
            Value::Array(a) => !a.is_empty() && a.iter().all(|x| x.as_str().is_some_and(|s| SCHEMA_TYPES.contains(&s))),
            _ => false,
        };
        if !ok {
            out.push((
                Severity::Error,
                "schema_type",
                format!("{path}.type is {t}, which is not a JSON Schema type"),
                format!("use one of {}", SCHEMA_TYPES.join(", ")),
            ));
        }
    }
    let props = match obj.get("properties") {
        None => None,
        Some(Value::Object(p)) => Some(p),
        Some(other) => {
            out.push((Severity::Error, "schema_properties", format!("{path}.properties is a {}, not an object", kind(other)), "\"properties\":{\"name\":{\"type\":\"string\"}}".into()));
            None
        }
    };
    if let Some(p) = props {
        for (k, sub) in p {
            walk(sub, &format!("{path}.properties.{k}"), depth + 1, out);
        }
    }
    match obj.get("required") {
        None => {}
        Some(Value::Array(items)) => {
            for item in items {
                match item.as_str() {
                    None => out.push((Severity::Error, "schema_required", format!("{path}.required holds {item}, not a property name"), "list property names as strings".into())),
                    Some(name) if !props.is_some_and(|p| p.contains_key(name)) => out.push((
                        Severity::Error,
                        "schema_required",
                        format!("{path}.required names {name:?}, which is not in its properties"),
                        format!("add {name:?} to properties, or remove it from required"),
                    )),
                    Some(_) => {}
                }
            }
        }
        Some(other) => out.push((Severity::Error, "schema_required", format!("{path}.required is a {}, not an array of names", kind(other)), "\"required\":[\"name\"]".into())),
    }
    match obj.get("items") {
        Some(Value::Array(items)) => {
            for (i, sub) in items.iter().enumerate() {
                walk(sub, &format!("{path}.items[{i}]"), depth + 1, out);
            }
        }
        Some(sub) => walk(sub, &format!("{path}.items"), depth + 1, out),
        None => {}
    }
    if let Some(sub @ Value::Object(_)) = obj.get("additionalProperties") {
        walk(sub, &format!("{path}.additionalProperties"), depth + 1, out);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        match obj.get(key) {
            Some(Value::Array(items)) => {
                for (i, sub) in items.iter().enumerate() {
                    walk(sub, &format!("{path}.{key}[{i}]"), depth + 1, out);
                }
            }
            Some(other) => out.push((Severity::Error, "schema_invalid", format!("{path}.{key} is a {}, not an array", kind(other)), format!("\"{key}\":[{{...}}, ...]"))),
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn codes(schema: Value) -> Vec<&'static str> {
        schema_findings(&schema).into_iter().map(|f| f.1).collect()
    }

    #[test]
    fn schemas() {
        assert!(codes(json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})).is_empty());
        assert_eq!(codes(json!("x")), ["schema_not_object"]);
        assert_eq!(codes(Value::Null), ["schema_not_object"]);
        assert_eq!(codes(json!({"type": "object", "properties": {}, "required": ["a"]})), ["schema_required"]);
        assert_eq!(codes(json!({"type": "object", "properties": {"a": {"type": "text"}}})), ["schema_type"]);
        assert_eq!(codes(json!({"type": "object", "properties": {"a": {"type": ["string", "null"]}}})), Vec::<&str>::new());
        assert_eq!(codes(json!({"properties": {}})), ["schema_not_object_type"]);
        assert_eq!(codes(json!({"type": "object", "properties": [1]})), ["schema_properties"]);
        assert_eq!(
            codes(json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "str"}}}})),
            ["schema_type"]
        );
    }

}
