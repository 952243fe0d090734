//! VNF instances: documents with their indexed columns, and the index of the VIMs each uses.

use std::collections::BTreeSet;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;
use vnfm_types::{VimId, VnfInstance, VnfInstanceId};

use super::{
    Arg, Col, Dialect, SqlConn, columns, expect_version, from_json, limit_clause, locked_version,
    now_ms, placeholders, probe_size, push_scope, stale, texts, to_json,
};
use crate::sql::chain::Chain;
use crate::sql::search::{DocumentSearch, searched_page};
use crate::sql::{op_occs, outbox};
use vnfm_store::{Conflict, StoreError};
use vnfm_store::{InstanceQuery, NameFilter, Page, Version, enum_str};

const INSTANCE: &str = "VNF instance";

/// Inserts a new instance of `project` at [`Version::FIRST`] with its VIM index and creation
/// notifications.
pub(crate) async fn create<C: SqlConn>(
    tx: &mut C,
    instance: &EncodedInstance,
    project: Option<&str>,
    notify: &[outbox::EncodedOutboxRow],
) -> Result<Version, StoreError> {
    let now = now_ms();
    let done = tx
        .execute(
            "INSERT INTO vnf_instances (id, version, vnfd_id, vnf_provider, \
             vnf_product_name, instantiation_state, vnf_instance_name, doc, \
             default_view, created_at, updated_at, project) \
             VALUES ($1, 1, $2, $3, $4, $5, $6, $7, $10, $8, $8, $9) \
             ON CONFLICT (id) DO NOTHING",
            &[
                instance.id.as_str().into(),
                instance.vnfd_id.as_str().into(),
                instance.provider.as_str().into(),
                instance.product.as_str().into(),
                instance.state.as_str().into(),
                instance.name.as_deref().into(),
                instance.doc.as_str().into(),
                now.into(),
                project.into(),
                instance.default_view.as_str().into(),
            ],
        )
        .await?;
    if done == 0 {
        return Err(StoreError::Conflict(Conflict::AlreadyExists {
            kind: INSTANCE,
            id: instance.id.clone(),
        }));
    }
    write_vims(tx, &instance.id, &instance.vims, true).await?;
    outbox::insert(tx, notify).await?;
    Ok(Version::FIRST)
}

/// The instance `id` and its version.
pub(crate) async fn get<C: SqlConn>(
    conn: &mut C,
    id: &str,
) -> Result<Option<(VnfInstance, Version)>, StoreError> {
    let Some(row) = conn
        .row(
            "SELECT doc, version FROM vnf_instances WHERE id = $1",
            &[id.into()],
            &[Col::Text, Col::Int],
        )
        .await?
    else {
        return Ok(None);
    };
    let [doc, version] = columns(row)?;
    Ok(Some((
        from_json(INSTANCE, id, &doc.text()?)?,
        Version(version.int()?),
    )))
}

/// Compare-and-swap of an instance document, its indexed columns and its VIM index.
pub(crate) async fn update<C: SqlConn>(
    tx: &mut C,
    instance: &EncodedInstance,
    expected: Version,
) -> Result<Version, StoreError> {
    match C::DIALECT {
        Dialect::Sqlite => update_changed(tx, instance, expected).await,
        Dialect::Postgres => update_at_once(tx, instance, expected).await,
    }
}

/// An instance as it is written: its document, indexed columns and VIM ids, encoded on the
/// caller's task before the write, so that a single writer (SQLite's) spends its time on SQL.
#[derive(Debug)]
pub(crate) struct EncodedInstance {
    id: String,
    doc: String,
    /// `doc` without the members a list leaves out when the request selects nothing
    /// ([`default_view_text`]).
    default_view: String,
    vnfd_id: String,
    provider: String,
    product: String,
    state: String,
    name: Option<String>,
    /// The VIM ids it uses ([`vim_ids`]), distinct and sorted.
    vims: BTreeSet<String>,
    /// `vims` as a JSON array, for PostgreSQL's `jsonb_array_elements_text`.
    vims_json: String,
}

impl EncodedInstance {
    /// `instance`, encoded.
    pub(crate) fn of(instance: &VnfInstance) -> Result<Self, StoreError> {
        let vims: BTreeSet<String> = vim_ids(instance).into_iter().collect();
        let doc = to_json(INSTANCE, instance)?;
        Ok(Self {
            id: instance.id.0.clone(),
            default_view: default_view_text(&doc)?,
            doc,
            vnfd_id: instance.vnfd_id.as_str().to_owned(),
            provider: instance.vnf_provider.clone(),
            product: instance.vnf_product_name.clone(),
            state: enum_str(&instance.instantiation_state),
            name: instance.vnf_instance_name.clone(),
            vims_json: to_json("VIM ids", &vims)?,
            vims,
        })
    }

    /// The instance's id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }
}

/// Adds [`update`] to `chain` (PostgreSQL): `instance_moved` holds the new version when
/// `expected` matched and nothing otherwise. Every indexed column is set (PostgreSQL leaves
/// the index entries of a column whose value did not change alone), and the VIM index is
/// brought to the document's VIMs by the chain's own `DELETE` and `INSERT`, which read the
/// updated row: they run only when the version matched, after the row is locked (as every
/// other writer of the instance locks it first). With `gate`, the name of an expression of
/// the chain, the update is made only when that expression has a row: a statement that commits
/// by itself writes the instance only when its other writes happen too.
pub(crate) fn update_in<'a>(
    chain: &mut Chain<'a>,
    instance: &'a EncodedInstance,
    expected: Version,
    gate: Option<&str>,
) {
    let id = instance.id.as_str();
    let gated = gate
        .map(|gate| format!(" AND EXISTS (SELECT 1 FROM {gate})"))
        .unwrap_or_default();
    chain.push(
        "instance_vims_wanted",
        "SELECT value AS vim_id FROM jsonb_array_elements_text($1::jsonb)",
        &[instance.vims_json.as_str().into()],
    );
    chain.push(
        "instance_moved",
        &format!(
            "UPDATE vnf_instances SET version = version + 1, doc = $3, default_view = $10, \
             updated_at = $4, vnfd_id = $5, vnf_provider = $6, vnf_product_name = $7, \
             instantiation_state = $8, vnf_instance_name = $9 \
             WHERE id = $1 AND version = $2{gated} RETURNING version"
        ),
        &[
            id.into(),
            expected.0.into(),
            instance.doc.as_str().into(),
            now_ms().into(),
            instance.vnfd_id.as_str().into(),
            instance.provider.as_str().into(),
            instance.product.as_str().into(),
            instance.state.as_str().into(),
            instance.name.as_deref().into(),
            instance.default_view.as_str().into(),
        ],
    );
    chain.push(
        "instance_vims_gone",
        "DELETE FROM instance_vims WHERE instance_id = $1 \
         AND EXISTS (SELECT 1 FROM instance_moved) \
         AND vim_id NOT IN (SELECT vim_id FROM instance_vims_wanted)",
        &[id.into()],
    );
    chain.push(
        "instance_vims_added",
        "INSERT INTO instance_vims (vim_id, instance_id) \
         SELECT w.vim_id, $1 FROM instance_vims_wanted w, instance_moved ON CONFLICT DO NOTHING",
        &[id.into()],
    );
}

/// The error of an [`update`] of `id` whose expected version did not match.
pub(crate) async fn stale_update<C: SqlConn>(
    tx: &mut C,
    id: &str,
    expected: Version,
) -> StoreError {
    match locked_version(tx, "vnf_instances", id).await {
        Ok(found) => stale(INSTANCE, id, expected, found),
        Err(e) => e,
    }
}

/// [`update`] in one statement (PostgreSQL, where each statement is a round trip to the
/// server), as [`update_in`] writes it.
async fn update_at_once<C: SqlConn>(
    tx: &mut C,
    instance: &EncodedInstance,
    expected: Version,
) -> Result<Version, StoreError> {
    let mut chain = Chain::new();
    update_in(&mut chain, instance, expected, None);
    let (sql, args) = chain.finish("SELECT version FROM instance_moved");
    let Some(row) = tx.row(&sql, &args, &[Col::Int]).await? else {
        return Err(stale_update(tx, &instance.id, expected).await);
    };
    let [version] = columns(row)?;
    Ok(Version(version.int()?))
}

/// [`update`] on SQLite. The indexed columns are written only when they change (an `UPDATE`
/// rewrites the index entries of every column it sets, changed or not, and each rewritten
/// entry dirties a page the commit writes out).
async fn update_changed<C: SqlConn>(
    tx: &mut C,
    instance: &EncodedInstance,
    expected: Version,
) -> Result<Version, StoreError> {
    let id = instance.id.as_str();
    let row = tx
        .row(
            "UPDATE vnf_instances SET version = version + 1, doc = $3, \
             default_view = $5, updated_at = $4 \
             WHERE id = $1 AND version = $2 RETURNING version, vnfd_id, vnf_provider, \
             vnf_product_name, instantiation_state, vnf_instance_name",
            &[
                id.into(),
                expected.0.into(),
                instance.doc.as_str().into(),
                now_ms().into(),
                instance.default_view.as_str().into(),
            ],
            &[
                Col::Int,
                Col::Text,
                Col::Text,
                Col::Text,
                Col::Text,
                Col::OptText,
            ],
        )
        .await?;
    let Some(row) = row else {
        return Err(stale_update(tx, id, expected).await);
    };
    let [version, vnfd_id, provider, product, state, name] = columns(row)?;
    let changes: [(&str, bool, Arg<'_>); 5] = [
        (
            "UPDATE vnf_instances SET vnfd_id = $2 WHERE id = $1",
            vnfd_id.text()? != instance.vnfd_id,
            instance.vnfd_id.as_str().into(),
        ),
        (
            "UPDATE vnf_instances SET vnf_provider = $2 WHERE id = $1",
            provider.text()? != instance.provider,
            instance.provider.as_str().into(),
        ),
        (
            "UPDATE vnf_instances SET vnf_product_name = $2 WHERE id = $1",
            product.text()? != instance.product,
            instance.product.as_str().into(),
        ),
        (
            "UPDATE vnf_instances SET instantiation_state = $2 WHERE id = $1",
            state.text()? != instance.state,
            instance.state.as_str().into(),
        ),
        (
            "UPDATE vnf_instances SET vnf_instance_name = $2 WHERE id = $1",
            name.opt_text()? != instance.name,
            instance.name.as_deref().into(),
        ),
    ];
    for (sql, changed, value) in changes {
        if changed {
            tx.execute(sql, &[id.into(), value]).await?;
        }
    }
    write_vims(tx, id, &instance.vims, false).await?;
    Ok(Version(version.int()?))
}

/// Deletes the instance at `expected` unless an occurrence holds it; enqueues `notify`.
pub(crate) async fn delete<C: SqlConn>(
    tx: &mut C,
    id: &str,
    expected: Version,
    notify: &[outbox::EncodedOutboxRow],
) -> Result<(), StoreError> {
    let found = locked_version(tx, "vnf_instances", id).await?;
    expect_version(INSTANCE, id, expected, found)?;
    if let Some((op_occ_id, state)) = op_occs::holder(tx, id).await? {
        return Err(StoreError::Conflict(Conflict::InstanceBusy {
            instance_id: id.to_owned(),
            op_occ_id,
            state,
        }));
    }
    tx.execute(
        "DELETE FROM instance_vims WHERE instance_id = $1",
        &[id.into()],
    )
    .await?;
    tx.execute(
        "DELETE FROM vnf_indicators WHERE instance_id = $1",
        &[id.into()],
    )
    .await?;
    tx.execute("DELETE FROM vnf_instances WHERE id = $1", &[id.into()])
        .await?;
    outbox::insert(tx, notify).await
}

/// The default view of the document `doc` (compact JSON text of an object, as [`to_json`]
/// writes it): its top-level members but those of [`DEFAULT_EXCLUDED`], in their order and as
/// they are written (as SQLite's `json_remove` wrote it). The members' values are scanned as
/// raw text, not built into values and written again; the database stores the text it is
/// given. (PostgreSQL computed it before, parsing each document written into `jsonb` and
/// writing it out again: 3 to 4 % of its CPU in a lifecycle cycle, see docs/performance.md.)
fn default_view_text(doc: &str) -> Result<String, StoreError> {
    let members: Members<'_> = serde_json::from_str(doc)
        .map_err(|e| StoreError::Backend(format!("{INSTANCE} document: {e}")))?;
    let mut view = String::with_capacity(doc.len().min(1024));
    view.push('{');
    for (name, value) in members.0 {
        if DEFAULT_EXCLUDED.contains(&name.as_str()) {
            continue;
        }
        if view.len() > 1 {
            view.push(',');
        }
        // A string is always written.
        view.push_str(&serde_json::to_string(&name).unwrap_or_default());
        view.push(':');
        view.push_str(value.get());
    }
    view.push('}');
    Ok(view)
}

/// The top-level members of a JSON object, each value as its text.
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Object;
        impl<'de> Visitor<'de> for Object {
            type Value = Members<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(16));
                while let Some(member) = map.next_entry::<String, &'de RawValue>()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(Object)
    }
}

/// The members an instance's default view leaves out: the default exclusions of SOL003's
/// `VnfInstance` list, all of them top-level members.
const DEFAULT_EXCLUDED: &[&str] = vnfm_sol013::defaults::v2::VNF_INSTANCE_EXCLUDED;

/// One page of the instances matching `query`, ordered by id.
pub(crate) async fn page_of<C: SqlConn>(
    conn: &mut C,
    query: &InstanceQuery,
) -> Result<Page<VnfInstance>, StoreError> {
    matching(conn, query, "doc").await?.page(
        |(id, doc)| from_json(INSTANCE, &id, &doc),
        |i: &VnfInstance| i.id.0.clone(),
    )
}

/// [`page_of`] with each instance as its JSON document.
pub(crate) async fn documents_of<C: SqlConn>(
    conn: &mut C,
    query: &InstanceQuery,
) -> Result<Page<Value>, StoreError> {
    let page = matching(conn, query, "doc").await?.page(
        |(id, doc)| Ok((from_json::<Value>(INSTANCE, &id, &doc)?, id)),
        |(_, id)| id.clone(),
    )?;
    Ok(Page {
        items: page.items.into_iter().map(|(doc, _)| doc).collect(),
        next: page.next,
    })
}

/// [`page_of`] with each instance as the JSON text of its default view (its document without
/// the members a list leaves out by default), as stored: nothing is parsed.
pub(crate) async fn default_views_of<C: SqlConn>(
    conn: &mut C,
    query: &InstanceQuery,
) -> Result<Page<String>, StoreError> {
    let page = matching(conn, query, "default_view")
        .await?
        .page(Ok, |(id, _)| id.clone())?;
    Ok(Page {
        items: page.items.into_iter().map(|(_, view)| view).collect(),
        next: page.next,
    })
}

/// The rows of one page of `query`, as [`matching`] read them.
struct Matching {
    /// `(id, text)`, one more than the page size when a next page exists.
    rows: Vec<(String, String)>,
    /// The page size.
    limit: i64,
    /// The last row searched when the search stopped at [`InstanceQuery::scan_limit`]
    /// (`None`: it reached the end).
    searched_to: Option<String>,
}

impl Matching {
    /// The page of the rows, each made an item by `item`; it ends early, at the last row
    /// searched, when the search stopped at its bound.
    fn page<T>(
        self,
        item: impl Fn((String, String)) -> Result<T, StoreError>,
        key: impl Fn(&T) -> String,
    ) -> Result<Page<T>, StoreError> {
        let items = self
            .rows
            .into_iter()
            .map(item)
            .collect::<Result<Vec<T>, StoreError>>()?;
        Ok(searched_page(items, self.limit, key, self.searched_to))
    }
}

/// The rows of one page of `query`; `text` is the column read (`doc` or `default_view`).
/// Every filter is a condition on an indexed column; a name substring is looked for in the
/// name index (a far smaller scan than the documents), and only the matching rows' documents
/// are read. Strings the documents must hold are searched for in the rows the other
/// conditions leave, at most [`InstanceQuery::scan_limit`] of them.
async fn matching<C: SqlConn>(
    conn: &mut C,
    query: &InstanceQuery,
    text: &str,
) -> Result<Matching, StoreError> {
    let (limit, probe) = probe_size(query.limit);
    let nothing = Matching {
        rows: Vec::new(),
        limit,
        searched_to: None,
    };
    if query.ids.as_ref().is_some_and(Vec::is_empty) {
        return Ok(nothing);
    }
    let state = query.instantiation_state.as_ref().map(enum_str);
    let like_pattern = match &query.name {
        Some(NameFilter::Contains(n)) => contains_pattern(n),
        _ => String::new(),
    };
    // Made before `args`, which borrows it.
    let search = DocumentSearch::new(&query.document_strings, query.scan_limit);
    // The conditions on columns, shared by the search's bound and the page.
    let mut conds = String::from("1 = 1");
    let mut args: Vec<Arg<'_>> = Vec::new();
    if let Some(v) = &query.vnfd_id {
        push_eq("vnfd_id", v.as_str().into(), &mut conds, &mut args);
    }
    if let Some(v) = &query.vnf_provider {
        push_eq("vnf_provider", v.as_str().into(), &mut conds, &mut args);
    }
    if let Some(v) = &query.vnf_product_name {
        push_eq("vnf_product_name", v.as_str().into(), &mut conds, &mut args);
    }
    if let Some(v) = &state {
        push_eq(
            "instantiation_state",
            v.as_str().into(),
            &mut conds,
            &mut args,
        );
    }
    match &query.name {
        Some(NameFilter::Exact(n)) => push_eq(
            "vnf_instance_name",
            n.as_str().into(),
            &mut conds,
            &mut args,
        ),
        Some(NameFilter::Contains(n)) => match C::DIALECT {
            // A scan of the covering name index (names and ids), not of the documents.
            Dialect::Sqlite => {
                args.push(n.as_str().into());
                conds.push_str(&format!(
                    " AND id IN (SELECT id FROM vnf_instances INDEXED BY vnf_instances_name \
                     WHERE instr(vnf_instance_name, ${}) > 0)",
                    args.len()
                ));
            }
            // The trigram index answers LIKE '%...%'.
            Dialect::Postgres => {
                args.push(like_pattern.as_str().into());
                conds.push_str(&format!(
                    " AND vnf_instance_name LIKE ${} ESCAPE '\\'",
                    args.len()
                ));
            }
        },
        None => {}
    }
    if let Some(n) = &query.name_not {
        // `<>` leaves out rows without a name, as `neq` does.
        args.push(n.as_str().into());
        conds.push_str(&format!(" AND vnf_instance_name <> ${}", args.len()));
    }
    if let Some(ids) = &query.ids {
        conds.push_str(&format!(
            " AND id IN ({})",
            placeholders(args.len() + 1, ids.len())
        ));
        args.extend(ids.iter().map(|i| Arg::from(i.as_str())));
    }
    push_scope(&query.scope, &mut conds, &mut args);
    if let Some(after) = &query.after {
        args.push(after.as_str().into());
        conds.push_str(&format!(" AND id > ${}", args.len()));
    }
    let mut sql = format!("SELECT id, {text} FROM vnf_instances WHERE {conds}");
    let searched_to = search
        .push(conn, "vnf_instances", &conds, &mut sql, &mut args)
        .await?;
    sql.push_str(" ORDER BY id");
    sql.push_str(&limit_clause(probe));
    let rows = conn
        .rows(&sql, &args, &[Col::Text, Col::Text])
        .await?
        .into_iter()
        .map(|row| {
            let [id, doc] = columns(row)?;
            Ok((id.text()?, doc.text()?))
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    Ok(Matching {
        rows,
        limit,
        searched_to,
    })
}

/// The `LIKE` pattern (escape character `\`) of the names containing `part`.
fn contains_pattern(part: &str) -> String {
    let mut pattern = String::with_capacity(part.len() + 2);
    pattern.push('%');
    for c in part.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// Appends `AND column = $n` with `value` as argument `n`.
fn push_eq<'a>(column: &str, value: Arg<'a>, sql: &mut String, args: &mut Vec<Arg<'a>>) {
    args.push(value);
    sql.push_str(&format!(" AND {column} = ${}", args.len()));
}

/// The instances using the VIM, ordered by id.
pub(crate) async fn using_vim<C: SqlConn>(
    conn: &mut C,
    vim_id: &str,
) -> Result<Vec<VnfInstanceId>, StoreError> {
    Ok(texts(
        conn,
        "SELECT instance_id FROM instance_vims WHERE vim_id = $1 ORDER BY instance_id",
        &[vim_id.into()],
    )
    .await?
    .into_iter()
    .map(VnfInstanceId)
    .collect())
}

/// Every `(registered VIM, instance using it)` pair, in byte order.
pub(crate) async fn vim_usage<C: SqlConn>(
    conn: &mut C,
) -> Result<Vec<(VimId, VnfInstanceId)>, StoreError> {
    // Two plain reads instead of a join: the index's vim_id and vims.id have different
    // collations on PostgreSQL.
    let registered: BTreeSet<String> = texts(conn, "SELECT id FROM vims", &[])
        .await?
        .into_iter()
        .collect();
    let mut out = Vec::new();
    for row in conn
        .rows(
            "SELECT vim_id, instance_id FROM instance_vims",
            &[],
            &[Col::Text, Col::Text],
        )
        .await?
    {
        let [vim, instance] = columns(row)?;
        let vim = vim.text()?;
        if registered.contains(&vim) {
            out.push((VimId(vim), VnfInstanceId(instance.text()?)));
        }
    }
    out.sort();
    Ok(out)
}

/// Brings the VIM index rows of the instance `id` in line with the VIMs its document uses,
/// `wanted` (`fresh`: it has none yet). Rows that stay are not rewritten.
async fn write_vims<C: SqlConn>(
    tx: &mut C,
    id: &str,
    wanted: &BTreeSet<String>,
    fresh: bool,
) -> Result<(), StoreError> {
    let current: BTreeSet<String> = if fresh {
        BTreeSet::new()
    } else {
        texts(
            tx,
            "SELECT vim_id FROM instance_vims WHERE instance_id = $1",
            &[id.into()],
        )
        .await?
        .into_iter()
        .collect()
    };
    for gone in current.difference(wanted) {
        tx.execute(
            "DELETE FROM instance_vims WHERE instance_id = $1 AND vim_id = $2",
            &[id.into(), gone.into()],
        )
        .await?;
    }
    for new in wanted.difference(&current) {
        tx.execute(
            "INSERT INTO instance_vims (vim_id, instance_id) VALUES ($1, $2)",
            &[new.into(), id.into()],
        )
        .await?;
    }
    Ok(())
}

/// The distinct VIM ids an instance uses: those its `vimConnectionInfo` entries reference, and
/// those its resources live on. A resource handle's `vimConnectionId` names an entry of
/// `vimConnectionInfo` (and so a VIM already counted); one that names no entry is taken to name
/// the VIM itself, so a resource whose connection entry is gone still pins its VIM.
pub(crate) fn vim_ids(instance: &VnfInstance) -> Vec<String> {
    let connections = instance.vim_connection_info.as_ref();
    let mut ids: Vec<String> = connections
        .iter()
        .flat_map(|m| m.values())
        .filter_map(|v| v.vim_id.as_ref().map(|id| id.0.clone()))
        .collect();
    if let Some(info) = &instance.instantiated_vnf_info {
        let handles = info
            .vnfc_resource_info
            .iter()
            .flatten()
            .map(|r| &r.compute_resource)
            .chain(
                info.vnf_virtual_link_resource_info
                    .iter()
                    .flatten()
                    .map(|r| &r.network_resource),
            )
            .chain(
                info.virtual_storage_resource_info
                    .iter()
                    .flatten()
                    .map(|r| &r.storage_resource),
            )
            .chain(
                info.ext_virtual_link_info
                    .iter()
                    .flatten()
                    .map(|r| &r.resource_handle),
            )
            .chain(
                info.ext_managed_virtual_link_info
                    .iter()
                    .flatten()
                    .map(|r| &r.network_resource),
            );
        for h in handles {
            let Some(conn) = h.vim_connection_id.as_deref() else {
                continue;
            };
            if connections.is_some_and(|m| m.contains_key(conn)) {
                continue;
            }
            ids.push(conn.to_owned());
        }
    }
    ids.sort();
    ids.dedup();
    ids
}

#[cfg(test)]
mod tests {
    use super::{DEFAULT_EXCLUDED, contains_pattern, default_view_text};

    #[test]
    fn the_migration_fills_old_rows_with_the_same_view() {
        for sql in [
            include_str!("../../migrations/sqlite/0010_instance_default_view.sql"),
            include_str!("../../migrations/postgres/0010_instance_default_view.sql"),
        ] {
            let backfill = &sql[sql.find("UPDATE").expect("backfill")..];
            for m in DEFAULT_EXCLUDED {
                assert!(
                    backfill.contains(&format!("'$.{m}'")) || backfill.contains(&format!("'{m}'")),
                    "{m} missing from {backfill}"
                );
            }
            assert_eq!(backfill.matches('\'').count(), 2 * DEFAULT_EXCLUDED.len());
        }
    }

    #[test]
    fn the_default_view_is_the_document_without_the_excluded_members() {
        let doc = r#"{"id":"a","vimConnectionInfo":{"v":{"x":[1,{"y":"}"}]}},"instantiationState":"INSTANTIATED","instantiatedVnfInfo":{"flavourId":"f"},"vnf\"name":"q","metadata":{},"extensions":null,"vnfConfigurableProperties":{},"_links":{"self":{"href":"/x"}}}"#;
        let view = default_view_text(doc).unwrap();
        assert_eq!(
            view,
            r#"{"id":"a","instantiationState":"INSTANTIATED","vnf\"name":"q","_links":{"self":{"href":"/x"}}}"#
        );
        let mut expected: serde_json::Value = serde_json::from_str(doc).unwrap();
        for m in DEFAULT_EXCLUDED {
            expected.as_object_mut().unwrap().remove(*m);
        }
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&view).unwrap(),
            expected
        );
        assert_eq!(default_view_text("{}").unwrap(), "{}");
        assert!(default_view_text("[1]").is_err());
    }

    #[test]
    fn like_patterns_escape_wildcards() {
        assert_eq!(contains_pattern("a_b%c\\d"), "%a\\_b\\%c\\\\d%");
        assert_eq!(contains_pattern(""), "%%");
    }
}
