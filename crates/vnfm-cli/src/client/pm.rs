//! `vnfm pm`: VNF performance management (`/vnfpm/v2`): PM jobs (list, show, create,
//! delete).

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::Ctx;
use super::error::ClientError;
use super::http::Body;
use super::output::{self, Table, fields, s};

/// The PM job resources of the server.
const PM_JOBS: &str = "/vnfpm/v2/pm_jobs";

/// `vnfm pm ...`.
#[derive(Debug, Subcommand)]
pub enum PmCommand {
    /// PM jobs: what is measured, how often, and their reports.
    #[command(subcommand)]
    Job(JobCommand),
}

/// `vnfm pm job ...`.
#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// List PM jobs.
    List,
    /// Show one PM job, with its reports.
    Show {
        /// PM job id.
        id: String,
    },
    /// Create a PM job.
    Create(CreateArgs),
    /// Delete PM jobs (their reports go with them).
    Delete {
        /// PM job ids.
        #[arg(required = true, value_name = "ID")]
        ids: Vec<String>,
    },
}

/// `vnfm pm job create`.
#[derive(Debug, Args, Default)]
pub struct CreateArgs {
    /// The measured VNF instance (repeatable).
    #[arg(long = "vnf", value_name = "ID", required = true)]
    pub vnfs: Vec<String>,
    /// Object type: Vnf, Vnfc, VnfIntCp or VnfExtCp.
    #[arg(long, default_value = "Vnf", value_name = "TYPE")]
    pub object_type: String,
    /// Only these VNFCs or connection points of the one instance (repeatable).
    #[arg(long = "sub-object", value_name = "ID")]
    pub sub_objects: Vec<String>,
    /// A metric to collect, e.g. VCpuUsageMeanVnf (repeatable).
    #[arg(
        long = "metric",
        value_name = "NAME",
        required_unless_present = "groups"
    )]
    pub metrics: Vec<String>,
    /// A group of metrics, e.g. VirtualisedComputeResource (repeatable).
    #[arg(long = "group", value_name = "NAME")]
    pub groups: Vec<String>,
    /// Seconds between two collections.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    pub collection_period: u64,
    /// Seconds between two reports (a multiple of the collection period).
    #[arg(long, default_value_t = 300, value_name = "SECONDS")]
    pub reporting_period: u64,
    /// Where the server sends the job's notifications.
    #[arg(long, value_name = "URI")]
    pub callback: String,
}

/// The `CreatePmJobRequest` of `a`.
pub fn request_of(a: &CreateArgs) -> Value {
    let mut criteria = json!({
        "collectionPeriod": a.collection_period,
        "reportingPeriod": a.reporting_period,
    });
    if !a.metrics.is_empty() {
        criteria["performanceMetric"] = json!(a.metrics);
    }
    if !a.groups.is_empty() {
        criteria["performanceMetricGroup"] = json!(a.groups);
    }
    let mut body = json!({
        "objectType": a.object_type,
        "objectInstanceIds": a.vnfs,
        "criteria": criteria,
        "callbackUri": a.callback,
    });
    if !a.sub_objects.is_empty() {
        body["subObjectInstanceIds"] = json!(a.sub_objects);
    }
    body
}

fn joined(v: &Value, pointer: &str) -> String {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

fn periods(j: &Value) -> String {
    format!(
        "{}s/{}s",
        j["criteria"]["collectionPeriod"], j["criteria"]["reportingPeriod"]
    )
}

fn reports(j: &Value) -> usize {
    j["reports"].as_array().map_or(0, Vec::len)
}

fn job_fields(j: &Value) -> String {
    let mut out = fields(&[
        ("id", s(j, "/id")),
        ("object type", s(j, "/objectType")),
        ("VNF instances", joined(j, "/objectInstanceIds")),
        ("sub-objects", joined(j, "/subObjectInstanceIds")),
        ("metrics", joined(j, "/criteria/performanceMetric")),
        ("collection/reporting", periods(j)),
        ("callback", s(j, "/callbackUri")),
        ("reports", reports(j).to_string()),
    ]);
    for r in j["reports"].as_array().into_iter().flatten() {
        out.push_str(&format!("  {}  {}\n", s(r, "/readyTime"), s(r, "/href")));
    }
    out
}

/// Runs one `vnfm pm` command.
pub async fn run(ctx: &Ctx, cmd: PmCommand) -> Result<(), ClientError> {
    let PmCommand::Job(cmd) = cmd;
    match cmd {
        JobCommand::List => {
            let list = ctx.api()?.list(PM_JOBS, &[]).await?;
            output::print(ctx.format, &Value::Array(list), |v| {
                let mut t = Table::new(&["ID", "TYPE", "VNF", "METRICS", "PERIODS", "REPORTS"]);
                for j in v.as_array().into_iter().flatten() {
                    t.row(vec![
                        s(j, "/id"),
                        s(j, "/objectType"),
                        joined(j, "/objectInstanceIds"),
                        joined(j, "/criteria/performanceMetric"),
                        periods(j),
                        reports(j).to_string(),
                    ]);
                }
                t.render()
            })
        }
        JobCommand::Show { id } => {
            let v = ctx
                .api()?
                .get(&format!("{PM_JOBS}/{}", super::seg(&id)))
                .await?;
            output::print(ctx.format, &v, job_fields)
        }
        JobCommand::Create(a) => {
            let created = ctx
                .api()?
                .call(reqwest::Method::POST, PM_JOBS, Body::Json(request_of(&a)))
                .await?
                .body;
            output::print(ctx.format, &created, |j| {
                format!("PM job {} created\n", s(j, "/id"))
            })
        }
        JobCommand::Delete { ids } => {
            for (n, id) in ids.iter().enumerate() {
                let result = ctx
                    .api()?
                    .call(
                        reqwest::Method::DELETE,
                        &format!("{PM_JOBS}/{}", super::seg(id)),
                        Body::Empty,
                    )
                    .await;
                if let Err(e) = result {
                    if n > 0 {
                        eprintln!("{n} of {} PM jobs deleted", ids.len());
                    }
                    return Err(e);
                }
            }
            let message = match ids.as_slice() {
                [one] => format!("PM job {one} deleted"),
                many => format!("{} PM jobs deleted", many.len()),
            };
            ctx.done(&message, json!({ "deleted": ids }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_options_become_a_create_pm_job_request() {
        let a = CreateArgs {
            vnfs: vec!["v1".into()],
            object_type: "Vnfc".into(),
            sub_objects: vec!["c1".into()],
            metrics: vec!["VCpuUsageMeanVnf".into()],
            groups: vec![],
            collection_period: 10,
            reporting_period: 30,
            callback: "http://nfvo/pm".into(),
        };
        let body = request_of(&a);
        assert_eq!(
            body,
            json!({"objectType": "Vnfc", "objectInstanceIds": ["v1"],
                   "subObjectInstanceIds": ["c1"],
                   "criteria": {"performanceMetric": ["VCpuUsageMeanVnf"],
                                "collectionPeriod": 10, "reportingPeriod": 30},
                   "callbackUri": "http://nfvo/pm"})
        );
        // The request is one the server's type reads.
        let parsed: vnfm_types::CreatePmJobRequest = serde_json::from_value(body).unwrap();
        assert_eq!(parsed.criteria.reporting_period, 30);
    }
}
