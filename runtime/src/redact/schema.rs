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
//! follow (to another document, to an `$anchor`, to nothing), nor one whose
//! schema is a `$dynamicRef` or `$recursiveRef`: what it says is unknown, so
//! it is treated as a secret. Draft-07's tuples (`items` as a list, then
//! `additionalItems`) are read as 2020-12's `prefixItems` and `items`.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::redact::REDACTED;
use crate::redact::values::SecretValues;

mod build;
mod path;
mod root;
use build::Builder;
pub(crate) use path::{Step, steps};
#[cfg_attr(not(feature = "client"), allow(unused_imports))]
pub(crate) use root::says_nothing_of_secrets;

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
    /// What is known of a key not declared.
    others: Others,
    /// Whether the values sent under keys not declared are secret values
    /// too: a remote tool's, which its server may echo.
    search_undeclared: bool,
}

/// What a schema says of the keys it does not declare.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Others {
    /// Nothing of them is known: their values are never shown.
    #[default]
    Hidden,
    /// The schema lists no properties: it says nothing of the arguments,
    /// and every key is shown.
    Shown,
    /// There is no schema (a remote tool its server did not list): every
    /// value is hidden, and every text sent is a secret value.
    Unknown,
}

impl SecretPaths {
    /// Arguments of which nothing is known to be secret, keys not declared
    /// included: a remote tool whose schema lists no properties.
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) const OPEN: SecretPaths = SecretPaths {
        params: Vec::new(),
        nodes: Vec::new(),
        others: Others::Shown,
        search_undeclared: false,
    };

    /// Arguments of a tool whose schema is not known: every value they hold
    /// may be a secret.
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) const UNKNOWN: SecretPaths = SecretPaths {
        params: Vec::new(),
        nodes: Vec::new(),
        others: Others::Unknown,
        search_undeclared: false,
    };

    /// The secrets of the arguments described by `input_schema` (an object
    /// schema with `properties` — at its root, or behind its root `$ref` and
    /// combinators — and what its `$ref`s point at), and the
    /// parameters in `redacted`, which are secrets whole.
    pub(crate) fn from_schema(input_schema: &Map<String, Value>, redacted: &[&str]) -> Self {
        let root = Value::Object(root::gathered(input_schema));
        let mut builder = Builder::new(&root);
        let mut params = Vec::new();
        let patterns = match &root {
            Value::Object(members) => builder.patterns(members),
            _ => build::Patterns::default(),
        };
        if let Some(Value::Object(properties)) = root.get("properties") {
            for (name, schema) in properties {
                let node = if redacted.contains(&name.as_str()) {
                    builder.push(Node {
                        secret: true,
                        ..Node::default()
                    })
                } else {
                    let node = builder.node(schema);
                    builder.also_matched(node, name, &patterns)
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
        let mut nodes = builder.into_nodes();
        mark_reachable(&mut nodes);
        for (_, node) in &mut params {
            if node.is_some_and(|id| !nodes[id].holds_secret) {
                *node = None;
            }
        }
        SecretPaths {
            params,
            nodes,
            others: Others::Hidden,
            search_undeclared: false,
        }
    }

    /// These paths, for a remote tool: a value sent under a key its schema
    /// does not declare is a secret value too, since its server may quote it.
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) fn of_remote_tool(mut self) -> Self {
        self.search_undeclared = true;
        self
    }

    /// The parameter `name`: `Some(node)` when declared (the node of its
    /// schema when a secret is inside), `None` when not — unless the
    /// schema is open, which declares everything.
    fn param(&self, name: &str) -> Option<Option<NodeId>> {
        self.params
            .iter()
            .find(|(param, _)| param == name)
            .map(|(_, node)| *node)
            .or((self.others == Others::Shown).then_some(None))
    }

    /// Adds to `values` the secret values sent in `arguments`: those at the
    /// places the schema marks; when there is no schema, every string long
    /// enough to be masked anywhere; for a remote tool, those sent under keys
    /// its schema does not declare. A tool set does not search for the values
    /// of keys its tool does not declare: it refuses such a call before the
    /// tool runs, naming the key alone, and a client cannot make it build a
    /// search for whatever it sends there.
    pub(crate) fn add_values(&self, arguments: &Map<String, Value>, values: &mut SecretValues) {
        for (key, value) in arguments {
            match self.param(key) {
                Some(None) => {}
                Some(Some(node)) => {
                    let mut masked = value.clone();
                    self.mask_value(&mut masked, node);
                    values.add_hidden(value, &masked);
                }
                None if self.others == Others::Unknown => values.add_long_strings(value),
                None if self.search_undeclared => values.add(value),
                None => {}
            }
        }
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

    fn named(&self, node: &Node, key: &str) -> bool {
        node.properties.iter().any(|(name, _)| name == key)
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
        let last = path.len().saturating_sub(1);
        // A map's keys are the client's, dots and brackets too: past one
        // that may hold a secret, the rest of the path may be a key, unless
        // it is one named member and nothing more.
        let stops = |at: usize, step: &Step<'_>, data: &Node| {
            data.secret
                || (self.holds_secrets_as_values(data)
                    && !(at == last && matches!(step, Step::Key(key) if self.named(data, key))))
        };
        match self.walk(node, path, stops) {
            Walk::Stopped(_) => true,
            Walk::Lost => false,
            Walk::Reached(here) => here.iter().any(|&id| self.nodes[id].holds_secret),
        }
    }

    /// How many of `path`'s steps (into the parameter `param`) a text may
    /// name: those up to a secret, or up to a key of a map whose values may
    /// hold one (such a key is the client's, and may be the secret itself,
    /// whatever it looks like: `[4111…]` reads as an index); every one
    /// where no secret is. `None` for a parameter not declared, whose key
    /// is named whole.
    pub(crate) fn quotable(&self, param: &str, path: &[Step<'_>]) -> Option<usize> {
        let Some(node) = self.param(param)? else {
            return Some(path.len());
        };
        let stops = |_: usize, step: &Step<'_>, data: &Node| {
            let a_key = match step {
                Step::Key(key) => !self.named(data, key),
                Step::Index(_) => true,
            };
            data.secret || (a_key && self.holds_secrets_as_values(data))
        };
        match self.walk(node, path, stops) {
            Walk::Stopped(at) => Some(at),
            Walk::Lost | Walk::Reached(_) => Some(path.len()),
        }
    }

    /// Whether `node` is a map whose values may hold a secret.
    fn holds_secrets_as_values(&self, node: &Node) -> bool {
        node.additional
            .is_some_and(|id| self.nodes[id].holds_secret)
    }

    /// Walks `path` from `node` through the nodes that may hold a secret,
    /// each branch once a step: [`Walk::Stopped`] at the first step where
    /// `stops` says so of a node, [`Walk::Lost`] where no such node goes
    /// on, else the nodes reached.
    fn walk(
        &self,
        node: NodeId,
        path: &[Step<'_>],
        stops: impl Fn(usize, &Step<'_>, &Node) -> bool,
    ) -> Walk {
        let mut here = vec![node];
        for (at, step) in path.iter().enumerate() {
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
                if stops(at, step, data) {
                    return Walk::Stopped(at);
                }
                here.extend(&data.branches);
                next.extend(match step {
                    Step::Key(key) => self.member(data, key),
                    Step::Index(index) => self.item(data, *index),
                });
            }
            if next.is_empty() {
                return Walk::Lost;
            }
            here = next;
        }
        Walk::Reached(here)
    }

    /// `field`, a path into the arguments (`card.holder`, `tenants.acme`),
    /// cut to what it may name ([`quotable`](Self::quotable)): a path into
    /// a secret, or through the keys of a map of secrets, names the place
    /// and not the keys the client sent there — one may be the secret.
    pub(crate) fn quotable_field(&self, field: String) -> String {
        let at = field.find(['.', '[']).unwrap_or(field.len());
        let (param, path) = field.split_at(at);
        let path = path.strip_prefix('.').unwrap_or(path);
        let Some(steps) = steps(path) else {
            // Past a map whose keys do not read as a path: anywhere in it.
            return match self.param(param).is_some() && self.may_hold_secret(param, &[]) {
                true => param.to_owned(),
                false => field,
            };
        };
        let Some(quotable) = self.quotable(param, &steps) else {
            // A key the tool does not declare, named whole.
            return field;
        };
        if quotable == steps.len() {
            return field;
        }
        let mut cut = param.to_owned();
        for step in &steps[..quotable] {
            match step {
                Step::Key(key) => {
                    cut.push('.');
                    cut.push_str(key);
                }
                Step::Index(index) => cut.push_str(&format!("[{index}]")),
            }
        }
        cut
    }
}

/// Where a [`SecretPaths::walk`] along a path ended.
enum Walk {
    /// At this step, where it was told to stop.
    Stopped(usize),
    /// Where no node that may hold a secret went on.
    Lost,
    /// At the end of the path, on these nodes.
    Reached(Vec<NodeId>),
}

/// Marks every node from which a secret is reachable: from each secret,
/// back along the edges that lead to it, each node once (recursive types
/// make the graph cyclic).
fn mark_reachable(nodes: &mut [Node]) {
    let mut parents: Vec<Vec<NodeId>> = vec![Vec::new(); nodes.len()];
    for (id, node) in nodes.iter().enumerate() {
        for child in node
            .properties
            .iter()
            .map(|(_, child)| *child)
            .chain(node.additional)
            .chain(node.items)
            .chain(node.prefix.iter().copied())
            .chain(node.branches.iter().copied())
        {
            parents[child].push(id);
        }
    }
    let mut pending: Vec<NodeId> = Vec::new();
    for (id, node) in nodes.iter_mut().enumerate() {
        node.holds_secret = node.secret;
        if node.secret {
            pending.push(id);
        }
    }
    while let Some(id) = pending.pop() {
        for &parent in &parents[id] {
            if !nodes[parent].holds_secret {
                nodes[parent].holds_secret = true;
                pending.push(parent);
            }
        }
    }
}

#[cfg(test)]
mod tests;
