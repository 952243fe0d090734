//! `vnfm sub`: LCM notification subscriptions (create, list, show, delete), and the
//! notifications the server gave up delivering to any subscription (`dead`, `redeliver`,
//! `discard`, over `/vnfm/v1/notifications/dead`).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{Map, Value, json};

use super::Ctx;
use super::error::ClientError;
use super::http::Body;
use super::output::{self, Table, fields, s};
use super::vnf::load_request;

/// `vnfm sub ...`.
#[derive(Debug, Subcommand)]
pub enum SubCommand {
    /// Subscribe a callback URI to notifications (the server first checks that a GET on it
    /// answers 204).
    Create(CreateArgs),
    /// List subscriptions.
    List,
    /// Show one subscription.
    Show {
        /// Subscription id.
        id: String,
    },
    /// Delete a subscription.
    Delete {
        /// Subscription id.
        id: String,
    },
    /// List the notifications the server gave up delivering (after retrying them for
    /// `serve --notify-max-age-hours`), oldest first, with the row ids `redeliver` and
    /// `discard` take.
    Dead {
        /// Only those of this subscription.
        #[arg(long, value_name = "ID")]
        subscription: Option<String>,
    },
    /// Send given-up notifications again, once the subscriber is back: each goes back to the
    /// front of its queue (its subscription and VNF instance) and is sent at once.
    Redeliver(DeadArgs),
    /// Discard given-up notifications for good.
    Discard(DeadArgs),
}

/// Which given-up notifications `vnfm sub redeliver|discard` acts on.
#[derive(Debug, Args)]
pub struct DeadArgs {
    /// Row ids (the ID column of `vnfm sub dead`).
    #[arg(
        value_name = "ROW",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub rows: Vec<i64>,
    /// Every given-up notification (of --subscription, when given).
    #[arg(long)]
    pub all: bool,
    /// With --all: only those of this subscription.
    #[arg(long, value_name = "ID", requires = "all")]
    pub subscription: Option<String>,
}

/// The dead-letter list of the server.
const DEAD: &str = "/vnfm/v1/notifications/dead";

/// Every given-up notification (of `subscription`, when given), oldest first.
async fn dead_letters(ctx: &Ctx, subscription: Option<&str>) -> Result<Vec<Value>, ClientError> {
    let mut all = ctx.api()?.list(DEAD, &[]).await?;
    if let Some(sub) = subscription {
        all.retain(|d| d["subscriptionId"] == sub);
    }
    Ok(all)
}

/// What a notification is about, in a few words: its type, operation and state.
fn about(n: &Value) -> String {
    let kind = s(n, "/notificationType");
    let kind = kind
        .strip_suffix("Notification")
        .unwrap_or(&kind)
        .to_owned();
    [kind, s(n, "/operation"), s(n, "/operationState")]
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Redelivers or discards the rows `a` names, one request each, stopping at the first
/// refusal; reports what was done.
async fn act_on_dead(ctx: &Ctx, a: DeadArgs, redeliver: bool) -> Result<(), ClientError> {
    let rows: Vec<i64> = if a.all {
        dead_letters(ctx, a.subscription.as_deref())
            .await?
            .iter()
            .filter_map(|d| d["id"].as_i64())
            .collect()
    } else {
        a.rows
    };
    let (verb, key) = if redeliver {
        ("put back for delivery", "redelivered")
    } else {
        ("discarded", "discarded")
    };
    let mut done = Vec::new();
    for row in &rows {
        let result = if redeliver {
            ctx.api()?
                .call(
                    Method::POST,
                    &format!("{DEAD}/{row}/redeliver"),
                    Body::Empty,
                )
                .await
        } else {
            ctx.api()?
                .call(Method::DELETE, &format!("{DEAD}/{row}"), Body::Empty)
                .await
        };
        if let Err(e) = result {
            if !done.is_empty() {
                eprintln!(
                    "{} of {} given-up notifications {verb}",
                    done.len(),
                    rows.len()
                );
            }
            return Err(e);
        }
        done.push(*row);
    }
    let message = match done.len() {
        0 => "no given-up notification to act on".to_owned(),
        1 => format!("notification {} {verb}", done[0]),
        n => format!("{n} notifications {verb}"),
    };
    ctx.done(&message, json!({ key: done }))
}

/// `vnfm sub create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// `callbackUri`.
    #[arg(long)]
    pub callback: Option<String>,
    /// Only notifications about this VNF instance (repeatable).
    #[arg(long = "vnf", value_name = "ID")]
    pub vnfs: Vec<String>,
    /// Only notifications about instances of this VNFD (repeatable).
    #[arg(long = "vnfd-id", value_name = "ID")]
    pub vnfd_ids: Vec<String>,
    /// Notification type (VnfLcmOperationOccurrenceNotification,
    /// VnfIdentifierCreationNotification, VnfIdentifierDeletionNotification; repeatable).
    #[arg(long = "type", value_name = "TYPE")]
    pub types: Vec<String>,
    /// Operation type, e.g. INSTANTIATE (repeatable).
    #[arg(long = "operation", value_name = "OP")]
    pub operations: Vec<String>,
    /// Operation state, e.g. COMPLETED (repeatable).
    #[arg(long = "state", value_name = "STATE")]
    pub states: Vec<String>,
    /// HTTP Basic user name the server sends to the callback.
    #[arg(long, requires = "basic_password")]
    pub basic_user: Option<String>,
    /// HTTP Basic password the server sends to the callback (stored sealed on the server).
    #[arg(long, requires = "basic_user")]
    pub basic_password: Option<String>,
    /// The request body (JSON or YAML); flags override its members.
    #[arg(long, value_name = "FILE")]
    pub request: Option<PathBuf>,
}

/// The `LccnSubscriptionRequest` for the options.
pub fn request_body(a: &CreateArgs) -> Result<Value, ClientError> {
    let mut body = match &a.request {
        Some(p) => load_request(p)?,
        None => Map::new(),
    };
    if let Some(c) = &a.callback {
        body.insert("callbackUri".into(), Value::String(c.clone()));
    }
    if !body.contains_key("callbackUri") {
        return Err(ClientError::Usage(
            "sub create needs --callback (or callbackUri in the --request file)".into(),
        ));
    }
    let mut filter = match body.remove("filter") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let mut instance = match filter.remove("vnfInstanceSubscriptionFilter") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    if !a.vnfs.is_empty() {
        instance.insert("vnfInstanceIds".into(), json!(a.vnfs));
    }
    if !a.vnfd_ids.is_empty() {
        instance.insert("vnfdIds".into(), json!(a.vnfd_ids));
    }
    if !instance.is_empty() {
        filter.insert(
            "vnfInstanceSubscriptionFilter".into(),
            Value::Object(instance),
        );
    }
    for (key, values) in [
        ("notificationTypes", &a.types),
        ("operationTypes", &a.operations),
        ("operationStates", &a.states),
    ] {
        if !values.is_empty() {
            filter.insert(key.into(), json!(values));
        }
    }
    if !filter.is_empty() {
        body.insert("filter".into(), Value::Object(filter));
    }
    if let (Some(u), Some(p)) = (&a.basic_user, &a.basic_password) {
        body.insert(
            "authentication".into(),
            json!({"authType": ["BASIC"], "paramsBasic": {"userName": u, "password": p}}),
        );
    }
    Ok(Value::Object(body))
}

fn sub_fields(v: &Value) -> String {
    fields(&[
        ("ID", s(v, "/id")),
        ("Callback", s(v, "/callbackUri")),
        ("Filter", output::nested_yaml(v, "/filter")),
        ("Verbosity", s(v, "/verbosity")),
    ])
}

/// Runs a `vnfm sub` command.
pub async fn run(ctx: &Ctx, cmd: SubCommand) -> Result<(), ClientError> {
    match cmd {
        SubCommand::Create(a) => {
            let body = request_body(&a)?;
            let answer = ctx
                .api()?
                .call(Method::POST, "/vnflcm/v2/subscriptions", Body::Json(body))
                .await?;
            if answer.status == reqwest::StatusCode::SEE_OTHER {
                // A subscription with the same callback and filter exists already.
                let location = answer.location().unwrap_or_default().to_owned();
                let existing = ctx.api()?.get(&location).await?;
                eprintln!(
                    "an identical subscription exists already: {}",
                    s(&existing, "/id")
                );
                return output::print(ctx.format, &existing, sub_fields);
            }
            output::print(ctx.format, &answer.body, sub_fields)
        }
        SubCommand::List => {
            let list = Value::Array(ctx.api()?.list("/vnflcm/v2/subscriptions", &[]).await?);
            output::print(ctx.format, &list, |v| {
                let mut t = Table::new(&["ID", "CALLBACK", "FILTER"]);
                for sub in v.as_array().into_iter().flatten() {
                    t.row(vec![
                        s(sub, "/id"),
                        s(sub, "/callbackUri"),
                        output::compact(sub, "/filter"),
                    ]);
                }
                t.render()
            })
        }
        SubCommand::Show { id } => {
            let v = ctx
                .api()?
                .get(&format!("/vnflcm/v2/subscriptions/{}", super::seg(&id)))
                .await?;
            output::print(ctx.format, &v, sub_fields)
        }
        SubCommand::Delete { id } => {
            ctx.api()?
                .call(
                    Method::DELETE,
                    &format!("/vnflcm/v2/subscriptions/{}", super::seg(&id)),
                    Body::Empty,
                )
                .await?;
            ctx.done(
                &format!("subscription {id} deleted"),
                json!({"id": id, "deleted": true}),
            )
        }
        SubCommand::Dead { subscription } => {
            let list = Value::Array(dead_letters(ctx, subscription.as_deref()).await?);
            output::print(ctx.format, &list, |v| {
                let mut t = Table::new(&[
                    "ID",
                    "SUBSCRIPTION",
                    "NOTIFICATION",
                    "ATTEMPTS",
                    "LAST ERROR",
                ]);
                for d in v.as_array().into_iter().flatten() {
                    t.row(vec![
                        s(d, "/id"),
                        s(d, "/subscriptionId"),
                        about(&d["notification"]),
                        s(d, "/attempts"),
                        s(d, "/lastError"),
                    ]);
                }
                t.render()
            })
        }
        SubCommand::Redeliver(a) => act_on_dead(ctx, a, true).await,
        SubCommand::Discard(a) => act_on_dead(ctx, a, false).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_built_from_flags_over_request() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sub.json");
        std::fs::write(
            &file,
            r#"{"callbackUri": "http://old", "filter": {"operationStates": ["FAILED_TEMP"]}}"#,
        )
        .unwrap();
        let a = CreateArgs {
            callback: Some("http://127.0.0.1:1/n".into()),
            vnfs: vec!["v1".into()],
            vnfd_ids: vec![],
            types: vec!["VnfLcmOperationOccurrenceNotification".into()],
            operations: vec![],
            states: vec![],
            basic_user: Some("u".into()),
            basic_password: Some("p".into()),
            request: Some(file),
        };
        assert_eq!(
            request_body(&a).unwrap(),
            json!({"callbackUri": "http://127.0.0.1:1/n",
                   "filter": {"operationStates": ["FAILED_TEMP"],
                              "vnfInstanceSubscriptionFilter": {"vnfInstanceIds": ["v1"]},
                              "notificationTypes": ["VnfLcmOperationOccurrenceNotification"]},
                   "authentication": {"authType": ["BASIC"], "paramsBasic": {"userName": "u", "password": "p"}}})
        );
    }

    #[test]
    fn a_notification_is_summed_up_by_type_operation_and_state() {
        assert_eq!(
            about(
                &json!({"notificationType": "VnfLcmOperationOccurrenceNotification",
                          "operation": "SCALE", "operationState": "STARTING"})
            ),
            "VnfLcmOperationOccurrence SCALE STARTING"
        );
        assert_eq!(
            about(&json!({"notificationType": "VnfPackageChangeNotification"})),
            "VnfPackageChange"
        );
    }

    #[test]
    fn callback_is_required() {
        let a = CreateArgs {
            callback: None,
            vnfs: vec![],
            vnfd_ids: vec![],
            types: vec![],
            operations: vec![],
            states: vec![],
            basic_user: None,
            basic_password: None,
            request: None,
        };
        assert_eq!(request_body(&a).unwrap_err().exit_code(), 2);
    }
}
