//! Phases 2 to 4: namespace, hierarchy and inheritance of the types of one load.
//!
//! *Namespace* collects the type definitions of every file read into one table. A type defined
//! in two files is accepted when both definitions mean the same (packages carry their own copy
//! of the ETSI files, and copies differ at most in descriptions); otherwise it is reported.
//! Types of a file imported with `namespace_prefix: p` are known as `p:Name` from outside that
//! file and by their plain name inside it. TOSCA short names (`Compute`, `tosca:Compute`) of the
//! normative types are understood.
//!
//! *Hierarchy* resolves every `derived_from` (reporting unknown parents, parents of the wrong
//! kind and derivation cycles) and checks that every type a definition refers to exists.
//!
//! *Inheritance* computes, lazily and once per type, the flattened view of a type ([`Flat`]):
//! its properties, attributes, requirements, capabilities, interfaces (with their operations),
//! artifacts, data type constraints and valid types, inherited along the `derived_from` chain
//! and refined by each descendant.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use indexmap::IndexMap;

use crate::imports::{Graph, LoadedFile};
use crate::problem::Sink;
use crate::quirks::Quirk;
use crate::types::{
    ArtifactDef, CapDef, Constraint, Kind, Named, OpDef, PropDef, ReqDef, Schema, TypeDef,
};
use crate::values::Prim;

/// Index of a type in [`Types`].
pub(crate) type TypeId = usize;

/// One type of the load and the file that declares it.
#[derive(Debug)]
pub(crate) struct Entry {
    pub def: Arc<TypeDef>,
    pub file: usize,
}

/// What `derived_from` resolved to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parent {
    /// No `derived_from` (a root type).
    Root,
    Type(TypeId),
    /// A data type derived from a primitive type.
    Primitive(Prim),
    /// Unknown parent or part of a cycle (already reported).
    Broken,
}

/// A type reference in a value schema: a primitive or a data type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DataRef {
    Prim(Prim),
    Type(TypeId),
}

/// A property (or attribute) definition after inheritance, with the file it was written in
/// (type names in its schema are resolved from there).
#[derive(Debug, Clone)]
pub(crate) struct FlatProp {
    pub def: Arc<PropDef>,
    pub file: usize,
}

/// An interface of a node/relationship/group type after inheritance.
#[derive(Debug, Clone, Default)]
pub(crate) struct FlatIface {
    pub ty: Option<(Named, usize)>,
    /// Operations declared on the interface definition itself (they may carry implementations).
    pub operations: IndexMap<String, (OpDef, usize)>,
}

/// The flattened view of a type.
#[derive(Debug, Clone, Default)]
pub(crate) struct Flat {
    /// The type itself first, then its parent, up to the root.
    pub ancestors: Vec<TypeId>,
    /// For data types derived from a primitive type: that primitive.
    pub base: Option<Prim>,
    pub properties: IndexMap<String, FlatProp>,
    pub attributes: IndexMap<String, FlatProp>,
    pub requirements: IndexMap<String, (Arc<ReqDef>, usize)>,
    pub capabilities: IndexMap<String, (Arc<CapDef>, usize)>,
    pub interfaces: IndexMap<String, FlatIface>,
    pub artifacts: IndexMap<String, (Arc<ArtifactDef>, usize)>,
    /// Operations of an interface type.
    pub operations: IndexMap<String, (Arc<OpDef>, usize)>,
    /// Constraints of a data type derived from a primitive type, along the whole chain.
    pub constraints: Vec<(Constraint, usize)>,
    pub entry_schema: Option<(Schema, usize)>,
    pub key_schema: Option<(Schema, usize)>,
    /// The most derived non-empty list of valid member/target/source types.
    pub valid_types: Vec<(Named, usize)>,
    pub file_ext: Vec<String>,
}

/// The types of one load.
#[derive(Debug)]
pub(crate) struct Types<'g> {
    pub graph: &'g Graph,
    pub entries: Vec<Entry>,
    by_name: HashMap<Arc<str>, TypeId>,
    pub parent: Vec<Parent>,
    flat: Vec<OnceCell<Rc<Flat>>>,
}

impl<'g> Types<'g> {
    /// Phase 2: collects every type of every file of `graph`.
    pub fn collect(graph: &'g Graph, sink: &mut Sink) -> Types<'g> {
        let capacity = graph.files.iter().map(|f| f.unit.types.len()).sum();
        let mut t = Types {
            graph,
            entries: Vec::with_capacity(capacity),
            by_name: HashMap::with_capacity(capacity),
            parent: Vec::new(),
            flat: Vec::new(),
        };
        for (file_ix, file) in graph.files.iter().enumerate() {
            for def in &file.unit.types {
                let key: Arc<str> = match &file.prefix {
                    Some(p) => Arc::from(format!("{p}:{}", def.name)),
                    None => Arc::clone(&def.name),
                };
                if let Some(&existing) = t.by_name.get(&key) {
                    let first = &t.entries[existing];
                    let raw = |file: usize, def: &TypeDef| {
                        let root = graph.files[file].unit.root.as_ref()?;
                        crate::types::raw_definition(root, def)
                    };
                    if Arc::ptr_eq(&first.def, def)
                        || (first.def.kind == def.kind
                            && raw(first.file, &first.def)
                                .zip(raw(file_ix, def))
                                .is_some_and(|(a, b)| crate::types::same_meaning(a, b)))
                    {
                        continue;
                    }
                    let first_file = &graph.files[first.file].display;
                    let first_line = first.def.pos.line;
                    if is_etsi_file(&graph.files[first.file]) && is_etsi_file(file) {
                        sink.quirk(
                            Quirk::EtsiTypeRedefinition,
                            &file.display,
                            def.pos,
                            format!(
                                "{} `{}` is also defined, differently, at {first_file}:{first_line}; that first definition is used",
                                def.kind.noun(),
                                def.name
                            ),
                        );
                        continue;
                    }
                    sink.error(
                        &file.display,
                        def.pos,
                        "tosca.duplicate-type",
                        format!(
                            "{} `{}` is also defined, differently, at {first_file}:{first_line}",
                            def.kind.noun(),
                            def.name
                        ),
                    )
                    .help = Some("keep one definition; the first one read is used".to_string());
                    continue;
                }
                t.by_name.insert(key, t.entries.len());
                t.entries.push(Entry {
                    def: Arc::clone(def),
                    file: file_ix,
                });
            }
        }
        t.parent = vec![Parent::Root; t.entries.len()];
        t.flat = (0..t.entries.len()).map(|_| OnceCell::new()).collect();
        t
    }

    /// The display path of file `ix`.
    pub fn file_name(&self, ix: usize) -> &str {
        &self.graph.files[ix].display
    }

    /// Finds a type by name as written in file `from`, for a reference expecting `kind`.
    pub fn lookup(&self, name: &str, kind: Kind, from: usize) -> Option<TypeId> {
        if let Some(p) = self.graph.files.get(from).and_then(|f| f.prefix.as_deref())
            && let Some(&id) = self.by_name.get(format!("{p}:{name}").as_str())
        {
            return Some(id);
        }
        if let Some(&id) = self.by_name.get(name) {
            return Some(id);
        }
        let short = name.strip_prefix("tosca:").unwrap_or(name);
        if short != name || !short.contains('.') {
            let long = format!("{}{short}", kind.normative_prefix());
            if let Some(&id) = self.by_name.get(long.as_str()) {
                return Some(id);
            }
            if let Some(&id) = self.by_name.get(short) {
                return Some(id);
            }
        }
        None
    }

    /// Resolves a reference to a type of `kind`, reporting unknown types and types of another
    /// kind at the reference.
    pub fn resolve(
        &self,
        name: &Named,
        kind: Kind,
        from: usize,
        sink: &mut Sink,
    ) -> Option<TypeId> {
        match self.lookup(&name.name, kind, from) {
            Some(id) if self.entries[id].def.kind == kind => Some(id),
            Some(id) => {
                sink.error(
                    self.file_name(from),
                    name.pos,
                    "tosca.wrong-kind-of-type",
                    format!(
                        "`{}` is a {}, but a {} is expected here",
                        name.name,
                        self.entries[id].def.kind.noun(),
                        kind.noun()
                    ),
                );
                None
            }
            None => {
                self.report_unknown(name, kind, from, sink);
                None
            }
        }
    }

    fn report_unknown(&self, name: &Named, kind: Kind, from: usize, sink: &mut Sink) {
        let help = self.unknown_type_help(&name.name, kind);
        let d = sink.error(
            self.file_name(from),
            name.pos,
            "tosca.unknown-type",
            format!("{} `{}` is not defined", kind.noun(), name.name),
        );
        d.help = Some(help);
    }

    /// What to do about the unknown type `name`: "did you mean" the known type of `kind`
    /// whose name is closest to it, when one is a few edits away (a typo); otherwise, when
    /// no known type shares its namespace (the part before the last `.` or `:`), import the
    /// definitions of that namespace; otherwise check the spelling.
    fn unknown_type_help(&self, name: &str, kind: Kind) -> String {
        // At most one edit per 8 characters, and at least one.
        let most = (name.chars().count() / 8).clamp(1, 4);
        let closest = self
            .by_name
            .iter()
            .filter(|(_, id)| self.entries[**id].def.kind == kind)
            .map(|(known, _)| (strsim::damerau_levenshtein(name, known), known))
            .filter(|(distance, _)| *distance <= most)
            .min();
        if let Some((_, known)) = closest {
            return format!("did you mean `{known}`?");
        }
        let namespace = name
            .rfind(['.', ':'])
            .map(|at| &name[..=at])
            .filter(|ns| ns.len() > 1);
        let imported = namespace.is_some_and(|ns| {
            self.by_name
                .keys()
                .any(|known| known.starts_with(ns) && known.len() > ns.len())
        });
        match namespace {
            Some(ns) if imported => format!(
                "no {} of that name is defined in `{}`: check the spelling, or define the type",
                kind.noun(),
                ns.trim_end_matches(['.', ':'])
            ),
            _ if name.starts_with("tosca.") => {
                "import the ETSI SOL001 type definitions (or the file) that define it".to_string()
            }
            _ => "define the type, or import the file that defines it".to_string(),
        }
    }

    /// Resolves the type of a value: a primitive type or a data type.
    pub fn data_ref(&self, name: &str, from: usize) -> Option<DataRef> {
        if let Some(p) = Prim::parse(name) {
            return Some(DataRef::Prim(p));
        }
        match self.lookup(name, Kind::Data, from) {
            Some(id) if self.entries[id].def.kind == Kind::Data => Some(DataRef::Type(id)),
            _ => None,
        }
    }

    /// Like [`Types::data_ref`], reporting unknown types.
    pub fn resolve_data(&self, name: &Named, from: usize, sink: &mut Sink) -> Option<DataRef> {
        if let Some(r) = self.data_ref(&name.name, from) {
            return Some(r);
        }
        if self.lookup(&name.name, Kind::Data, from).is_some() {
            self.resolve(name, Kind::Data, from, sink);
        } else {
            self.report_unknown(name, Kind::Data, from, sink);
        }
        None
    }

    /// True when `id` is `ancestor` or derives from it.
    pub fn derives_from(&self, id: TypeId, ancestor: TypeId) -> bool {
        self.flat(id).ancestors.contains(&ancestor)
    }

    /// True when `id` is the type named `name` (a full name) or derives from it.
    pub fn derives_from_name(&self, id: TypeId, name: &str) -> bool {
        self.flat(id)
            .ancestors
            .iter()
            .any(|&a| &*self.entries[a].def.name == name)
    }

    /// Phase 3: resolves `derived_from`, detects cycles, checks the type references of every
    /// definition.
    pub fn build_hierarchy(&mut self, sink: &mut Sink) {
        for id in 0..self.entries.len() {
            let def = Arc::clone(&self.entries[id].def);
            let file = self.entries[id].file;
            self.parent[id] = match &def.derived_from {
                None => Parent::Root,
                Some(n) if def.kind == Kind::Data && Prim::parse(&n.name).is_some() => {
                    Prim::parse(&n.name).map_or(Parent::Broken, Parent::Primitive)
                }
                Some(n) => match self.resolve(n, def.kind, file, sink) {
                    Some(p) => Parent::Type(p),
                    None => Parent::Broken,
                },
            };
        }
        self.break_cycles(sink);
        for id in 0..self.entries.len() {
            self.check_references(id, sink);
        }
    }

    fn break_cycles(&mut self, sink: &mut Sink) {
        // 0 = unvisited, 1 = on the current path, 2 = done.
        let mut state = vec![0u8; self.entries.len()];
        for start in 0..self.entries.len() {
            let mut path = Vec::new();
            let mut cur = start;
            loop {
                match state[cur] {
                    2 => break,
                    1 => {
                        // `cur` is on the path: the last type of the path closes the cycle.
                        let closing = *path.last().unwrap_or(&cur);
                        let at = path.iter().position(|&p| p == cur).unwrap_or(0);
                        let names: Vec<&str> = path[at..]
                            .iter()
                            .chain(std::iter::once(&cur))
                            .map(|&i| &*self.entries[i].def.name)
                            .collect();
                        let e = &self.entries[closing];
                        let pos = e.def.derived_from.as_ref().map_or(e.def.pos, |d| d.pos);
                        sink.error(
                            &self.graph.files[e.file].display,
                            pos,
                            "tosca.cyclic-derived-from",
                            format!("`derived_from` forms a cycle: {}", names.join(" -> ")),
                        );
                        self.parent[closing] = Parent::Broken;
                        break;
                    }
                    _ => {
                        state[cur] = 1;
                        path.push(cur);
                        match self.parent[cur] {
                            Parent::Type(p) => cur = p,
                            _ => break,
                        }
                    }
                }
            }
            for p in path {
                state[p] = 2;
            }
        }
    }

    fn check_references(&self, id: TypeId, sink: &mut Sink) {
        let e = &self.entries[id];
        let (def, file) = (&e.def, e.file);
        for p in def.properties.iter().chain(&def.attributes) {
            self.check_schema(p.schema.as_ref(), file, sink);
        }
        self.check_schema(def.entry_schema.as_ref(), file, sink);
        self.check_schema(def.key_schema.as_ref(), file, sink);
        for r in &def.requirements {
            if let Some(c) = &r.capability {
                self.resolve(c, Kind::Capability, file, sink);
            }
            if let Some(n) = &r.node {
                self.resolve(n, Kind::Node, file, sink);
            }
            if let Some(rel) = &r.relationship {
                self.resolve(rel, Kind::Relationship, file, sink);
            }
        }
        for c in &def.capabilities {
            if let Some(t) = &c.ty {
                self.resolve(t, Kind::Capability, file, sink);
            }
            for p in &c.properties {
                self.check_schema(p.schema.as_ref(), file, sink);
            }
        }
        for i in &def.interfaces {
            if let Some(t) = &i.ty {
                self.resolve(t, Kind::Interface, file, sink);
            }
        }
        for a in &def.artifacts {
            if let Some(t) = &a.ty {
                self.resolve(t, Kind::Artifact, file, sink);
            }
        }
        let valid_kind = match def.kind {
            Kind::Group | Kind::Capability => Some(Kind::Node),
            Kind::Relationship => Some(Kind::Capability),
            _ => None,
        };
        for v in &def.valid_types {
            match (def.kind, valid_kind) {
                // Policy targets may be node types or group types.
                (Kind::Policy, _) => {
                    let found = self
                        .lookup(&v.name, Kind::Node, file)
                        .or_else(|| self.lookup(&v.name, Kind::Group, file));
                    if found.is_none() {
                        self.report_unknown(v, Kind::Node, file, sink);
                    }
                }
                (Kind::Capability, _) => {
                    // valid_source_types may name node or capability types.
                    let found = self
                        .lookup(&v.name, Kind::Node, file)
                        .or_else(|| self.lookup(&v.name, Kind::Capability, file));
                    if found.is_none() {
                        self.report_unknown(v, Kind::Node, file, sink);
                    }
                }
                (_, Some(k)) => {
                    self.resolve(v, k, file, sink);
                }
                _ => {}
            }
        }
    }

    fn check_schema(&self, schema: Option<&Schema>, file: usize, sink: &mut Sink) {
        let Some(s) = schema else {
            return;
        };
        if !s.ty.name.is_empty() {
            self.resolve_data(&s.ty, file, sink);
        }
        self.check_schema(s.entry.as_deref(), file, sink);
        self.check_schema(s.key.as_deref(), file, sink);
    }

    /// Phase 4: the flattened view of a type, computed once.
    pub fn flat(&self, id: TypeId) -> Rc<Flat> {
        if let Some(f) = self.flat[id].get() {
            return Rc::clone(f);
        }
        // Walk up to the nearest ancestor already flattened, then fold down: no recursion, so
        // long derivation chains cannot exhaust the stack.
        let mut chain = vec![id];
        let mut cur = id;
        while let Parent::Type(p) = self.parent[cur] {
            if self.flat[p].get().is_some() || chain.len() > self.entries.len() {
                break;
            }
            chain.push(p);
            cur = p;
        }
        for &t in chain.iter().rev() {
            let base = match self.parent[t] {
                Parent::Type(p) => self.flat[p].get().map(|f| (**f).clone()),
                _ => None,
            };
            let flat = self.extend(base.unwrap_or_default(), t);
            let _ = self.flat[t].set(Rc::new(flat));
        }
        self.flat[id].get().map(Rc::clone).unwrap_or_default()
    }

    fn extend(&self, mut f: Flat, id: TypeId) -> Flat {
        let Entry { def, file } = &self.entries[id];
        let file = *file;
        f.ancestors.insert(0, id);
        if let Parent::Primitive(p) = self.parent[id] {
            f.base = Some(p);
        }
        merge_props(&mut f.properties, &def.properties, file);
        merge_props(&mut f.attributes, &def.attributes, file);
        for r in &def.requirements {
            f.requirements.insert(r.name.clone(), (Arc::clone(r), file));
        }
        for c in &def.capabilities {
            let merged = match f.capabilities.get(&c.name) {
                Some((parent, _)) if c.ty.is_none() => Arc::new(CapDef {
                    ty: parent.ty.clone(),
                    ..(**c).clone()
                }),
                _ => Arc::clone(c),
            };
            f.capabilities.insert(c.name.clone(), (merged, file));
        }
        for i in &def.interfaces {
            let slot = f.interfaces.entry(i.name.clone()).or_default();
            if let Some(t) = &i.ty {
                slot.ty = Some((t.clone(), file));
            }
            for op in &i.operations {
                slot.operations.insert(op.name.clone(), (op.clone(), file));
            }
        }
        for a in &def.artifacts {
            f.artifacts.insert(a.name.clone(), (Arc::clone(a), file));
        }
        for op in &def.operations {
            f.operations.insert(op.name.clone(), (Arc::clone(op), file));
        }
        f.constraints
            .extend(def.constraints.iter().map(|c| (c.clone(), file)));
        if let Some(s) = &def.entry_schema {
            f.entry_schema = Some((s.clone(), file));
        }
        if let Some(s) = &def.key_schema {
            f.key_schema = Some((s.clone(), file));
        }
        if !def.valid_types.is_empty() {
            f.valid_types = def.valid_types.iter().map(|v| (v.clone(), file)).collect();
        }
        if !def.file_ext.is_empty() {
            f.file_ext = def.file_ext.clone();
        }
        f
    }

    /// The flattened properties of capability `cap` of a node type: the capability type's
    /// properties refined by the capability definition.
    pub fn capability_properties(
        &self,
        cap: &CapDef,
        cap_file: usize,
    ) -> IndexMap<String, FlatProp> {
        let mut props = IndexMap::new();
        if let Some(t) = &cap.ty
            && let Some(id) = self.lookup(&t.name, Kind::Capability, cap_file)
        {
            props = self.flat(id).properties.clone();
        }
        merge_props(&mut props, &cap.properties, cap_file);
        props
    }
}

/// True for the ETSI SOL001 type files (bundled, or a package's copy).
fn is_etsi_file(f: &LoadedFile) -> bool {
    f.bundled_version.is_some()
        || f.unit
            .template_name
            .as_deref()
            .is_some_and(|n| n.starts_with("etsi_nfv_sol001_"))
        || crate::imports::is_etsi_file_name(f.display.rsplit('/').next().unwrap_or_default())
}

/// Adds `defs` over `into`: a new name is appended, a known one is refined (what the refinement
/// leaves out is inherited).
pub(crate) fn merge_props(
    into: &mut IndexMap<String, FlatProp>,
    defs: &[Arc<PropDef>],
    file: usize,
) {
    for d in defs {
        let merged = match into.get(&d.name) {
            Some(parent) if needs_merge(d) => FlatProp {
                def: Arc::new(refine(&parent.def, d)),
                file: if d.schema.as_ref().is_some_and(|s| !s.ty.name.is_empty()) {
                    file
                } else {
                    parent.file
                },
            },
            _ => FlatProp {
                def: Arc::clone(d),
                file,
            },
        };
        into.insert(d.name.clone(), merged);
    }
}

fn needs_merge(d: &PropDef) -> bool {
    d.schema.as_ref().is_none_or(|s| s.ty.name.is_empty())
        || d.required.is_none()
        || d.default.is_none()
}

fn refine(parent: &PropDef, child: &PropDef) -> PropDef {
    let schema = match (&parent.schema, &child.schema) {
        (Some(p), Some(c)) if c.ty.name.is_empty() => Some(Schema {
            ty: p.ty.clone(),
            entry: c.entry.clone().or_else(|| p.entry.clone()),
            key: c.key.clone().or_else(|| p.key.clone()),
            constraints: if c.constraints.is_empty() {
                p.constraints.clone()
            } else {
                c.constraints.clone()
            },
        }),
        (_, Some(c)) => Some(c.clone()),
        (p, None) => p.clone(),
    };
    PropDef {
        name: child.name.clone(),
        pos: child.pos,
        schema,
        required: child.required.or(parent.required),
        default: child.default.clone().or_else(|| parent.default.clone()),
        value: child.value.clone().or_else(|| parent.value.clone()),
    }
}
