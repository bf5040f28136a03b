//! Where a tool's arguments hold secrets, read once from its input schema,
//! and the arguments of a call masked by it at any depth.
//!
//! A `Secret<T>` marks its schema `writeOnly`. Wherever that mark is — a
//! parameter, a field of a struct four `Option`s down, the values of a map,
//! the items of a list, one variant of an enum, behind a `$ref` to `$defs`,
//! to draft-07's `definitions` or to any other place of the schema — the
//! value a client sent there is replaced by `"[redacted]"` before anything
//! shows the arguments: `attempted_query`, a guard, a violation, a log line.
//! Keys the tool does not declare are never shown either: their values could
//! be anything. Nor is a value whose schema is a `$ref` this walk cannot
//! follow (to another document, to an `$anchor`, to nothing): what it says
//! is unknown, so it is treated as a secret.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::json::pointer::resolve;
use crate::redact::REDACTED;

/// A node of the secret map: a place in the arguments.
type NodeId = usize;

#[derive(Debug, Clone, Default, PartialEq)]
struct Node {
    /// The whole value here is a secret.
    secret: bool,
    /// Object members by name.
    properties: Vec<(String, NodeId)>,
    /// Members not named in `properties`.
    additional: Option<NodeId>,
    /// Array items after `prefix`.
    items: Option<NodeId>,
    /// Array items by position.
    prefix: Vec<NodeId>,
    /// Schemas that apply to the same value (`$ref`, `anyOf`, `oneOf`,
    /// `allOf`, conditionals): a value is masked wherever any of them says so.
    branches: Vec<NodeId>,
    /// Whether a secret is reachable from here; nodes without one are never walked.
    holds_secret: bool,
}

/// The secrets of a tool's arguments, by parameter, and the parameters it declares.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SecretPaths {
    /// Every declared parameter, with the node of its schema when a secret is inside.
    params: Vec<(String, Option<NodeId>)>,
    nodes: Vec<Node>,
    /// Whether a key not declared is shown: the schema says nothing of the
    /// arguments (it lists no properties, or there is none).
    open: bool,
}

/// One step of a path into the arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step<'a> {
    /// An object member.
    Key(Cow<'a, str>),
    /// An array item.
    Index(usize),
}

impl SecretPaths {
    /// Arguments of which nothing is known to be secret, keys not declared
    /// included: a remote tool whose schema lists no properties.
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) const OPEN: SecretPaths = SecretPaths {
        params: Vec::new(),
        nodes: Vec::new(),
        open: true,
    };

    /// The secrets of the arguments described by `input_schema` (an object
    /// schema with `properties`, and what its `$ref`s point at), and the
    /// parameters in `redacted`, which are secrets whole.
    pub(crate) fn from_schema(input_schema: &Map<String, Value>, redacted: &[&str]) -> Self {
        let root = Value::Object(input_schema.clone());
        let mut builder = Builder {
            nodes: Vec::new(),
            root: &root,
            defined: Vec::new(),
        };
        let mut params = Vec::new();
        if let Some(Value::Object(properties)) = input_schema.get("properties") {
            for (name, schema) in properties {
                let node = if redacted.contains(&name.as_str()) {
                    builder.push(Node {
                        secret: true,
                        ..Node::default()
                    })
                } else {
                    builder.node(schema)
                };
                params.push((name.clone(), Some(node)));
            }
        }
        for name in redacted {
            if !params.iter().any(|(param, _)| param == name) {
                let node = builder.push(Node {
                    secret: true,
                    ..Node::default()
                });
                params.push(((*name).to_owned(), Some(node)));
            }
        }
        let mut nodes = builder.nodes;
        mark_reachable(&mut nodes);
        for (_, node) in &mut params {
            if node.is_some_and(|id| !nodes[id].holds_secret) {
                *node = None;
            }
        }
        SecretPaths {
            params,
            nodes,
            open: false,
        }
    }

    /// The parameter `name`: `Some(node)` when declared (the node of its
    /// schema when a secret is inside), `None` when not — unless the
    /// schema is open, which declares everything.
    fn param(&self, name: &str) -> Option<Option<NodeId>> {
        self.params
            .iter()
            .find(|(param, _)| param == name)
            .map(|(_, node)| *node)
            .or(self.open.then_some(None))
    }

    /// `arguments` as they may be shown: every secret replaced by
    /// `"[redacted]"` at any depth, and the value of every key the tool does
    /// not declare too. Borrowed when there is nothing to mask.
    pub(crate) fn mask<'a>(
        &self,
        arguments: &'a Map<String, Value>,
    ) -> Cow<'a, Map<String, Value>> {
        let clean = arguments
            .keys()
            .all(|key| matches!(self.param(key), Some(None)));
        if clean {
            return Cow::Borrowed(arguments);
        }
        let mut masked = arguments.clone();
        for (key, value) in &mut masked {
            match self.param(key) {
                Some(None) => {}
                Some(Some(node)) => self.mask_value(value, node),
                None => *value = Value::String(REDACTED.to_owned()),
            }
        }
        Cow::Owned(masked)
    }

    fn mask_value(&self, value: &mut Value, node: NodeId) {
        let mut seen = Vec::new();
        self.mask_at(value, node, &mut seen);
    }

    /// Masks `value` as `node` and its branches say; `seen` holds the nodes
    /// already applied to this same value, so that branches that refer to
    /// each other end.
    fn mask_at(&self, value: &mut Value, node: NodeId, seen: &mut Vec<NodeId>) {
        let data = &self.nodes[node];
        if !data.holds_secret || seen.contains(&node) {
            return;
        }
        if data.secret {
            *value = Value::String(REDACTED.to_owned());
            return;
        }
        seen.push(node);
        for &branch in &data.branches {
            self.mask_at(value, branch, seen);
        }
        match value {
            Value::Object(members) => {
                for (key, child) in members.iter_mut() {
                    if let Some(target) = self.member(data, key) {
                        self.mask_value(child, target);
                    }
                }
            }
            Value::Array(items) => {
                for (index, child) in items.iter_mut().enumerate() {
                    if let Some(target) = self.item(data, index) {
                        self.mask_value(child, target);
                    }
                }
            }
            _ => {}
        }
    }

    fn member(&self, node: &Node, key: &str) -> Option<NodeId> {
        node.properties
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, id)| *id)
            .or(node.additional)
    }

    fn item(&self, node: &Node, index: usize) -> Option<NodeId> {
        node.prefix.get(index).copied().or(node.items)
    }

    /// Whether what a client sent at `path` (a parameter, then steps into
    /// it) may hold a secret: a secret is there, around it or inside it, or
    /// the parameter is not declared. Text about such a value never quotes it.
    pub(crate) fn may_hold_secret(&self, param: &str, path: &[Step<'_>]) -> bool {
        let node = match self.param(param) {
            None => return true,
            Some(None) => return false,
            Some(Some(node)) => node,
        };
        let mut here = vec![node];
        for step in path {
            let mut next = Vec::new();
            let mut seen = Vec::new();
            while let Some(id) = here.pop() {
                if seen.contains(&id) {
                    continue;
                }
                seen.push(id);
                let data = &self.nodes[id];
                if !data.holds_secret {
                    continue;
                }
                if data.secret {
                    return true;
                }
                here.extend(&data.branches);
                let target = match step {
                    Step::Key(key) => self.member(data, key),
                    Step::Index(index) => self.item(data, *index),
                };
                next.extend(target);
            }
            if next.is_empty() {
                return false;
            }
            here = next;
        }
        here.iter().any(|&id| self.nodes[id].holds_secret)
    }
}

/// Builds nodes from schemas, one per `$ref` target however often it is used.
struct Builder<'s> {
    nodes: Vec<Node>,
    /// The whole input schema, which local `$ref`s point into.
    root: &'s Value,
    defined: Vec<(&'s str, NodeId)>,
}

impl<'s> Builder<'s> {
    fn push(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    fn node(&mut self, schema: &'s Value) -> NodeId {
        let id = self.push(Node::default());
        let Value::Object(members) = schema else {
            return id;
        };
        let mut node = Node {
            secret: members.get("writeOnly") == Some(&Value::Bool(true)),
            ..Node::default()
        };
        if let Some(Value::Object(properties)) = members.get("properties") {
            for (name, schema) in properties {
                let child = self.node(schema);
                node.properties.push((name.clone(), child));
            }
        }
        // Members not named: `additionalProperties`, and any pattern (a key
        // may match one; masking it whether or not it does is the safe side).
        let mut others = Vec::new();
        if let Some(schema @ Value::Object(_)) = members.get("additionalProperties") {
            others.push(self.node(schema));
        }
        if let Some(Value::Object(patterns)) = members.get("patternProperties") {
            for schema in patterns.values() {
                let other = self.node(schema);
                others.push(other);
            }
        }
        if !others.is_empty() {
            node.additional = Some(self.push(Node {
                branches: others,
                ..Node::default()
            }));
        }
        if let Some(items @ Value::Object(_)) = members.get("items") {
            node.items = Some(self.node(items));
        }
        if let Some(Value::Array(prefix)) = members.get("prefixItems") {
            node.prefix = prefix.iter().map(|schema| self.node(schema)).collect();
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(Value::Array(branches)) = members.get(key) {
                for schema in branches {
                    let branch = self.node(schema);
                    node.branches.push(branch);
                }
            }
        }
        for key in ["if", "then", "else", "not"] {
            if let Some(schema @ Value::Object(_)) = members.get(key) {
                let branch = self.node(schema);
                node.branches.push(branch);
            }
        }
        if let Some(reference) = members.get("$ref").and_then(Value::as_str) {
            let target = self.reference(reference);
            node.branches.push(target);
        }
        self.nodes[id] = node;
        id
    }

    /// The node of what `reference` points at, built once; a secret when
    /// it points where this walk cannot follow.
    fn reference(&mut self, reference: &'s str) -> NodeId {
        if let Some((_, id)) = self
            .defined
            .iter()
            .find(|(defined, _)| *defined == reference)
        {
            return *id;
        }
        let Some(schema) = resolve(self.root, reference) else {
            return self.push(Node {
                secret: true,
                ..Node::default()
            });
        };
        // Registered before it is built, so that a recursive type refers to itself.
        let id = self.push(Node::default());
        self.defined.push((reference, id));
        let built = self.node(schema);
        self.nodes[id].branches.push(built);
        id
    }
}

/// Marks every node from which a secret is reachable, to a fixed point
/// (recursive types make the graph cyclic).
fn mark_reachable(nodes: &mut [Node]) {
    for node in nodes.iter_mut() {
        node.holds_secret = node.secret;
    }
    loop {
        let mut changed = false;
        for id in 0..nodes.len() {
            if nodes[id].holds_secret {
                continue;
            }
            let node = &nodes[id];
            let reaches = node
                .properties
                .iter()
                .map(|(_, child)| *child)
                .chain(node.additional)
                .chain(node.items)
                .chain(node.prefix.iter().copied())
                .chain(node.branches.iter().copied())
                .any(|child| nodes[child].holds_secret);
            if reaches {
                nodes[id].holds_secret = true;
                changed = true;
            }
        }
        if !changed {
            return;
        }
    }
}

/// The steps of a path as `serde_path_to_error` writes it (`a.b[2].c`) or
/// as a JSON pointer (`/a/b/2/c`).
pub(crate) fn steps(path: &str) -> Vec<Step<'_>> {
    if let Some(pointer) = path.strip_prefix('/') {
        return pointer
            .split('/')
            .map(|token| match token.parse::<usize>() {
                Ok(index) => Step::Index(index),
                Err(_) if token.contains('~') => {
                    Step::Key(Cow::Owned(token.replace("~1", "/").replace("~0", "~")))
                }
                Err(_) => Step::Key(Cow::Borrowed(token)),
            })
            .collect();
    }
    let mut steps = Vec::new();
    for part in path.split('.').filter(|part| !part.is_empty()) {
        let (key, mut rest) = match part.find('[') {
            Some(at) => (&part[..at], &part[at..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            steps.push(Step::Key(Cow::Borrowed(key)));
        }
        while let Some(close) = rest.find(']') {
            if let Ok(index) = rest[1..close].parse() {
                steps.push(Step::Index(index));
            }
            rest = &rest[close + 1..];
        }
    }
    steps
}

#[cfg(test)]
mod tests;
