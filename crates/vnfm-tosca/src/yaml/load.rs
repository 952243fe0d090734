//! Builds [`Node`] trees from the events of the `granit-parser` YAML parser.
//!
//! The tree is built with an explicit stack (no recursion, so a deep document cannot overflow
//! the caller's stack), and the budgets that keep hostile input bounded are checked as events
//! arrive: nesting depth, the number of nodes including what aliases expand to (alias bombs),
//! and the number of documents in a stream.

use std::collections::{HashMap, HashSet};

use granit_parser::{Event, Options, Parser, ScalarStyle, ScanError, Span};

use super::{Key, MAX_DEPTH, Node, Pos, Value, format_float, scalar};

/// Most nodes one file may hold, counting each alias as the nodes it stands for.
pub(super) const MAX_NODES: usize = 250_000;
/// Most documents one stream may hold.
pub(super) const MAX_DOCUMENTS: usize = 1_024;
/// A map holding more keys than this checks duplicates with a hash set instead of a scan.
const LINEAR_KEY_CHECK: usize = 16;

/// Why a file could not be loaded.
#[derive(Debug)]
pub(super) enum LoadError {
    /// Not YAML (the parser's message).
    Syntax(String, Pos),
    /// A key given twice in one mapping.
    DuplicateKey(String, Pos),
    /// A budget exceeded: too deep, too many nodes or documents.
    Budget(String, Pos),
    /// YAML, but not what a descriptor can hold (a collection as a key, a recursive alias, a
    /// scalar that contradicts its tag...).
    Unsupported(String, Pos),
}

/// Every document of `text`, in order; an empty document is a null node.
pub(super) fn documents(text: &str) -> Result<Vec<Node>, LoadError> {
    let mut options = Options::default();
    options.set_emit_comments(false);
    let mut loader = Loader::default();
    for event in Parser::new_from_str_with_options(text, options) {
        let (event, span) = event.map_err(syntax)?;
        loader.event(event, span)?;
    }
    Ok(loader.documents)
}

fn syntax(e: ScanError) -> LoadError {
    let marker = e.marker();
    let info = e.info();
    let message = info
        .lines()
        .next()
        .unwrap_or("invalid YAML")
        .trim()
        .to_owned();
    let pos = pos_of(marker.line(), marker.col());
    // The scanner reads ahead of the events, so its own nesting limits can trip before the
    // loader's depth check sees the collections.
    if message.contains("recursion limit") || message.contains("nesting limit") {
        return LoadError::Budget(message, pos);
    }
    LoadError::Syntax(message, pos)
}

fn pos_of(line: usize, col0: usize) -> Pos {
    let clamp = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
    Pos {
        line: clamp(line),
        column: clamp(col0.saturating_add(1)),
    }
}

fn start(span: &Span) -> Pos {
    pos_of(span.start.line(), span.start.col())
}

/// A collection being read.
enum Frame {
    Seq {
        items: Vec<Node>,
        pos: Pos,
        anchor: usize,
        nodes: usize,
    },
    Map(MapFrame),
}

struct MapFrame {
    entries: Vec<(Key, Node)>,
    /// The key whose value comes next; `None` when a key comes next.
    key: Option<Key>,
    /// Whether the pending key is the merge key `<<`.
    merging: bool,
    /// Values of `<<` entries, merged in when the mapping ends.
    merges: Vec<Node>,
    /// Key names, once the mapping is too big for a linear duplicate check.
    names: Option<HashSet<String>>,
    pos: Pos,
    anchor: usize,
    nodes: usize,
}

#[derive(Default)]
struct Loader {
    stack: Vec<Frame>,
    /// Anchored nodes of the current document by anchor id, with their node counts.
    anchors: HashMap<usize, (Node, usize)>,
    /// Nodes of the current document, aliases counted at their expanded size.
    nodes: usize,
    /// The current document's root, once complete.
    root: Option<Node>,
    documents: Vec<Node>,
}

impl Loader {
    fn event(&mut self, event: Event<'_>, span: Span) -> Result<(), LoadError> {
        let pos = start(&span);
        match event {
            Event::DocumentStart(..) => {
                if self.documents.len() >= MAX_DOCUMENTS {
                    return Err(LoadError::Budget(
                        format!("budget breached: more than {MAX_DOCUMENTS} documents"),
                        pos,
                    ));
                }
                self.root = None;
                self.anchors.clear();
                self.nodes = 0;
            }
            Event::DocumentEnd => {
                let root = self
                    .root
                    .take()
                    .unwrap_or_else(|| Node::synthetic(Value::Null));
                self.documents.push(root);
            }
            Event::Scalar(text, style, anchor, tag) => {
                let value = scalar::resolve(&text, style, tag.as_deref())
                    .map_err(|e| LoadError::Unsupported(e.to_string(), pos))?;
                self.count(1, pos)?;
                let node = Node { value, pos };
                if anchor != 0 {
                    self.anchors.insert(anchor, (node.clone(), 1));
                }
                self.complete(node, 1, style == ScalarStyle::Plain)?;
            }
            Event::Alias(id) => {
                let Some((node, size)) = self.anchors.get(&id) else {
                    return Err(LoadError::Unsupported(
                        "an alias refers to a collection that contains it; recursive structures are not supported".into(),
                        pos,
                    ));
                };
                let (mut node, size) = (node.clone(), *size);
                self.count(size, pos)?;
                // An alias's content is reported where the alias is used, not where its anchor
                // is: that is where the value takes effect.
                node.relocate(pos);
                self.complete(node, size, false)?;
            }
            Event::SequenceStart(_, anchor, _) => {
                self.open(pos)?;
                self.stack.push(Frame::Seq {
                    items: Vec::new(),
                    pos,
                    anchor,
                    nodes: 1,
                });
            }
            Event::MappingStart(_, anchor, _) => {
                self.open(pos)?;
                self.stack.push(Frame::Map(MapFrame {
                    entries: Vec::new(),
                    key: None,
                    merging: false,
                    merges: Vec::new(),
                    names: None,
                    pos,
                    anchor,
                    nodes: 1,
                }));
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (node, anchor, nodes) = match self.stack.pop() {
                    Some(Frame::Seq {
                        items,
                        pos,
                        anchor,
                        nodes,
                    }) => (
                        Node {
                            value: Value::Seq(items),
                            pos,
                        },
                        anchor,
                        nodes,
                    ),
                    Some(Frame::Map(map)) => {
                        let (anchor, nodes) = (map.anchor, map.nodes);
                        (map.finish()?, anchor, nodes)
                    }
                    None => return Err(LoadError::Syntax("unbalanced collection end".into(), pos)),
                };
                if anchor != 0 {
                    self.anchors.insert(anchor, (node.clone(), nodes));
                }
                self.complete(node, nodes, false)?;
            }
            // Stream markers and presentation metadata carry no data.
            _ => {}
        }
        Ok(())
    }

    /// Checks a collection may start here: not as a mapping key, not too deep.
    fn open(&mut self, pos: Pos) -> Result<(), LoadError> {
        if let Some(Frame::Map(MapFrame { key: None, .. })) = self.stack.last() {
            return Err(LoadError::Unsupported(
                "a mapping key must be a scalar, not a list or a map".into(),
                pos,
            ));
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(LoadError::Budget(
                format!("budget breached: collections nested deeper than {MAX_DEPTH} levels"),
                pos,
            ));
        }
        self.count(1, pos)
    }

    fn count(&mut self, nodes: usize, pos: Pos) -> Result<(), LoadError> {
        self.nodes = self.nodes.saturating_add(nodes);
        if self.nodes > MAX_NODES {
            return Err(LoadError::Budget(
                format!(
                    "budget breached: more than {MAX_NODES} nodes, counting what aliases expand to"
                ),
                pos,
            ));
        }
        Ok(())
    }

    /// Places a finished node (`nodes` in size) in its parent: an item, a key or a value.
    /// `plain` tells a plain scalar (only a plain `<<` is the merge key).
    fn complete(&mut self, node: Node, nodes: usize, plain: bool) -> Result<(), LoadError> {
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq {
                items, nodes: n, ..
            }) => {
                *n += nodes;
                items.push(node);
            }
            Some(Frame::Map(map)) => {
                map.nodes += nodes;
                match map.key.take() {
                    Some(_) if map.merging => {
                        map.merging = false;
                        map.merges.push(node);
                    }
                    Some(key) => map.entries.push((key, node)),
                    None => {
                        let merge = plain && node.as_str() == Some("<<");
                        let key = key_of(&node)?;
                        if !merge {
                            map.check_new(&key)?;
                        }
                        map.merging = merge;
                        map.key = Some(key);
                    }
                }
            }
        }
        Ok(())
    }
}

impl Node {
    /// Moves this node and everything in it to `pos`.
    fn relocate(&mut self, pos: Pos) {
        self.pos = pos;
        match &mut self.value {
            Value::Seq(items) => items.iter_mut().for_each(|n| n.relocate(pos)),
            Value::Map(entries) => entries.iter_mut().for_each(|(k, v)| {
                k.pos = pos;
                v.relocate(pos);
            }),
            _ => {}
        }
    }
}

/// A scalar node as a mapping key: its text (numbers and booleans as YAML writes them).
fn key_of(node: &Node) -> Result<Key, LoadError> {
    let name = match &node.value {
        Value::Str(s) => s.clone(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => format_float(*f),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".to_owned(),
        Value::Seq(_) | Value::Map(_) => {
            return Err(LoadError::Unsupported(
                "a mapping key must be a scalar, not a list or a map".into(),
                node.pos,
            ));
        }
    };
    Ok(Key {
        name,
        pos: node.pos,
    })
}

impl MapFrame {
    /// Refuses `key` when the mapping already has it.
    fn check_new(&mut self, key: &Key) -> Result<(), LoadError> {
        let duplicate = match &mut self.names {
            Some(names) => !names.insert(key.name.clone()),
            None => {
                let seen = self.entries.iter().any(|(k, _)| k.name == key.name);
                if !seen && self.entries.len() >= LINEAR_KEY_CHECK {
                    let mut names: HashSet<String> =
                        self.entries.iter().map(|(k, _)| k.name.clone()).collect();
                    names.insert(key.name.clone());
                    self.names = Some(names);
                }
                seen
            }
        };
        if duplicate {
            let first = self
                .entries
                .iter()
                .find(|(k, _)| k.name == key.name)
                .map(|(k, _)| k.pos.line)
                .unwrap_or_default();
            return Err(LoadError::DuplicateKey(
                format!(
                    "duplicate mapping key `{}` (first given on line {first})",
                    key.name
                ),
                key.pos,
            ));
        }
        Ok(())
    }

    /// The mapping, with the entries of its `<<` merges added where it lacks their keys (its
    /// own entries win; among merged mappings, the earlier one wins).
    fn finish(mut self) -> Result<Node, LoadError> {
        if !self.merges.is_empty() {
            let mut present: HashSet<String> =
                self.entries.iter().map(|(k, _)| k.name.clone()).collect();
            for merge in std::mem::take(&mut self.merges) {
                let sources: Vec<Node> = match merge.value {
                    Value::Map(_) => vec![merge],
                    Value::Seq(items) if items.iter().all(|i| i.as_map().is_some()) => items,
                    _ => {
                        return Err(LoadError::Unsupported(
                            "the merge key `<<` takes a mapping or a list of mappings".into(),
                            merge.pos,
                        ));
                    }
                };
                for source in sources {
                    if let Value::Map(entries) = source.value {
                        for (k, v) in entries {
                            if present.insert(k.name.clone()) {
                                self.entries.push((k, v));
                            }
                        }
                    }
                }
            }
        }
        Ok(Node {
            value: Value::Map(self.entries),
            pos: self.pos,
        })
    }
}
