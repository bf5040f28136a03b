//! Building the secret map: one node per schema, and per `$ref` target
//! however often, and however spelled, it is referred to.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::{Node, NodeId};
use crate::json::pointer::resolve;

/// Builds nodes from schemas, one per `$ref` target however often, and
/// however spelled, it is referred to.
pub(super) struct Builder<'s> {
    nodes: Vec<Node>,
    /// The whole input schema, which local `$ref`s point into.
    root: &'s Value,
    /// The node of each `$ref` target, by its place in `root`.
    defined: HashMap<*const Value, NodeId>,
    /// How many schemas deep the walk is, `$ref`s followed included.
    depth: usize,
}

/// The deepest a walk follows a schema, through its `$ref`s; what lies
/// deeper is treated as a secret. A value is never nested deeper than
/// [`MAX_DEPTH`](crate::MAX_DEPTH), but a chain of `$ref`s can be as long as
/// a server likes, and each link would take stack.
const MAX_SCHEMA_DEPTH: usize = 256;

impl<'s> Builder<'s> {
    /// A builder for the schemas in `root`, which local `$ref`s point into.
    pub(super) fn new(root: &'s Value) -> Self {
        Builder {
            nodes: Vec::new(),
            root,
            defined: HashMap::new(),
            depth: 0,
        }
    }

    /// The nodes built.
    pub(super) fn into_nodes(self) -> Vec<Node> {
        self.nodes
    }

    pub(super) fn push(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    pub(super) fn node(&mut self, schema: &'s Value) -> NodeId {
        if self.depth == MAX_SCHEMA_DEPTH {
            return self.push(Node {
                secret: true,
                ..Node::default()
            });
        }
        self.depth += 1;
        let id = self.node_within(schema);
        self.depth -= 1;
        id
    }

    fn node_within(&mut self, schema: &'s Value) -> NodeId {
        let id = self.push(Node::default());
        let Value::Object(members) = schema else {
            return id;
        };
        let mut node = Node {
            secret: members.get("writeOnly") == Some(&Value::Bool(true)),
            ..Node::default()
        };
        let patterns = self.patterns(members);
        if let Some(Value::Object(properties)) = members.get("properties") {
            for (name, schema) in properties {
                let child = self.node(schema);
                let child = self.also_matched(child, name, &patterns);
                node.properties.push((name.clone(), child));
            }
        }
        // Members not named: `additionalProperties`, and any pattern (a key
        // may match one; masking it whether or not it does is the safe side).
        let mut others = Vec::new();
        if let Some(schema @ Value::Object(_)) = members.get("additionalProperties") {
            others.push(self.node(schema));
        }
        others.extend(patterns.iter().map(|(_, other)| *other));
        if !others.is_empty() {
            node.additional = Some(self.push(Node {
                branches: others,
                ..Node::default()
            }));
        }
        // Items: `prefixItems` then `items` (2020-12), or draft-07's
        // `items` as a list then `additionalItems`.
        let (prefix, rest) = match members.get("items") {
            Some(Value::Array(prefix)) => (Some(prefix), members.get("additionalItems")),
            items => (members.get("prefixItems").and_then(Value::as_array), items),
        };
        if let Some(items @ Value::Object(_)) = rest {
            node.items = Some(self.node(items));
        }
        if let Some(prefix) = prefix {
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
        // References resolved at validation time, which this walk does not
        // follow: what they say is unknown.
        if members.contains_key("$dynamicRef") || members.contains_key("$recursiveRef") {
            node.secret = true;
        }
        self.nodes[id] = node;
        id
    }

    /// The schemas of `members`' `patternProperties`, each with its pattern.
    pub(super) fn patterns(&mut self, members: &'s Map<String, Value>) -> Vec<(&'s str, NodeId)> {
        let Some(Value::Object(patterns)) = members.get("patternProperties") else {
            return Vec::new();
        };
        (patterns.iter())
            .map(|(pattern, schema)| (pattern.as_str(), self.node(schema)))
            .collect()
    }

    /// `child`, the node of the property `name`, with the schemas of the
    /// `patterns` that may match its name too: JSON Schema applies both
    /// to a named property a pattern matches, and a pattern that marks a
    /// secret marks it there too.
    pub(super) fn also_matched(
        &mut self,
        child: NodeId,
        name: &str,
        patterns: &[(&str, NodeId)],
    ) -> NodeId {
        let matched: Vec<NodeId> = (patterns.iter())
            .filter(|(pattern, _)| may_match(pattern, name))
            .map(|(_, node)| *node)
            .collect();
        if matched.is_empty() {
            return child;
        }
        self.push(Node {
            branches: [child].into_iter().chain(matched).collect(),
            ..Node::default()
        })
    }

    /// The node of what `reference` points at, built once; a secret when
    /// it points where this walk cannot follow.
    fn reference(&mut self, reference: &str) -> NodeId {
        let Some(schema) = resolve(self.root, reference) else {
            return self.push(Node {
                secret: true,
                ..Node::default()
            });
        };
        let place: *const Value = schema;
        if let Some(&id) = self.defined.get(&place) {
            return id;
        }
        // Registered before it is built, so that a recursive type refers to itself.
        let id = self.push(Node::default());
        self.defined.insert(place, id);
        let built = self.node(schema);
        self.nodes[id].branches.push(built);
        id
    }
}

/// Whether `pattern` — a `patternProperties` key: an ECMA-262 regular
/// expression, which matches anywhere in a name unless anchored — may
/// match `name`. Decided for a plain word (letters, digits, `_`, `-`),
/// anchored at either end or not; any other pattern may match any name
/// (its schema is applied: the safe side).
pub(super) fn may_match(pattern: &str, name: &str) -> bool {
    let (start, rest) = pattern
        .strip_prefix('^')
        .map_or((false, pattern), |rest| (true, rest));
    let (end, word) = rest
        .strip_suffix('$')
        .map_or((false, rest), |word| (true, word));
    let plain = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !plain {
        return true;
    }
    match (start, end) {
        (true, true) => name == word,
        (true, false) => name.starts_with(word),
        (false, true) => name.ends_with(word),
        (false, false) => name.contains(word),
    }
}
