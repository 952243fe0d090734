//! Phase 1, read: the entry definitions, everything they import, the bundled type files, and
//! the process-wide cache of parsed files.
//!
//! Starting from the entry definitions, every `imports` entry is resolved and read once:
//! relative paths against the importing file inside the package (an import that climbs out of
//! the package or names an absent file is reported), the ETSI forge URLs of the SOL001 type
//! files (`https://forge.etsi.org/rep/nfv/SOL001/raw/vX.Y.Z/<file>`) to the copies bundled with
//! this crate, and ETSI file names the package does not carry to the bundled copy of the
//! version in use. Import cycles are reported instead of followed. The TOSCA normative types are
//! always read first, as every service template sees them without importing them.
//!
//! Parsing a file (YAML plus its type sections, see [`crate::types`]) depends only on its
//! content, so the result is kept in a bounded, thread-safe cache keyed by the SHA-256 of the
//! content: the bundled type files, the normative types and the ETSI files that every package
//! carries its own copy of are parsed once per process, whichever path they sit at.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

use sha2::{Digest, Sha256};

use vnfm_descriptor::Diagnostic;

use crate::PackageFiles;
use crate::paths;
use crate::problem::{Problem, Sink};
use crate::types::{self, Named, TypeDef};
use crate::yaml::{self, Node, Pos, Value};

/// A SOL001 type file bundled with the crate.
#[derive(Debug)]
pub(crate) struct BundledFile {
    pub version: &'static str,
    pub name: &'static str,
    pub text: &'static str,
}

macro_rules! sol001 {
    ($v:literal, $f:literal) => {
        BundledFile {
            version: $v,
            name: $f,
            text: include_str!(concat!("../types/sol001/v", $v, "/", $f)),
        }
    };
}

/// The SOL001 versions bundled, oldest first.
pub const SOL001_VERSIONS: [&str; 8] = [
    "2.5.1", "2.6.1", "2.7.1", "2.8.1", "3.3.1", "3.5.1", "3.6.1", "4.2.1",
];

static BUNDLED: [BundledFile; 31] = [
    sol001!("2.5.1", "etsi_nfv_sol001_nsd_types.yaml"),
    sol001!("2.5.1", "etsi_nfv_sol001_pnfd_types.yaml"),
    sol001!("2.5.1", "etsi_nfv_sol001_vnfd_types.yaml"),
    sol001!("2.6.1", "etsi_nfv_sol001_common_types.yaml"),
    sol001!("2.6.1", "etsi_nfv_sol001_nsd_types.yaml"),
    sol001!("2.6.1", "etsi_nfv_sol001_pnfd_types.yaml"),
    sol001!("2.6.1", "etsi_nfv_sol001_vnfd_types.yaml"),
    sol001!("2.7.1", "etsi_nfv_sol001_common_types.yaml"),
    sol001!("2.7.1", "etsi_nfv_sol001_nsd_types.yaml"),
    sol001!("2.7.1", "etsi_nfv_sol001_pnfd_types.yaml"),
    sol001!("2.7.1", "etsi_nfv_sol001_vnfd_types.yaml"),
    sol001!("2.8.1", "etsi_nfv_sol001_common_types.yaml"),
    sol001!("2.8.1", "etsi_nfv_sol001_nsd_types.yaml"),
    sol001!("2.8.1", "etsi_nfv_sol001_pnfd_types.yaml"),
    sol001!("2.8.1", "etsi_nfv_sol001_vnfd_types.yaml"),
    sol001!("3.3.1", "etsi_nfv_sol001_common_types.yaml"),
    sol001!("3.3.1", "etsi_nfv_sol001_nsd_types.yaml"),
    sol001!("3.3.1", "etsi_nfv_sol001_pnfd_types.yaml"),
    sol001!("3.3.1", "etsi_nfv_sol001_vnfd_types.yaml"),
    sol001!("3.5.1", "etsi_nfv_sol001_common_types.yaml"),
    sol001!("3.5.1", "etsi_nfv_sol001_nsd_types.yaml"),
    sol001!("3.5.1", "etsi_nfv_sol001_pnfd_types.yaml"),
    sol001!("3.5.1", "etsi_nfv_sol001_vnfd_types.yaml"),
    sol001!("3.6.1", "etsi_nfv_sol001_common_types.yaml"),
    sol001!("3.6.1", "etsi_nfv_sol001_nsd_types.yaml"),
    sol001!("3.6.1", "etsi_nfv_sol001_pnfd_types.yaml"),
    sol001!("3.6.1", "etsi_nfv_sol001_vnfd_types.yaml"),
    sol001!("4.2.1", "etsi_nfv_sol001_common_types.yaml"),
    sol001!("4.2.1", "etsi_nfv_sol001_nsd_types.yaml"),
    sol001!("4.2.1", "etsi_nfv_sol001_pnfd_types.yaml"),
    sol001!("4.2.1", "etsi_nfv_sol001_vnfd_types.yaml"),
];

static NORMATIVE: &str = include_str!("../types/tosca/tosca_normative_types.yaml");

/// Display path of the normative types in diagnostics.
pub(crate) const NORMATIVE_PATH: &str = "bundled:tosca/tosca_normative_types.yaml";

fn bundled(version: &str, name: &str) -> Option<&'static BundledFile> {
    BUNDLED
        .iter()
        .find(|b| b.version == version && b.name == name)
}

pub(crate) fn is_etsi_file_name(name: &str) -> bool {
    name.starts_with("etsi_nfv_sol001_") && name.ends_with("_types.yaml")
}

/// The version and file name of an ETSI forge URL of a SOL001 file.
fn forge_url(url: &str) -> Option<(&str, &str)> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let (host, path) = rest.split_once('/')?;
    if !host.eq_ignore_ascii_case("forge.etsi.org") {
        return None;
    }
    let segments: Vec<&str> = path.split('/').collect();
    if !segments.iter().any(|s| s.eq_ignore_ascii_case("SOL001")) {
        return None;
    }
    let version = segments.iter().find_map(|s| {
        let v = s.strip_prefix('v')?;
        let parts: Vec<&str> = v.split('.').collect();
        (parts.len() == 3
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
        .then_some(v)
    })?;
    let name = segments.last()?;
    Some((version, name))
}

/// One `imports` entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ImportDef {
    pub file: Named,
    pub repository: Option<Named>,
    pub prefix: Option<String>,
}

/// A parsed file: everything that depends only on its content.
#[derive(Debug, PartialEq)]
pub(crate) struct Unit {
    /// The YAML tree, unless the YAML was invalid.
    pub root: Option<Node>,
    pub definitions_version: Option<Named>,
    pub imports: Vec<ImportDef>,
    /// Repository name -> URL.
    pub repositories: Vec<(String, Named)>,
    pub types: Vec<Arc<TypeDef>>,
    /// `metadata.template_name` / `template_version` (the ETSI files carry them).
    pub template_name: Option<String>,
    pub template_version: Option<String>,
    pub problems: Vec<Problem>,
}

/// The TOSCA versions this reader understands.
pub(crate) const TOSCA_VERSIONS: [&str; 4] = [
    "tosca_simple_yaml_1_0",
    "tosca_simple_yaml_1_1",
    "tosca_simple_yaml_1_2",
    "tosca_simple_yaml_1_3",
];

const TOP_KEYWORDS: &[&str] = &[
    "tosca_definitions_version",
    "namespace",
    "metadata",
    "description",
    "dsl_definitions",
    "repositories",
    "imports",
    "artifact_types",
    "data_types",
    "capability_types",
    "interface_types",
    "relationship_types",
    "node_types",
    "group_types",
    "policy_types",
    "topology_template",
];

impl Unit {
    fn empty() -> Unit {
        Unit {
            root: None,
            definitions_version: None,
            imports: Vec::new(),
            repositories: Vec::new(),
            types: Vec::new(),
            template_name: None,
            template_version: None,
            problems: Vec::new(),
        }
    }

    pub(crate) fn parse(text: &str) -> Unit {
        let mut unit = Unit::empty();
        match yaml::parse("", text) {
            Ok(root) => {
                unit.read_root(&root);
                unit.root = Some(root);
            }
            Err(d) => unit.problems.push(Problem::from_diagnostic(d)),
        }
        unit
    }

    fn read_root(&mut self, root: &Node) {
        let p = &mut self.problems;
        let Some(map) = root.as_map() else {
            p.push(types::wrong_shape(
                root,
                "a TOSCA definitions file",
                "a map",
            ));
            return;
        };
        for (k, v) in map {
            match k.name.as_str() {
                "tosca_definitions_version" => {
                    self.definitions_version = types::named(v, &k.name, p);
                    if let Some(n) = &self.definitions_version
                        && !TOSCA_VERSIONS.contains(&n.name.as_str())
                    {
                        p.push(
                            Problem::error(
                                "tosca.unsupported-version",
                                n.pos,
                                format!("`{}` is not a supported TOSCA version", n.name),
                            )
                            .with_help(format!("use one of {}", TOSCA_VERSIONS.join(", "))),
                        );
                    }
                }
                "imports" => self.imports = import_defs(v, p),
                "repositories" => {
                    for (rk, rv) in types::entries(v, k.pos, "repositories", p) {
                        let url = match rv.get("url") {
                            Some(u) => types::named(u, "url", p),
                            None => types::named(rv, "repository", p),
                        };
                        if let Some(url) = url {
                            self.repositories.push((rk.name.as_str().to_owned(), url));
                        }
                    }
                }
                "metadata" => {
                    self.template_name = v.get("template_name").and_then(Node::scalar_text);
                    self.template_version = v.get("template_version").and_then(Node::scalar_text);
                }
                other if TOP_KEYWORDS.contains(&other) => {}
                other => p.push(
                    Problem::error(
                        "tosca.unknown-keyword",
                        k.pos,
                        format!("`{other}` is not a keyword of a TOSCA service template"),
                    )
                    .with_help(format!("allowed here: {}", TOP_KEYWORDS.join(", "))),
                ),
            }
        }
        if self.definitions_version.is_none() {
            p.push(
                Problem::error(
                    "tosca.missing-entry-definitions-field",
                    Pos { line: 1, column: 1 },
                    "`tosca_definitions_version` is missing",
                )
                .with_help(
                    "start the file with `tosca_definitions_version: tosca_simple_yaml_1_3`",
                ),
            );
        }
        self.types = types::parse_type_sections(root, p);
    }
}

fn import_defs(node: &Node, problems: &mut Vec<Problem>) -> Vec<ImportDef> {
    let items: &[Node] = match &node.value {
        Value::Seq(items) => items,
        Value::Null => return Vec::new(),
        _ => {
            problems.push(types::wrong_shape(node, "`imports`", "a list"));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for item in items {
        let full = |n: &Node, problems: &mut Vec<Problem>| -> Option<ImportDef> {
            let file = match n.get("file") {
                Some(f) => types::named(f, "file", problems)?,
                None => {
                    problems.push(Problem::error(
                        "tosca.missing-keyword",
                        n.pos,
                        "an import definition needs a `file`",
                    ));
                    return None;
                }
            };
            for (k, _) in n.as_map().unwrap_or_default() {
                if !matches!(
                    k.name.as_str(),
                    "file" | "repository" | "namespace_prefix" | "namespace_uri"
                ) {
                    problems.push(Problem::error(
                        "tosca.unknown-keyword",
                        k.pos,
                        format!("`{}` is not a keyword of an import definition", k.name),
                    ));
                }
            }
            Some(ImportDef {
                file,
                repository: n
                    .get("repository")
                    .and_then(|r| types::named(r, "repository", problems)),
                prefix: n.get("namespace_prefix").and_then(Node::scalar_text),
            })
        };
        match &item.value {
            Value::Str(_) => {
                if let Some(file) = types::named(item, "import", problems) {
                    out.push(ImportDef {
                        file,
                        repository: None,
                        prefix: None,
                    });
                }
            }
            Value::Map(m) if m.iter().any(|(k, _)| k.name == "file") => {
                out.extend(full(item, problems));
            }
            // TOSCA 1.0 named import: `- name: file` or `- name: { file: ... }`.
            Value::Map(m) if m.len() == 1 => {
                let v = &m[0].1;
                if v.as_map().is_some() {
                    out.extend(full(v, problems));
                } else if let Some(file) = types::named(v, "import", problems) {
                    out.push(ImportDef {
                        file,
                        repository: None,
                        prefix: None,
                    });
                }
            }
            _ => problems.push(types::wrong_shape(
                item,
                "an import",
                "a file name or an import definition",
            )),
        }
    }
    out
}

const CACHE_MAX_ENTRIES: usize = 128;
// Parsed trees take several times the size of their source; this keeps the cache to tens of MB.
const CACHE_MAX_BYTES: usize = 8 * 1024 * 1024;

#[derive(Default)]
struct UnitCache {
    map: HashMap<[u8; 32], (Arc<Unit>, usize)>,
    order: VecDeque<[u8; 32]>,
    bytes: usize,
}

fn cache() -> &'static Mutex<UnitCache> {
    static CACHE: OnceLock<Mutex<UnitCache>> = OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

/// The parsed form of `text`, from the cache when the same content was parsed before.
pub(crate) fn unit_for(text: &str) -> Arc<Unit> {
    let key: [u8; 32] = Sha256::digest(text.as_bytes()).into();
    {
        let mut c = cache().lock().unwrap_or_else(|e| e.into_inner());
        if let Some((unit, _)) = c.map.get(&key) {
            let unit = Arc::clone(unit);
            // Least recently used goes first: the shared ETSI files stay while one-off files
            // come and go.
            if let Some(i) = c.order.iter().position(|k| *k == key) {
                c.order.remove(i);
            }
            c.order.push_back(key);
            return unit;
        }
    }
    // Parse outside the lock: two threads may parse the same file once each, which is cheaper
    // than serializing every parse.
    let unit = Arc::new(Unit::parse(text));
    let mut c = cache().lock().unwrap_or_else(|e| e.into_inner());
    if let std::collections::hash_map::Entry::Vacant(e) = c.map.entry(key) {
        e.insert((Arc::clone(&unit), text.len()));
        c.order.push_back(key);
        c.bytes += text.len();
        while c.map.len() > CACHE_MAX_ENTRIES || c.bytes > CACHE_MAX_BYTES {
            let Some(old) = c.order.pop_front() else {
                break;
            };
            if let Some((_, len)) = c.map.remove(&old) {
                c.bytes -= len;
            }
        }
    }
    unit
}

/// Reads `path` from the package and parses it (through the cache).
fn load_package_file(files: &dyn PackageFiles, path: &str) -> Result<Arc<Unit>, Diagnostic> {
    crate::read_text(files, path).map(|text| unit_for(&text))
}

/// Empties the cache of parsed files (to measure cold loads, or to release memory).
pub fn clear_cache() {
    let mut c = cache().lock().unwrap_or_else(|e| e.into_inner());
    *c = UnitCache::default();
}

/// Where a loaded file comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Origin {
    Package(String),
    Bundled(&'static str, &'static str),
}

/// A file read during a load.
#[derive(Debug)]
pub(crate) struct LoadedFile {
    /// Path shown in diagnostics: the package path, or `bundled:sol001/vX.Y.Z/<file>`.
    pub display: String,
    /// Package-relative path, for files of the package.
    pub package_path: Option<String>,
    /// SOL001 version of a bundled file.
    pub bundled_version: Option<&'static str>,
    pub unit: Arc<Unit>,
    /// Namespace prefix the file's types are known under (from `namespace_prefix`).
    pub prefix: Option<String>,
}

/// Every file of a load. Index 0 is the normative types, index 1 the entry definitions.
#[derive(Debug, Default)]
pub(crate) struct Graph {
    pub files: Vec<LoadedFile>,
}

pub(crate) const ENTRY: usize = 1;

/// Deepest chain of imports followed.
const MAX_IMPORT_DEPTH: usize = 32;
/// Most files read in one load.
const MAX_FILES: usize = 512;

struct Reader<'a> {
    files: &'a dyn PackageFiles,
    sink: &'a mut Sink,
    graph: Graph,
    index: HashMap<String, usize>,
    /// Package files an import named that could not be read (reported once, not read again).
    unreadable: HashSet<String>,
    stack: Vec<String>,
    /// SOL001 version in use, for ETSI file names the package does not carry.
    sol001: Option<&'static str>,
}

/// Reads the entry definitions and everything they import. `None` when the entry definitions
/// cannot be read at all.
pub(crate) fn read(files: &dyn PackageFiles, sink: &mut Sink) -> Option<Graph> {
    let entry = files.entry_definitions().to_string();
    if !files.contains(&entry) {
        sink.push(
            vnfm_descriptor::Diagnostic::error(
                "tosca.entry-definitions-not-found",
                format!("the entry definitions file `{entry}` is not in the package"),
            )
            .at(vnfm_descriptor::Location::file(&entry))
            .with_help("add the file, or point Entry-Definitions in TOSCA-Metadata/TOSCA.meta at the top-level VNFD"),
        );
        return None;
    }
    let mut r = Reader {
        files,
        sink,
        graph: Graph::default(),
        index: HashMap::new(),
        unreadable: HashSet::new(),
        stack: Vec::new(),
        sol001: None,
    };
    r.push_file(
        NORMATIVE_PATH.to_string(),
        None,
        None,
        unit_for(NORMATIVE),
        None,
    );
    r.visit(Origin::Package(entry.clone()), None, 0)?;
    r.visit_unimported_flavours(&entry);
    Some(r.graph)
}

/// The `flavour_id` a file's substitution mapping names, when the file is a deployment flavour
/// (a `topology_template` with `substitution_mappings`); `Some("")` when it names none.
fn flavour_id_of(unit: &Unit) -> Option<&str> {
    let mapping = unit
        .root
        .as_ref()?
        .get("topology_template")?
        .get("substitution_mappings")?;
    Some(
        mapping
            .get("properties")
            .and_then(|p| p.get("flavour_id"))
            .and_then(Node::as_str)
            .unwrap_or(""),
    )
}

fn key_of(origin: &Origin) -> String {
    match origin {
        Origin::Package(p) => p.clone(),
        Origin::Bundled(v, n) => format!("bundled:sol001/v{v}/{n}"),
    }
}

impl Reader<'_> {
    /// Reads the deployment flavour files that sit beside the entry definitions without being
    /// imported. Tacker reads every file of `Definitions/` and finds a flavour by its
    /// `flavour_id`, so its packages can hold a flavour no file imports (the `volume` flavour of
    /// its `v2-vm-change-vnfpkg-*` samples); such a flavour is read too, with a warning. Files
    /// that are not flavours, do not parse, or name a flavour already read are left alone, so
    /// nothing a package does not import can make it invalid.
    fn visit_unimported_flavours(&mut self, entry: &str) {
        let dir = entry.rfind('/').map_or("", |i| &entry[..=i]);
        let mut known: Vec<String> = self
            .graph
            .files
            .iter()
            .filter(|f| f.package_path.is_some())
            .filter_map(|f| flavour_id_of(&f.unit).map(str::to_string))
            .collect();
        let mut candidates: Vec<String> = self
            .files
            .paths()
            .into_iter()
            .filter(|p| {
                p.strip_prefix(dir).is_some_and(|name| {
                    !name.contains('/') && (name.ends_with(".yaml") || name.ends_with(".yml"))
                })
            })
            .filter(|p| !self.index.contains_key(p) && !self.unreadable.contains(p))
            .collect();
        candidates.sort();
        for path in candidates {
            let Ok(unit) = load_package_file(self.files, &path) else {
                continue;
            };
            let Some(id) = flavour_id_of(&unit) else {
                continue;
            };
            if !unit.problems.is_empty() || id.is_empty() || known.iter().any(|k| k == id) {
                continue;
            }
            known.push(id.to_string());
            let pos = unit
                .root
                .as_ref()
                .and_then(|r| r.get_entry("topology_template"))
                .map(|(k, _)| k.pos)
                .unwrap_or_default();
            self.sink
                .warning(
                    &path,
                    pos,
                    "tosca.flavour-not-imported",
                    format!(
                        "deployment flavour `{id}` is read from this file, which no definitions file imports"
                    ),
                )
                .help = Some(format!(
                "import it from `{entry}`: it is read because it sits beside the entry definitions, as Tacker reads every file of `Definitions/`, but other TOSCA readers only follow imports"
            ));
            self.visit(Origin::Package(path), None, 0);
        }
    }

    fn push_file(
        &mut self,
        display: String,
        package_path: Option<String>,
        bundled_version: Option<&'static str>,
        unit: Arc<Unit>,
        prefix: Option<String>,
    ) -> usize {
        for p in &unit.problems {
            self.sink.problem(&display, p.clone());
        }
        let ix = self.graph.files.len();
        self.index.insert(display.clone(), ix);
        self.graph.files.push(LoadedFile {
            display,
            package_path,
            bundled_version,
            unit,
            prefix,
        });
        ix
    }

    /// Reads the file at `origin` (once) and, depth first, what it imports.
    fn visit(&mut self, origin: Origin, prefix: Option<String>, depth: usize) -> Option<usize> {
        let key = key_of(&origin);
        if let Some(&ix) = self.index.get(&key) {
            return Some(ix);
        }
        if self.graph.files.len() >= MAX_FILES {
            self.sink.push(
                vnfm_descriptor::Diagnostic::error(
                    "tosca.too-many-files",
                    format!("more than {MAX_FILES} definitions files are imported"),
                )
                .at(vnfm_descriptor::Location::file(&key)),
            );
            return None;
        }
        let (unit, package_path, bundled_version) = match origin {
            Origin::Package(path) => match load_package_file(self.files, &path) {
                Ok(unit) => (unit, Some(path), None),
                Err(d) => {
                    self.sink.push(d);
                    self.unreadable.insert(path);
                    return None;
                }
            },
            Origin::Bundled(version, name) => {
                let b = bundled(version, name)?;
                if self.sol001.is_none() && b.name == "etsi_nfv_sol001_vnfd_types.yaml" {
                    self.sol001 = Some(b.version);
                }
                (unit_for(b.text), None, Some(b.version))
            }
        };
        if self.sol001.is_none() {
            self.sol001 = etsi_version_of(&unit);
        }
        let ix = self.push_file(key.clone(), package_path, bundled_version, unit, prefix);
        self.stack.push(key);
        let unit = Arc::clone(&self.graph.files[ix].unit);
        for imp in &unit.imports {
            self.follow(ix, imp, depth);
        }
        self.stack.pop();
        Some(ix)
    }

    fn follow(&mut self, from: usize, imp: &ImportDef, depth: usize) {
        let from_display = self.graph.files[from].display.clone();
        let Some(target) = self.resolve(from, imp) else {
            return;
        };
        let target_key = key_of(&target);
        if let Some(at) = self.stack.iter().position(|k| *k == target_key) {
            let mut chain: Vec<&str> = self.stack[at..].iter().map(String::as_str).collect();
            chain.push(&target_key);
            self.sink
                .error(
                    &from_display,
                    imp.file.pos,
                    "tosca.cyclic-import",
                    format!(
                        "import of `{}` closes a cycle: {}",
                        imp.file.name,
                        chain.join(" -> ")
                    ),
                )
                .help =
                Some("remove one of the imports; TOSCA imports must not form a cycle".into());
            return;
        }
        if depth + 1 > MAX_IMPORT_DEPTH {
            self.sink.error(
                &from_display,
                imp.file.pos,
                "tosca.import-too-deep",
                format!("imports are nested more than {MAX_IMPORT_DEPTH} levels deep"),
            );
            return;
        }
        let prefix = match (&self.graph.files[from].prefix, &imp.prefix) {
            (Some(outer), Some(inner)) => Some(format!("{outer}:{inner}")),
            (Some(p), None) | (None, Some(p)) => Some(p.clone()),
            (None, None) => None,
        };
        self.visit(target, prefix, depth + 1);
    }

    /// Where an import points, or `None` after reporting why it cannot be followed.
    fn resolve(&mut self, from: usize, imp: &ImportDef) -> Option<Origin> {
        let from_file = &self.graph.files[from];
        let display = from_file.display.clone();
        let mut reference = imp.file.name.clone();
        if let Some(repo) = &imp.repository {
            match from_file
                .unit
                .repositories
                .iter()
                .find(|(n, _)| *n == repo.name)
            {
                Some((_, url)) => {
                    reference = format!(
                        "{}/{}",
                        url.name.trim_end_matches('/'),
                        reference.trim_start_matches('/')
                    )
                }
                None => {
                    self.sink.error(
                        &display,
                        repo.pos,
                        "tosca.unknown-repository",
                        format!("repository `{}` is not defined in this file", repo.name),
                    );
                    return None;
                }
            }
        }
        if paths::is_external_uri(&reference) {
            if let Some((version, name)) = forge_url(&reference) {
                return match bundled(version, name) {
                    Some(b) => Some(Origin::Bundled(b.version, b.name)),
                    None => {
                        self.sink
                            .error(
                                &display,
                                imp.file.pos,
                                "tosca.import-not-found",
                                format!(
                                    "`{reference}` names an ETSI SOL001 file that is not bundled"
                                ),
                            )
                            .help = Some(format!(
                            "bundled SOL001 versions: {}; add the file to the package and import it by relative path",
                            SOL001_VERSIONS.join(", ")
                        ));
                        None
                    }
                };
            }
            self.sink
                .error(
                    &display,
                    imp.file.pos,
                    "tosca.import-external",
                    format!(
                        "`{reference}` is outside the package; external imports are not fetched"
                    ),
                )
                .help = Some("add the file to the package and import it by relative path".into());
            return None;
        }
        if let Some(version) = from_file.bundled_version {
            let name = reference.rsplit('/').next().unwrap_or(&reference);
            return match bundled(version, name) {
                Some(b) => Some(Origin::Bundled(b.version, b.name)),
                None => {
                    self.sink.error(
                        &display,
                        imp.file.pos,
                        "tosca.import-not-found",
                        format!("`{reference}` is not a bundled SOL001 v{version} file"),
                    );
                    None
                }
            };
        }
        let base = from_file.package_path.as_deref().unwrap_or("");
        match paths::resolve_relative(base, &reference) {
            Err(paths::PathError::Escapes) => {
                self.sink
                    .error(
                        &display,
                        imp.file.pos,
                        "tosca.import-escapes-package",
                        format!("`{reference}` points outside the package"),
                    )
                    .help = Some("imports must name files inside the package".into());
                None
            }
            Err(paths::PathError::Invalid(why)) => {
                self.sink.error(
                    &display,
                    imp.file.pos,
                    "tosca.invalid-import",
                    format!("`{reference}` is not a valid package path: {why}"),
                );
                None
            }
            Ok(path) if self.files.contains(&path) => Some(Origin::Package(path)),
            Ok(path) => {
                let name = path.rsplit('/').next().unwrap_or(&path);
                if is_etsi_file_name(name) {
                    let version = self.sol001.unwrap_or(
                        if from_file
                            .unit
                            .definitions_version
                            .as_ref()
                            .is_some_and(|v| v.name == "tosca_simple_yaml_1_3")
                        {
                            "4.2.1"
                        } else {
                            "2.6.1"
                        },
                    );
                    if let Some(b) = bundled(version, name) {
                        self.sink.warning(
                            &display,
                            imp.file.pos,
                            "tosca.import-bundled",
                            format!(
                                "`{path}` is not in the package; using the bundled ETSI SOL001 v{version} copy"
                            ),
                        )
                        .help = Some("add the file to the package, or import its ETSI forge URL to name the version".into());
                        return Some(Origin::Bundled(b.version, b.name));
                    }
                }
                self.sink.error(
                    &display,
                    imp.file.pos,
                    "tosca.import-not-found",
                    format!("imported file `{path}` is not in the package"),
                );
                None
            }
        }
    }
}

fn etsi_version_of(unit: &Unit) -> Option<&'static str> {
    let name = unit.template_name.as_deref()?;
    if !name.starts_with("etsi_nfv_sol001_") {
        return None;
    }
    let v = unit.template_version.as_deref()?;
    SOL001_VERSIONS.iter().copied().find(|b| *b == v)
}

#[cfg(test)]
mod tests;
