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
        for key in ["additionalProperties", "unevaluatedProperties"] {
            if let Some(schema @ Value::Object(_)) = members.get(key) {
                others.push(self.node(schema));
            }
        }
        others.extend(&patterns.every);
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
        // Past the prefix, an item is what `items` says, and what
        // `unevaluatedItems` and `contains` say too (either may be it).
        let mut items = Vec::new();
        let later = [members.get("unevaluatedItems"), members.get("contains")];
        for schema in std::iter::once(rest).chain(later).flatten() {
            if schema.is_object() {
                items.push(self.node(schema));
            }
        }
        node.items = match items[..] {
            [] => None,
            [one] => Some(one),
            _ => Some(self.push(Node {
                branches: items,
                ..Node::default()
            })),
        };
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
        // Each of `dependentSchemas` applies to the same value, as a branch.
        if let Some(Value::Object(dependent)) = members.get("dependentSchemas") {
            for schema in dependent.values() {
                let branch = self.node(schema);
                node.branches.push(branch);
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

    /// The schemas of `members`' `patternProperties`, built once each:
    /// the first [`MOST_PLAIN`] plain words with their patterns, and one
    /// node for all the others, which may match any name.
    pub(super) fn patterns(&mut self, members: &'s Map<String, Value>) -> Patterns<'s> {
        let mut built = Patterns::default();
        let Some(Value::Object(patterns)) = members.get("patternProperties") else {
            return built;
        };
        let mut others = Vec::new();
        for (pattern, schema) in patterns {
            let node = self.node(schema);
            built.every.push(node);
            match plain_word(pattern) {
                Some(word) if built.plain.len() < MOST_PLAIN => built.plain.push((word, node)),
                _ => others.push(node),
            }
        }
        if !others.is_empty() {
            built.others = Some(self.push(Node {
                branches: others,
                ..Node::default()
            }));
        }
        built
    }

    /// `child`, the node of the property `name`, with the schemas of the
    /// `patterns` that may match its name too: JSON Schema applies both
    /// to a named property a pattern matches, and a pattern that marks a
    /// secret marks it there too. At most [`MOST_PLAIN`] + 2 branches a
    /// property, however many patterns there are.
    pub(super) fn also_matched(
        &mut self,
        child: NodeId,
        name: &str,
        patterns: &Patterns<'_>,
    ) -> NodeId {
        let matched = (patterns.plain.iter())
            .filter(|(word, _)| word.matches(name))
            .map(|(_, node)| *node);
        let branches: Vec<NodeId> = [child]
            .into_iter()
            .chain(patterns.others)
            .chain(matched)
            .collect();
        if branches.len() == 1 {
            return child;
        }
        self.push(Node {
            branches,
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

/// How many plain-word patterns of one object are matched name by name;
/// past them, a pattern is taken to match every name (the safe side), so
/// that a schema of many patterns and many properties costs no more than
/// each once.
const MOST_PLAIN: usize = 64;

/// The `patternProperties` of an object schema, built
/// ([`Builder::patterns`]).
#[derive(Default)]
pub(super) struct Patterns<'s> {
    /// Patterns decided name by name, with their schemas' nodes.
    plain: Vec<(PlainWord<'s>, NodeId)>,
    /// One node for every other pattern's schema.
    others: Option<NodeId>,
    /// Every pattern's schema, for the keys not named.
    pub(super) every: Vec<NodeId>,
}

/// A pattern that is a plain word (letters, digits, `_`, `-`), anchored
/// at either end or not: the one kind whose matches are decided here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PlainWord<'s> {
    word: &'s str,
    start: bool,
    end: bool,
}

impl PlainWord<'_> {
    /// Whether the pattern matches `name`, as ECMA-262 reads it: anywhere
    /// in it unless anchored.
    fn matches(self, name: &str) -> bool {
        match (self.start, self.end) {
            (true, true) => name == self.word,
            (true, false) => name.starts_with(self.word),
            (false, true) => name.ends_with(self.word),
            (false, false) => name.contains(self.word),
        }
    }
}

/// `pattern` — a `patternProperties` key: an ECMA-262 regular expression
/// — as a plain word, if it is one.
fn plain_word(pattern: &str) -> Option<PlainWord<'_>> {
    let (start, rest) = pattern
        .strip_prefix('^')
        .map_or((false, pattern), |rest| (true, rest));
    let (end, word) = rest
        .strip_suffix('$')
        .map_or((false, rest), |word| (true, word));
    let plain = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    plain.then_some(PlainWord { word, start, end })
}

/// Whether `pattern` may match `name`: decided for a plain word; any
/// other pattern may match any name (its schema is applied: the safe
/// side).
#[cfg(test)]
pub(super) fn may_match(pattern: &str, name: &str) -> bool {
    plain_word(pattern).is_none_or(|word| word.matches(name))
}
