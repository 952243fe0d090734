//! The request bodies of `vnfm vnf` tasks: the `--request` file's members, overridden by
//! the flags for the common fields, with `--param` merged into `additionalParams`.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::super::Ctx;
use super::super::error::ClientError;
use super::super::output::s;
use super::{
    ChangeFlavourArgs, ChangePkgArgs, CreateArgs, HealArgs, InstantiateArgs, KeyValue, ModifyArgs,
    OperateArgs, OperateState, ScaleArgs, ScaleKind, ScaleToLevelArgs, TaskArgs, TerminateArgs,
    TerminationKind, key_values, load_request,
};

/// The members of the request file at `path` (or an empty object).
fn request_members(path: Option<&Path>) -> Result<Map<String, Value>, ClientError> {
    match path {
        Some(p) => load_request(p),
        None => Ok(Map::new()),
    }
}

/// The task's request file members (or an empty object).
fn base(task: &TaskArgs) -> Result<Map<String, Value>, ClientError> {
    request_members(task.request.as_deref())
}

/// CreateVnfRequest.
pub(super) fn create_body(a: &CreateArgs) -> Result<Map<String, Value>, ClientError> {
    let mut body = request_members(a.request.as_deref())?;
    set(&mut body, "vnfdId", a.vnfd_id.clone().map(Value::String));
    set(
        &mut body,
        "vnfInstanceName",
        a.name.clone().map(Value::String),
    );
    set(
        &mut body,
        "vnfInstanceDescription",
        a.description.clone().map(Value::String),
    );
    if !a.metadata.is_empty() {
        body.insert("metadata".into(), key_values(&a.metadata));
    }
    require(&body, "vnfdId", "--vnfd-id", "create")?;
    Ok(body)
}

fn set(body: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        body.insert(key.to_owned(), v);
    }
}

fn merge_params(body: &mut Map<String, Value>, params: &[KeyValue]) {
    if params.is_empty() {
        return;
    }
    let entry = body
        .entry("additionalParams")
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    if let Value::Object(m) = entry {
        for kv in params {
            m.insert(kv.key.clone(), kv.value.clone());
        }
    }
}

fn require(
    body: &Map<String, Value>,
    key: &str,
    flag: &str,
    task: &str,
) -> Result<(), ClientError> {
    if body.contains_key(key) {
        Ok(())
    } else {
        Err(ClientError::Usage(format!(
            "{task} needs {key}: give {flag} or put it in the --request file"
        )))
    }
}

/// Splits `KEY=VALUE` or `VALUE` (key generated from `prefix` and the position).
fn keyed(item: &str, prefix: &str, index: usize) -> (String, String) {
    match item.split_once('=') {
        Some((k, v)) if !k.is_empty() => (k.to_owned(), v.to_owned()),
        _ => (format!("{prefix}{}", index + 1), item.to_owned()),
    }
}

pub(super) async fn instantiate_body(
    ctx: &Ctx,
    a: &InstantiateArgs,
) -> Result<Map<String, Value>, ClientError> {
    let mut body = base(&a.task)?;
    set(&mut body, "flavourId", a.flavour.clone().map(Value::String));
    set(
        &mut body,
        "instantiationLevelId",
        a.level.clone().map(Value::String),
    );
    if !a.vims.is_empty() || !a.vim_types.is_empty() {
        let mut vims = match body.remove("vimConnectionInfo") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        let mut n = vims.len();
        for item in &a.vims {
            let (key, vim_id) = keyed(item, "vim", n);
            n += 1;
            let vim = ctx
                .api()?
                .get(&format!("/vnfm/v1/vims/{}", super::super::seg(&vim_id)))
                .await?;
            vims.insert(
                key,
                json!({"vimId": vim_id, "vimType": s(&vim, "/vimType")}),
            );
        }
        for item in &a.vim_types {
            let (key, vim_type) = keyed(item, "vim", n);
            n += 1;
            vims.insert(key, json!({"vimType": vim_type}));
        }
        body.insert("vimConnectionInfo".into(), Value::Object(vims));
    }
    merge_params(&mut body, &a.task.params);
    require(&body, "flavourId", "--flavour", "instantiate")?;
    Ok(body)
}

pub(super) fn terminate_body(a: &TerminateArgs) -> Result<Map<String, Value>, ClientError> {
    let mut body = base(&a.task)?;
    let kind = match (a.kind, a.graceful_timeout) {
        (Some(TerminationKind::Forceful), Some(_)) => {
            return Err(ClientError::Usage(
                "--graceful-timeout applies only to --type graceful".into(),
            ));
        }
        (Some(k), _) => Some(k),
        (None, Some(_)) => Some(TerminationKind::Graceful),
        (None, None) if body.contains_key("terminationType") => None,
        (None, None) => Some(TerminationKind::Forceful),
    };
    set(
        &mut body,
        "terminationType",
        kind.map(|k| {
            Value::String(match k {
                TerminationKind::Forceful => "FORCEFUL".into(),
                TerminationKind::Graceful => "GRACEFUL".into(),
            })
        }),
    );
    set(
        &mut body,
        "gracefulTerminationTimeout",
        a.graceful_timeout.map(Value::from),
    );
    merge_params(&mut body, &a.task.params);
    Ok(body)
}

pub(super) fn heal_body(a: &HealArgs) -> Result<Map<String, Value>, ClientError> {
    let mut body = base(&a.task)?;
    if !a.vnfcs.is_empty() {
        body.insert("vnfcInstanceId".into(), json!(a.vnfcs));
    }
    set(&mut body, "cause", a.cause.clone().map(Value::String));
    merge_params(&mut body, &a.task.params);
    Ok(body)
}

pub(super) fn scale_body(a: &ScaleArgs) -> Result<Map<String, Value>, ClientError> {
    let mut body = base(&a.task)?;
    let kind = match a.kind {
        Some(k) => Some(k),
        None if body.contains_key("type") => None,
        None => Some(ScaleKind::Out),
    };
    set(
        &mut body,
        "type",
        kind.map(|k| {
            Value::String(match k {
                ScaleKind::Out => "SCALE_OUT".into(),
                ScaleKind::In => "SCALE_IN".into(),
            })
        }),
    );
    set(&mut body, "aspectId", a.aspect.clone().map(Value::String));
    set(&mut body, "numberOfSteps", a.steps.map(Value::from));
    merge_params(&mut body, &a.task.params);
    require(&body, "aspectId", "--aspect", "scale")?;
    Ok(body)
}

pub(super) fn scale_to_level_body(a: &ScaleToLevelArgs) -> Result<Map<String, Value>, ClientError> {
    let mut body = base(&a.task)?;
    set(
        &mut body,
        "instantiationLevelId",
        a.level.clone().map(Value::String),
    );
    if !a.aspect_levels.is_empty() {
        let mut info = Vec::new();
        for kv in &a.aspect_levels {
            let Some(level) = kv.value.as_u64() else {
                return Err(ClientError::Usage(format!(
                    "--aspect-level {}=...: the level must be a non-negative integer",
                    kv.key
                )));
            };
            info.push(json!({"aspectId": kv.key, "scaleLevel": level}));
        }
        body.insert("scaleInfo".into(), Value::Array(info));
    }
    merge_params(&mut body, &a.task.params);
    if !body.contains_key("instantiationLevelId") && !body.contains_key("scaleInfo") {
        return Err(ClientError::Usage(
            "scale-to-level needs --level or --aspect-level (or a --request file)".into(),
        ));
    }
    Ok(body)
}

pub(super) fn change_flavour_body(
    a: &ChangeFlavourArgs,
) -> Result<Map<String, Value>, ClientError> {
    let mut body = base(&a.task)?;
    set(
        &mut body,
        "newFlavourId",
        a.flavour.clone().map(Value::String),
    );
    set(
        &mut body,
        "instantiationLevelId",
        a.level.clone().map(Value::String),
    );
    merge_params(&mut body, &a.task.params);
    require(&body, "newFlavourId", "--flavour", "change-flavour")?;
    Ok(body)
}

pub(super) fn operate_body(a: &OperateArgs) -> Result<Map<String, Value>, ClientError> {
    let mut body = base(&a.task)?;
    set(
        &mut body,
        "changeStateTo",
        a.state.map(|s| {
            Value::String(match s {
                OperateState::Started => "STARTED".into(),
                OperateState::Stopped => "STOPPED".into(),
            })
        }),
    );
    set(
        &mut body,
        "stopType",
        a.stop_type.map(|k| {
            Value::String(match k {
                TerminationKind::Forceful => "FORCEFUL".into(),
                TerminationKind::Graceful => "GRACEFUL".into(),
            })
        }),
    );
    set(
        &mut body,
        "gracefulStopTimeout",
        a.graceful_stop_timeout.map(Value::from),
    );
    if !a.vnfcs.is_empty() {
        body.insert("vnfcInstanceId".into(), json!(a.vnfcs));
    }
    merge_params(&mut body, &a.task.params);
    require(&body, "changeStateTo", "--state", "operate")?;
    Ok(body)
}

pub(super) fn modify_body(a: &ModifyArgs) -> Result<Map<String, Value>, ClientError> {
    let mut body = base(&a.task)?;
    set(
        &mut body,
        "vnfInstanceName",
        a.name.clone().map(Value::String),
    );
    set(
        &mut body,
        "vnfInstanceDescription",
        a.description.clone().map(Value::String),
    );
    set(&mut body, "vnfdId", a.vnfd_id.clone().map(Value::String));
    for (key, kvs) in [("metadata", &a.metadata), ("extensions", &a.extensions)] {
        if kvs.is_empty() {
            continue;
        }
        let entry = body.entry(key).or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = entry {
            for kv in kvs {
                m.insert(kv.key.clone(), kv.value.clone());
            }
        }
    }
    if !a.task.params.is_empty() {
        return Err(ClientError::Usage(
            "modify takes no --param (the request has no additionalParams)".into(),
        ));
    }
    if body.is_empty() {
        return Err(ClientError::Usage(
            "modify needs something to change: --name, --description, --vnfd-id, --metadata, --extension or --request".into(),
        ));
    }
    Ok(body)
}

pub(super) fn change_pkg_body(a: &ChangePkgArgs) -> Result<Map<String, Value>, ClientError> {
    let mut body = base(&a.task)?;
    set(&mut body, "vnfdId", a.vnfd_id.clone().map(Value::String));
    merge_params(&mut body, &a.task.params);
    require(&body, "vnfdId", "--vnfd-id", "change-pkg")?;
    Ok(body)
}

/// ChangeExtVnfConnectivityRequest: from the request file only (its `extVirtualLinks` are
/// too rich for flags).
pub(super) fn change_ext_conn_body(task: &TaskArgs) -> Result<Map<String, Value>, ClientError> {
    let mut body = base(task)?;
    merge_params(&mut body, &task.params);
    require(&body, "extVirtualLinks", "--request", "change-ext-conn")?;
    Ok(body)
}
