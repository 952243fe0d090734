//! `vnfm alarm`: VNF alarms (`/vnffm/v1/alarms`): list with filters, show, acknowledge.

use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{Value, json};

use super::Ctx;
use super::error::ClientError;
use super::http::Body;
use super::output::{self, Table, fields, s};

/// The alarm resources of the server.
const ALARMS: &str = "/vnffm/v1/alarms";

/// `vnfm alarm ...`.
#[derive(Debug, Subcommand)]
pub enum AlarmCommand {
    /// List alarms, open and cleared, newest first.
    List(ListArgs),
    /// Show one alarm.
    Show {
        /// Alarm id.
        id: String,
    },
    /// Acknowledge alarms (`ackState` `ACKNOWLEDGED`).
    Ack {
        /// Alarm ids.
        #[arg(required = true, value_name = "ID")]
        ids: Vec<String>,
    },
}

/// `vnfm alarm list`.
#[derive(Debug, Args, Default)]
pub struct ListArgs {
    /// Only alarms of this VNF instance.
    #[arg(long = "vnf", value_name = "ID")]
    pub vnf: Option<String>,
    /// Only alarms of this severity (CRITICAL, MAJOR, MINOR, WARNING, INDETERMINATE,
    /// CLEARED; repeatable).
    #[arg(long = "severity", value_name = "SEVERITY")]
    pub severities: Vec<String>,
    /// Only alarms not cleared yet.
    #[arg(long)]
    pub open: bool,
    /// Only alarms not acknowledged yet.
    #[arg(long)]
    pub unacknowledged: bool,
    /// A SOL013 attribute filter of the server's own, added to the options above
    /// (e.g. `(eq,eventType,EQUIPMENT_ALARM)`).
    #[arg(long, value_name = "FILTER")]
    pub filter: Option<String>,
}

/// The SOL013 `filter` the options ask for; `None` when they ask for every alarm.
pub fn filter_of(a: &ListArgs) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(vnf) = &a.vnf {
        parts.push(format!("(eq,managedObjectId,{})", quoted(vnf)));
    }
    if !a.severities.is_empty() {
        let values: Vec<String> = a
            .severities
            .iter()
            .map(|v| quoted(&v.to_ascii_uppercase()))
            .collect();
        parts.push(format!("(in,perceivedSeverity,{})", values.join(",")));
    }
    if a.open {
        parts.push("(neq,perceivedSeverity,CLEARED)".to_owned());
    }
    if a.unacknowledged {
        parts.push("(eq,ackState,UNACKNOWLEDGED)".to_owned());
    }
    if let Some(f) = &a.filter {
        parts.push(f.clone());
    }
    (!parts.is_empty()).then(|| parts.join(";"))
}

/// A SOL013 filter value: quoted (with doubled quotes) when it holds a character the filter
/// syntax gives a meaning to.
fn quoted(v: &str) -> String {
    if v.contains([',', ')', '(', '\'', ';']) {
        format!("'{}'", v.replace('\'', "''"))
    } else {
        v.to_owned()
    }
}

fn alarm_fields(a: &Value) -> String {
    fields(&[
        ("id", s(a, "/id")),
        ("VNF instance", s(a, "/managedObjectId")),
        ("VNFCs", vnfcs(a)),
        ("severity", s(a, "/perceivedSeverity")),
        ("acknowledged", s(a, "/ackState")),
        ("event type", s(a, "/eventType")),
        ("fault type", s(a, "/faultType")),
        ("probable cause", s(a, "/probableCause")),
        ("raised", s(a, "/alarmRaisedTime")),
        ("changed", s(a, "/alarmChangedTime")),
        ("cleared", s(a, "/alarmClearedTime")),
        ("details", output::compact(a, "/faultDetails")),
    ])
}

fn vnfcs(a: &Value) -> String {
    a["vnfcInstanceIds"]
        .as_array()
        .map(|ids| {
            ids.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

/// Runs one `vnfm alarm` command.
pub async fn run(ctx: &Ctx, cmd: AlarmCommand) -> Result<(), ClientError> {
    match cmd {
        AlarmCommand::List(a) => {
            let query: Vec<(&str, String)> =
                filter_of(&a).map(|f| ("filter", f)).into_iter().collect();
            let mut list = ctx.api()?.list(ALARMS, &query).await?;
            list.sort_by_key(|a| std::cmp::Reverse(s(a, "/alarmRaisedTime")));
            output::print(ctx.format, &Value::Array(list), |v| {
                let mut t =
                    Table::new(&["ID", "VNF", "VNFCS", "SEVERITY", "ACK", "RAISED", "CAUSE"]);
                for a in v.as_array().into_iter().flatten() {
                    t.row(vec![
                        s(a, "/id"),
                        s(a, "/managedObjectId"),
                        vnfcs(a),
                        s(a, "/perceivedSeverity"),
                        s(a, "/ackState"),
                        s(a, "/alarmRaisedTime"),
                        s(a, "/probableCause"),
                    ]);
                }
                t.render()
            })
        }
        AlarmCommand::Show { id } => {
            let v = ctx
                .api()?
                .get(&format!("{ALARMS}/{}", super::seg(&id)))
                .await?;
            output::print(ctx.format, &v, alarm_fields)
        }
        AlarmCommand::Ack { ids } => {
            let mut done = Vec::new();
            for id in &ids {
                let result = ctx
                    .api()?
                    .call(
                        Method::PATCH,
                        &format!("{ALARMS}/{}", super::seg(id)),
                        Body::MergePatch(json!({"ackState": "ACKNOWLEDGED"})),
                    )
                    .await;
                if let Err(e) = result {
                    if !done.is_empty() {
                        eprintln!("{} of {} alarms acknowledged", done.len(), ids.len());
                    }
                    return Err(e);
                }
                done.push(id.clone());
            }
            let message = match done.as_slice() {
                [one] => format!("alarm {one} acknowledged"),
                many => format!("{} alarms acknowledged", many.len()),
            };
            ctx.done(&message, json!({ "acknowledged": done }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_options_become_one_sol013_filter() {
        assert_eq!(filter_of(&ListArgs::default()), None);
        let a = ListArgs {
            vnf: Some("v-1".into()),
            severities: vec!["critical".into(), "MAJOR".into()],
            open: true,
            unacknowledged: true,
            filter: Some("(eq,eventType,EQUIPMENT_ALARM)".into()),
        };
        assert_eq!(
            filter_of(&a).unwrap(),
            "(eq,managedObjectId,v-1);(in,perceivedSeverity,CRITICAL,MAJOR);\
             (neq,perceivedSeverity,CLEARED);(eq,ackState,UNACKNOWLEDGED);\
             (eq,eventType,EQUIPMENT_ALARM)"
        );
    }

    #[test]
    fn values_with_filter_syntax_are_quoted() {
        let a = ListArgs {
            vnf: Some("it's,odd".into()),
            ..ListArgs::default()
        };
        assert_eq!(filter_of(&a).unwrap(), "(eq,managedObjectId,'it''s,odd')");
    }
}
