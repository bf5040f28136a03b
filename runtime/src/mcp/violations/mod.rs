//! Every violation of a tool's input schema, for the `validation` envelope of
//! arguments that did not decode.
//!
//! Decoding with serde stops at the first problem of each argument, so a
//! struct with three bad fields would report one. Once serde has refused the
//! arguments — serde stays the judge of what a tool accepts — this walk of
//! the input schema lists the rest: every offending field path, up to a cap.
//! It reads the part of JSON Schema 2020-12 that `schemars` writes (`type`,
//! `properties`, `required`, `additionalProperties`, `items`,
//! `prefixItems`, `enum`, `const`, `anyOf`/`oneOf`/`allOf`, local `$ref`s
//! (`$defs`, `definitions`, any pointer), numeric and length bounds; numbers
//! equal by value) and ignores the rest (a member `patternProperties` may
//! describe is not judged), so it can only
//! miss a violation, never invent one. Its descriptions never quote a value.

use std::cell::Cell;

use serde_json::{Map, Value};

use crate::envelope::{ErrorEnvelope, Refusal, Violation};
use crate::json::depth::MAX_DEPTH;
use crate::json::pointer::resolve;

/// The most schema nodes one walk visits, its probes of `anyOf` branches
/// included: the arguments come from the caller, and a walk that tried
/// every branch of every level of a recursive type would take time
/// exponential in how deep they nest. Past it the walk stops, and lists
/// what it found (serde has refused the arguments already).
const MAX_STEPS: usize = 100_000;

/// The violations of `arguments` against the object schema `input_schema`,
/// at most `cap` of them, with field paths as `serde_path_to_error` writes
/// them (`filters.status`, `items[2].sku`).
pub(crate) fn violations(
    input_schema: &Map<String, Value>,
    arguments: &Map<String, Value>,
    cap: usize,
) -> Vec<Violation> {
    walk(input_schema, arguments, cap, &Cell::new(0))
}

/// [`violations`], counting the `steps` taken.
fn walk(
    input_schema: &Map<String, Value>,
    arguments: &Map<String, Value>,
    cap: usize,
    steps: &Cell<usize>,
) -> Vec<Violation> {
    let root = Value::Object(input_schema.clone());
    let mut walk = Walk {
        root: &root,
        found: Vec::new(),
        cap,
        steps,
    };
    let arguments = Value::Object(arguments.clone());
    walk.check(&root, &arguments, &mut String::new(), 0);
    walk.found
}

/// The message of a `validation` failure of the arguments of `tool`: its
/// first violation, and how many more there are. `violations` is not empty.
pub(crate) fn summary(tool: &str, violations: &[Violation]) -> String {
    let first = &violations[0];
    let mut message = format!(
        "Invalid arguments for `{tool}`: `{}` {}",
        first.field, first.description
    );
    if violations.len() > 1 {
        message.push_str(&format!(" (and {} more)", violations.len() - 1));
    }
    message
}

struct Walk<'s> {
    /// The whole input schema, which local `$ref`s point into.
    root: &'s Value,
    found: Vec<Violation>,
    cap: usize,
    /// The steps taken by the walk and every probe it makes.
    steps: &'s Cell<usize>,
}

impl Walk<'_> {
    fn push(&mut self, path: &str, description: String) {
        if self.found.len() < self.cap {
            self.found.push(Violation::new(path, description));
        }
    }

    fn full(&self) -> bool {
        self.found.len() >= self.cap
    }

    /// Takes `steps` more of the budget: `false` once it is spent. A
    /// schema node visited is a step, and so is each member or item a
    /// node's walk turns to, known to the schema or not.
    fn spend(&self, steps: usize) -> bool {
        let taken = self.steps.get();
        if taken >= MAX_STEPS {
            return false;
        }
        self.steps.set(taken.saturating_add(steps).min(MAX_STEPS));
        true
    }

    /// Whether `value` is valid against `schema` (as far as this walk reads it).
    fn accepts(&self, schema: &Value, value: &Value, depth: usize) -> bool {
        let mut probe = Walk {
            root: self.root,
            found: Vec::new(),
            cap: 1,
            steps: self.steps,
        };
        probe.check(schema, value, &mut String::new(), depth);
        probe.found.is_empty()
    }

    fn check(&mut self, schema: &Value, value: &Value, path: &mut String, depth: usize) {
        if !self.spend(1) || self.full() || depth > 2 * MAX_DEPTH {
            return;
        }
        let schema = match schema {
            Value::Bool(false) => {
                self.push(path, "is not allowed here".to_owned());
                return;
            }
            Value::Object(schema) => schema,
            _ => return,
        };
        if let Some(target) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|reference| resolve(self.root, reference))
        {
            self.check(target, value, path, depth + 1);
        }
        if let Some(Value::Array(all)) = schema.get("allOf") {
            for branch in all {
                self.check(branch, value, path, depth + 1);
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = schema.get(key) {
                self.one_of(branches, value, path, depth);
            }
        }
        if let Some(types) = schema.get("type")
            && !has_type(types, value)
        {
            self.push(
                path,
                format!("expected {}, got {}", describe_type(types), kind(value)),
            );
            return;
        }
        if let Some(expected) = schema.get("const")
            && !same(expected, value)
        {
            self.push(path, format!("expected exactly {expected}"));
        }
        if let Some(Value::Array(options)) = schema.get("enum")
            && !options.iter().any(|option| same(option, value))
        {
            let options: Vec<String> = options.iter().map(Value::to_string).collect();
            self.push(path, format!("expected one of {}", options.join(", ")));
        }
        match value {
            Value::Number(number) => self.number(schema, number, path),
            Value::String(text) => self.string(schema, text, path),
            Value::Object(members) => self.object(schema, members, path, depth),
            Value::Array(items) => self.array(schema, items, path, depth),
            _ => {}
        }
    }

    /// `anyOf` / `oneOf`: fine when a branch accepts the value; otherwise
    /// the detail of the one branch of the value's kind, if there is one
    /// (`Option<Struct>` is a struct or `null`). A branch of another kind
    /// accepts nothing of this one, and the one branch of its kind is
    /// walked once, not probed first and walked again: a recursive
    /// `Option<Box<Node>>` would double the walk at every level.
    fn one_of(&mut self, branches: &[Value], value: &Value, path: &mut String, depth: usize) {
        let of_kind: Vec<&Value> = branches
            .iter()
            .filter(|branch| self.kind_fits(branch, value))
            .collect();
        match of_kind.as_slice() {
            [branch] => self.check(branch, value, path, depth + 1),
            several
                if several
                    .iter()
                    .any(|branch| self.accepts(branch, value, depth + 1)) => {}
            _ => self.push(path, "does not match any of the accepted forms".to_owned()),
        }
    }

    /// Whether `schema` admits values of `value`'s JSON kind at all.
    fn kind_fits(&self, schema: &Value, value: &Value) -> bool {
        let schema = match schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|reference| resolve(self.root, reference))
        {
            Some(target) => target,
            None => schema,
        };
        match schema.get("type") {
            Some(types) => has_type(types, value),
            None => schema.get("const").is_none_or(|c| kind(c) == kind(value)),
        }
    }

    fn number(&mut self, schema: &Map<String, Value>, number: &serde_json::Number, path: &str) {
        let Some(n) = number.as_f64() else { return };
        let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
        if let Some(min) = bound("minimum")
            && n < min
        {
            self.push(path, format!("must be at least {min}"));
        }
        if let Some(max) = bound("maximum")
            && n > max
        {
            self.push(path, format!("must be at most {max}"));
        }
        if let Some(min) = bound("exclusiveMinimum")
            && n <= min
        {
            self.push(path, format!("must be more than {min}"));
        }
        if let Some(max) = bound("exclusiveMaximum")
            && n >= max
        {
            self.push(path, format!("must be less than {max}"));
        }
    }

    fn string(&mut self, schema: &Map<String, Value>, text: &str, path: &str) {
        let bounded = schema.contains_key("minLength") || schema.contains_key("maxLength");
        // Counting a long text's characters is a step a few KiB.
        if !bounded || !self.spend(text.len() / 4096) {
            return;
        }
        let chars = text.chars().count() as u64;
        if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
            && chars < min
        {
            self.push(path, format!("must be at least {min} characters long"));
        }
        if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
            && chars > max
        {
            self.push(path, format!("must be at most {max} characters long"));
        }
    }

    fn object(
        &mut self,
        schema: &Map<String, Value>,
        members: &Map<String, Value>,
        path: &mut String,
        depth: usize,
    ) {
        let properties = schema.get("properties").and_then(Value::as_object);
        if let Some(Value::Array(required)) = schema.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !members.contains_key(name) {
                    let at = path.len();
                    push_key(path, name);
                    self.push(path, "is required but missing".to_owned());
                    path.truncate(at);
                }
            }
        }
        for (name, child) in members {
            if self.full() || !self.spend(1) {
                break;
            }
            let at = path.len();
            push_key(path, name);
            match properties.and_then(|properties| properties.get(name)) {
                Some(child_schema) => self.check(child_schema, child, path, depth + 1),
                // A member a `patternProperties` may describe is not
                // judged: this walk reads no patterns.
                None if schema.contains_key("patternProperties") => {}
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => self.push(path, "is not a known field".to_owned()),
                    Some(other @ Value::Object(_)) => self.check(other, child, path, depth + 1),
                    _ => {}
                },
            }
            path.truncate(at);
        }
    }

    fn array(
        &mut self,
        schema: &Map<String, Value>,
        items: &[Value],
        path: &mut String,
        depth: usize,
    ) {
        let count = items.len() as u64;
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
            && count < min
        {
            self.push(path, format!("must have at least {min} items, got {count}"));
        }
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
            && count > max
        {
            self.push(path, format!("must have at most {max} items, got {count}"));
        }
        let prefix = schema
            .get("prefixItems")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let rest = schema.get("items");
        for (index, item) in items.iter().enumerate() {
            if self.full() || !self.spend(1) {
                break;
            }
            let item_schema = prefix.get(index).or(rest);
            if let Some(item_schema) = item_schema {
                let at = path.len();
                path.push_str(&format!("[{index}]"));
                self.check(item_schema, item, path, depth + 1);
                path.truncate(at);
            }
        }
    }
}

/// Whether two JSON values are equal as JSON Schema compares them: numbers
/// by their value (`1` is `1.0`), at any depth.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(a), Value::Number(b)) => match (a.as_i64(), b.as_i64()) {
            (Some(a), Some(b)) => a == b,
            _ => match (a.as_u64(), b.as_u64()) {
                (Some(a), Some(b)) => a == b,
                _ => a.as_f64() == b.as_f64(),
            },
        },
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(a, b))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, a)| b.get(key).is_some_and(|b| same(a, b)))
        }
        _ => a == b,
    }
}

fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

/// Whether `value` has one of the JSON Schema `types` (a name or a list).
fn has_type(types: &Value, value: &Value) -> bool {
    let one = |name: &str| match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => {
            value.as_i64().is_some()
                || value.as_u64().is_some()
                || value.as_f64().is_some_and(|n| n.fract() == 0.0)
        }
        _ => true,
    };
    match types {
        Value::String(name) => one(name),
        Value::Array(names) => names.iter().filter_map(Value::as_str).any(one),
        _ => true,
    }
}

fn describe_type(types: &Value) -> String {
    let article = |name: &str| match name {
        "integer" | "object" | "array" => format!("an {name}"),
        "null" => "null".to_owned(),
        other => format!("a {other}"),
    };
    match types {
        Value::String(name) => article(name),
        Value::Array(names) => names
            .iter()
            .filter_map(Value::as_str)
            .map(article)
            .collect::<Vec<_>>()
            .join(" or "),
        other => other.to_string(),
    }
}

/// The violation of arguments that are not a JSON object: what they were,
/// never their content.
/// The envelope of arguments that could not be used, before it is
/// settled: the call was refused before the tool ran, whether a tool set
/// refused it or a client before sending it.
pub(crate) fn unusable_arguments(tool: &str, violations: Vec<Violation>) -> ErrorEnvelope {
    ErrorEnvelope::validation(summary(tool, &violations))
        .with_reason(crate::reasons::INVALID_ARGUMENTS)
        .with_alternative("Correct the arguments to match the tool's inputSchema and call again")
        .with_violations(violations)
        .remade(|parts| parts.refused = Some(Refusal::Unusable))
}

/// Arguments of `tool` that are not a JSON object — on either side of the
/// wire: their envelope, before it is settled, and what `attempted_query`
/// shows in their place: what they were, never their content.
pub(crate) fn not_an_object(tool: &str, arguments: &Value) -> (ErrorEnvelope, Value) {
    let violation = Violation::new(
        "arguments",
        format!("expected a JSON object, got {}", kind(arguments)),
    );
    let shown = Value::String(format!(
        "[arguments sent as {}, not an object: not shown]",
        kind(arguments)
    ));
    (unusable_arguments(tool, vec![violation]), shown)
}

/// The JSON kind of `value`, with an article: what a description names.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;
