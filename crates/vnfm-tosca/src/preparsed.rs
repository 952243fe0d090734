//! Pre-parsed forms of the published ETSI SOL001 type files and the TOSCA normative types.
//!
//! Every Tacker package carries its own copy of the ETSI type files, and parsing their YAML is
//! most of the work of a first load in a process. `types/preparsed.bin` holds the YAML trees of
//! the files this crate knows: its bundled copies (`types/sol001`, `types/tosca`) and the copies
//! OpenStack Tacker publishes in its sample packages (`types/tacker`). The trees were produced
//! by the loader itself ([`crate::yaml::parse`]) and are keyed by the SHA-256 of the file's
//! content, so a file whose content hash is in the table decodes to exactly the tree, positions
//! included, that parsing it gives, and every diagnostic built from it is the same. Any other
//! content, even one byte off, is parsed as usual.
//!
//! Decoding only allocates the tree's sequences and maps (no YAML scanning; strings are borrowed
//! from the table), and a table that does not decode is treated as absent: the file is then
//! parsed.
//!
//! The table is regenerated with `VNFM_TOSCA_REGENERATE=1 cargo test -p vnfm-tosca --lib
//! preparsed` after a change to the loader or to the files; until then that test fails.
//!
//! Layout (integers little-endian, `varint` is LEB128):
//!
//! ```text
//! magic "VNFMPP" 0x01 0x0a
//! u32 string area length, string area (the UTF-8 text of every string, each stored once)
//! u32 entry count, entries sorted by hash: [32-byte SHA-256, u32 tree offset, u32 tree length]
//! tree area
//! ```
//!
//! A node is a tag byte, its line and column as varints, then its payload: an integer as a
//! zigzag varint, a float as 8 bytes, a string as a varint offset and length into the string
//! area, a sequence as a varint count and its items, a map as a varint count and, per entry,
//! the key (string reference, line, column) and the value node.

use std::sync::OnceLock;

use crate::yaml::{Key, MAX_DEPTH, Node, Pos, Text, Value};

static TABLE: &[u8] = include_bytes!("../types/preparsed.bin");

const MAGIC: &[u8; 8] = b"VNFMPP\x01\n";
const ENTRY_BYTES: usize = 32 + 4 + 4;

const TAG_NULL: u8 = 0;
const TAG_FALSE: u8 = 1;
const TAG_TRUE: u8 = 2;
const TAG_INT: u8 = 3;
const TAG_FLOAT: u8 = 4;
const TAG_STR: u8 = 5;
const TAG_SEQ: u8 = 6;
const TAG_MAP: u8 = 7;

/// The three areas of a table. Decoded strings borrow from it, so it lives as long as the
/// program (the embedded table; tests leak theirs).
struct Table {
    strings: &'static str,
    entries: &'static [u8],
    trees: &'static [u8],
}

fn split(bytes: &'static [u8]) -> Option<Table> {
    let rest = bytes.strip_prefix(MAGIC.as_slice())?;
    let (len, rest) = take_u32(rest)?;
    let (strings, rest) = rest.split_at_checked(len)?;
    // Checked once here, so that decoding a string is a bounds check.
    let strings = std::str::from_utf8(strings).ok()?;
    let (count, rest) = take_u32(rest)?;
    let (entries, trees) = rest.split_at_checked(count.checked_mul(ENTRY_BYTES)?)?;
    Some(Table {
        strings,
        entries,
        trees,
    })
}

fn take_u32(bytes: &[u8]) -> Option<(usize, &[u8])> {
    let (head, rest) = bytes.split_first_chunk::<4>()?;
    Some((usize::try_from(u32::from_le_bytes(*head)).ok()?, rest))
}

fn table() -> Option<&'static Table> {
    static SPLIT: OnceLock<Option<Table>> = OnceLock::new();
    SPLIT.get_or_init(|| split(TABLE)).as_ref()
}

/// The tree of the known file whose content has SHA-256 `hash`, if there is one.
pub(crate) fn lookup(hash: &[u8; 32]) -> Option<Node> {
    lookup_in(table()?, hash)
}

fn lookup_in(table: &Table, hash: &[u8; 32]) -> Option<Node> {
    let count = table.entries.len() / ENTRY_BYTES;
    let entry = |i: usize| &table.entries[i * ENTRY_BYTES..(i + 1) * ENTRY_BYTES];
    // Binary search over the sorted hashes.
    let (mut lo, mut hi) = (0, count);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let e = entry(mid);
        match e[..32].cmp(hash.as_slice()) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => {
                let (offset, rest) = take_u32(&e[32..])?;
                let (len, _) = take_u32(rest)?;
                let tree = table.trees.get(offset..offset.checked_add(len)?)?;
                let mut d = Decoder {
                    buf: tree,
                    at: 0,
                    strings: table.strings,
                };
                let node = d.node(0)?;
                return (d.at == tree.len()).then_some(node);
            }
        }
    }
    None
}

struct Decoder<'a> {
    buf: &'a [u8],
    at: usize,
    strings: &'static str,
}

impl Decoder<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn usize(&mut self) -> Option<usize> {
        usize::try_from(self.varint()?).ok()
    }

    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.varint()?).ok()
    }

    fn pos(&mut self) -> Option<Pos> {
        Some(Pos {
            line: self.u32()?,
            column: self.u32()?,
        })
    }

    /// A string of the string area, borrowed: decoding copies no text.
    fn string(&mut self) -> Option<Text> {
        let offset = self.usize()?;
        let len = self.usize()?;
        // `get` also refuses a range that splits a character.
        self.strings
            .get(offset..offset.checked_add(len)?)
            .map(Text::borrowed)
    }

    /// A count of items that each take at least one byte, so a corrupt count cannot ask for a
    /// huge allocation.
    fn count(&mut self) -> Option<usize> {
        let n = self.usize()?;
        (n <= self.buf.len() - self.at).then_some(n)
    }

    fn node(&mut self, depth: usize) -> Option<Node> {
        // The loader refuses deeper documents, so a deeper table is corrupt.
        if depth > MAX_DEPTH + 1 {
            return None;
        }
        let tag = self.byte()?;
        let pos = self.pos()?;
        let value = match tag {
            TAG_NULL => Value::Null,
            TAG_FALSE => Value::Bool(false),
            TAG_TRUE => Value::Bool(true),
            TAG_INT => {
                let z = self.varint()?;
                // Zigzag: the sign is the lowest bit.
                Value::Int(((z >> 1) as i64) ^ -((z & 1) as i64))
            }
            TAG_FLOAT => {
                let bytes = self.buf.get(self.at..self.at + 8)?;
                self.at += 8;
                Value::Float(f64::from_le_bytes(bytes.try_into().ok()?))
            }
            TAG_STR => Value::Str(self.string()?),
            TAG_SEQ => {
                let n = self.count()?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.node(depth + 1)?);
                }
                Value::Seq(items)
            }
            TAG_MAP => {
                let n = self.count()?;
                let mut entries = Vec::with_capacity(n);
                for _ in 0..n {
                    let name = self.string()?;
                    let pos = self.pos()?;
                    let value = self.node(depth + 1)?;
                    entries.push((Key { name, pos }, value));
                }
                Value::Map(entries)
            }
            _ => return None,
        };
        Some(Node { value, pos })
    }
}

/// Writing a table: used by the test that keeps `types/preparsed.bin` up to date.
#[cfg(test)]
pub(crate) mod encode {
    use std::collections::HashMap;

    use super::*;

    #[derive(Default)]
    struct Encoder {
        strings: Vec<u8>,
        seen: HashMap<String, (usize, usize)>,
        out: Vec<u8>,
    }

    impl Encoder {
        fn varint(&mut self, mut v: u64) {
            loop {
                let b = (v & 0x7f) as u8;
                v >>= 7;
                if v == 0 {
                    self.out.push(b);
                    return;
                }
                self.out.push(b | 0x80);
            }
        }

        fn pos(&mut self, pos: Pos) {
            self.varint(u64::from(pos.line));
            self.varint(u64::from(pos.column));
        }

        fn string(&mut self, s: &str) {
            let (offset, len) = match self.seen.get(s) {
                Some(&r) => r,
                None => {
                    let r = (self.strings.len(), s.len());
                    self.strings.extend_from_slice(s.as_bytes());
                    self.seen.insert(s.to_owned(), r);
                    r
                }
            };
            self.varint(offset as u64);
            self.varint(len as u64);
        }

        fn node(&mut self, node: &Node) {
            let tag = match &node.value {
                Value::Null => TAG_NULL,
                Value::Bool(false) => TAG_FALSE,
                Value::Bool(true) => TAG_TRUE,
                Value::Int(_) => TAG_INT,
                Value::Float(_) => TAG_FLOAT,
                Value::Str(_) => TAG_STR,
                Value::Seq(_) => TAG_SEQ,
                Value::Map(_) => TAG_MAP,
            };
            self.out.push(tag);
            self.pos(node.pos);
            match &node.value {
                Value::Null | Value::Bool(_) => {}
                Value::Int(i) => self.varint(((*i << 1) ^ (*i >> 63)) as u64),
                Value::Float(f) => self.out.extend_from_slice(&f.to_le_bytes()),
                Value::Str(s) => self.string(s),
                Value::Seq(items) => {
                    self.varint(items.len() as u64);
                    for item in items {
                        self.node(item);
                    }
                }
                Value::Map(entries) => {
                    self.varint(entries.len() as u64);
                    for (k, v) in entries {
                        self.string(&k.name);
                        self.pos(k.pos);
                        self.node(v);
                    }
                }
            }
        }
    }

    /// The table of `files` (content hash, parsed tree); duplicate hashes are stored once.
    pub(crate) fn table(files: &[([u8; 32], Node)]) -> Vec<u8> {
        let mut sorted: Vec<&([u8; 32], Node)> = files.iter().collect();
        sorted.sort_by_key(|a| a.0);
        sorted.dedup_by(|a, b| a.0 == b.0);
        let mut enc = Encoder::default();
        let mut entries = Vec::new();
        for (hash, node) in sorted {
            let start = enc.out.len();
            enc.node(node);
            entries.extend_from_slice(hash);
            entries.extend_from_slice(&u32le(start));
            entries.extend_from_slice(&u32le(enc.out.len() - start));
        }
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&u32le(enc.strings.len()));
        bytes.extend_from_slice(&enc.strings);
        bytes.extend_from_slice(&u32le(entries.len() / ENTRY_BYTES));
        bytes.extend_from_slice(&entries);
        bytes.extend_from_slice(&enc.out);
        bytes
    }

    fn u32le(v: usize) -> [u8; 4] {
        u32::try_from(v)
            .expect("tables stay far below 4 GiB")
            .to_le_bytes()
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use proptest::prelude::*;
    use sha2::{Digest, Sha256};

    use super::*;
    use crate::imports::Unit;
    use crate::yaml;

    const TABLE_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/types/preparsed.bin");

    /// Every YAML file under `types/`: the bundled ETSI and TOSCA files and Tacker's copies.
    fn known_files() -> Vec<PathBuf> {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            entries.sort();
            for path in entries {
                if path.is_dir() {
                    walk(&path, out);
                } else if path.extension().is_some_and(|e| e == "yaml") {
                    out.push(path);
                }
            }
        }
        let mut out = Vec::new();
        walk(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("types"),
            &mut out,
        );
        out
    }

    fn hash(text: &str) -> [u8; 32] {
        Sha256::digest(text.as_bytes()).into()
    }

    fn parsed_known_files() -> Vec<(PathBuf, String, [u8; 32], Node)> {
        known_files()
            .into_iter()
            .map(|path| {
                let text = std::fs::read_to_string(&path).unwrap();
                let node =
                    yaml::parse("", &text).unwrap_or_else(|d| panic!("{}: {d}", path.display()));
                let h = hash(&text);
                (path, text, h, node)
            })
            .collect()
    }

    #[test]
    fn table_is_what_the_loader_gives_for_the_known_files() {
        let files: Vec<([u8; 32], Node)> = parsed_known_files()
            .into_iter()
            .map(|(_, _, h, n)| (h, n))
            .collect();
        // The bundled and Tacker files, the normative types; shared copies are stored once.
        assert!(files.len() >= 40, "{} files", files.len());
        let built = encode::table(&files);
        if std::env::var_os("VNFM_TOSCA_REGENERATE").is_some() {
            std::fs::write(TABLE_PATH, &built).unwrap();
            return;
        }
        assert!(
            built == TABLE,
            "types/preparsed.bin is stale: run `VNFM_TOSCA_REGENERATE=1 cargo test -p vnfm-tosca --lib preparsed` and commit it"
        );
    }

    #[test]
    fn decoded_strings_are_borrowed_from_the_table() {
        fn texts<'a>(node: &'a Node, out: &mut Vec<&'a str>) {
            match &node.value {
                Value::Str(s) => out.push(s.as_str()),
                Value::Seq(items) => items.iter().for_each(|n| texts(n, out)),
                Value::Map(entries) => {
                    for (k, v) in entries {
                        out.push(k.name.as_str());
                        texts(v, out);
                    }
                }
                _ => {}
            }
        }
        let (path, _, h, _) = parsed_known_files()
            .into_iter()
            .find(|(p, ..)| p.ends_with("etsi_nfv_sol001_vnfd_types.yaml"))
            .unwrap();
        let decoded = lookup(&h).unwrap();
        let mut all = Vec::new();
        texts(&decoded, &mut all);
        assert!(
            all.len() > 1000,
            "{}: {} strings",
            path.display(),
            all.len()
        );
        let table = TABLE.as_ptr_range();
        for s in all.into_iter().filter(|s| !s.is_empty()) {
            assert!(table.contains(&s.as_ptr()), "`{s}` was copied");
        }
    }

    #[test]
    fn every_known_file_decodes_to_exactly_its_parse() {
        for (path, text, h, node) in parsed_known_files() {
            let decoded =
                lookup(&h).unwrap_or_else(|| panic!("{} not in the table", path.display()));
            assert_eq!(decoded, node, "{}", path.display());
            // What a load sees of a file is its unit: types, imports, problems with positions.
            assert_eq!(
                Unit::from_root(decoded),
                Unit::parse(&text),
                "{}",
                path.display()
            );
        }
    }

    #[test]
    fn a_copy_one_byte_off_is_not_recognised() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("types/tacker/v2.6.1-v2-tests-common/etsi_nfv_sol001_vnfd_types.yaml");
        let text = std::fs::read_to_string(path).unwrap();
        assert!(lookup(&hash(&text)).is_some());
        let edited = text.replacen("description:", "description: ", 1);
        assert_eq!(edited.len(), text.len() + 1);
        assert!(lookup(&hash(&edited)).is_none());
        let mut bytes = text.into_bytes();
        let last = bytes.len() - 1;
        bytes[last] = b' ';
        let flipped = String::from_utf8(bytes).unwrap();
        assert!(lookup(&hash(&flipped)).is_none());
    }

    #[test]
    fn a_small_table_round_trips_every_kind_of_value() {
        let text =
            "a: ~\nb: [true, false, -7, 9223372036854775807, 1.5, 2.5e-3, 'x']\nc: {d: {e: é}}\n";
        let node = yaml::parse("", text).unwrap();
        let h = hash(text);
        // Decoded strings borrow from the table, which lives as long as the program.
        let bytes = encode::table(&[(h, node.clone())]).leak();
        let t = split(bytes).unwrap();
        assert_eq!(lookup_in(&t, &h), Some(node));
        assert_eq!(lookup_in(&t, &[0; 32]), None);
    }

    proptest! {
        /// A damaged table decodes to nothing or to some tree, never panics.
        #[test]
        fn damaged_tables_never_panic(
            cut in 0usize..400,
            flips in proptest::collection::vec((0usize..400, any::<u8>()), 0..8),
        ) {
            let text = "tosca_definitions_version: tosca_simple_yaml_1_3\nnode_types:\n  a.B:\n    derived_from: tosca.nodes.Root\n    properties:\n      p: { type: list, entry_schema: { type: integer }, default: [1, -2] }\n";
            let h = hash(text);
            let mut bytes = encode::table(&[(h, yaml::parse("", text).unwrap())]);
            for (at, b) in flips {
                let i = at % bytes.len();
                bytes[i] = b;
            }
            bytes.truncate(bytes.len().saturating_sub(cut % 40));
            if let Some(t) = split(bytes.leak()) {
                let _ = lookup_in(&t, &h);
            }
        }
    }
}
