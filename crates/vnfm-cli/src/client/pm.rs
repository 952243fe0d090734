//! `vnfm pm`: VNF performance management (`/vnfpm/v2`): PM jobs and thresholds (list, show,
//! create, delete).

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::Ctx;
use super::error::ClientError;
use super::http::Body;
use super::output::{self, Table, fields, s};

/// The PM job resources of the server.
const PM_JOBS: &str = "/vnfpm/v2/pm_jobs";
/// The threshold resources of the server.
const THRESHOLDS: &str = "/vnfpm/v2/thresholds";

/// `vnfm pm ...`.
#[derive(Debug, Subcommand)]
pub enum PmCommand {
    /// PM jobs: what is measured, how often, and their reports.
    #[command(subcommand)]
    Job(JobCommand),
    /// Thresholds: a metric's value watched for crossings (which notify, and may scale an
    /// instance with a `thresholdScaling` rule).
    #[command(subcommand)]
    Threshold(ThresholdCommand),
}

/// `vnfm pm threshold ...`.
#[derive(Debug, Subcommand)]
pub enum ThresholdCommand {
    /// List thresholds.
    List,
    /// Show one threshold.
    Show {
        /// Threshold id.
        id: String,
    },
    /// Create a threshold.
    Create(ThresholdArgs),
    /// Delete thresholds.
    Delete {
        /// Threshold ids.
        #[arg(required = true, value_name = "ID")]
        ids: Vec<String>,
    },
}

/// `vnfm pm threshold create`.
#[derive(Debug, Args, Default)]
pub struct ThresholdArgs {
    /// The watched VNF instance.
    #[arg(long = "vnf", value_name = "ID")]
    pub vnf: String,
    /// Object type: Vnf, Vnfc, VnfIntCp or VnfExtCp.
    #[arg(long, default_value = "Vnf", value_name = "TYPE")]
    pub object_type: String,
    /// Only these VNFCs or connection points of the instance (repeatable).
    #[arg(long = "sub-object", value_name = "ID")]
    pub sub_objects: Vec<String>,
    /// The watched metric, e.g. VCpuUsageMeanVnf.
    #[arg(long, value_name = "NAME")]
    pub metric: String,
    /// The threshold value.
    #[arg(long, value_name = "NUMBER", allow_negative_numbers = true)]
    pub value: f64,
    /// The hysteresis: crossing up means above value + hysteresis, down below value -
    /// hysteresis.
    #[arg(long, default_value_t = 0.0, value_name = "NUMBER")]
    pub hysteresis: f64,
    /// Where the server sends the crossing notifications.
    #[arg(long, value_name = "URI")]
    pub callback: String,
}

/// The `CreateThresholdRequest` of `a`.
pub fn threshold_request_of(a: &ThresholdArgs) -> Value {
    let mut body = json!({
        "objectType": a.object_type,
        "objectInstanceId": a.vnf,
        "criteria": {
            "performanceMetric": a.metric,
            "thresholdType": "SIMPLE",
            "simpleThresholdDetails": {"thresholdValue": a.value, "hysteresis": a.hysteresis},
        },
        "callbackUri": a.callback,
    });
    if !a.sub_objects.is_empty() {
        body["subObjectInstanceIds"] = json!(a.sub_objects);
    }
    body
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

/// `value ± hysteresis` of a threshold.
fn bound(t: &Value) -> String {
    let d = &t["criteria"]["simpleThresholdDetails"];
    format!("{} ± {}", d["thresholdValue"], d["hysteresis"])
}

fn threshold_fields(t: &Value) -> String {
    fields(&[
        ("id", s(t, "/id")),
        ("object type", s(t, "/objectType")),
        ("VNF instance", s(t, "/objectInstanceId")),
        ("sub-objects", joined(t, "/subObjectInstanceIds")),
        ("metric", s(t, "/criteria/performanceMetric")),
        ("value ± hysteresis", bound(t)),
        ("callback", s(t, "/callbackUri")),
    ])
}

/// Deletes the `noun` resources `ids` under `base`, one by one, saying how many went when one
/// fails.
async fn delete_all(ctx: &Ctx, base: &str, noun: &str, ids: &[String]) -> Result<(), ClientError> {
    for (n, id) in ids.iter().enumerate() {
        let result = ctx
            .api()?
            .call(
                reqwest::Method::DELETE,
                &format!("{base}/{}", super::seg(id)),
                Body::Empty,
            )
            .await;
        if let Err(e) = result {
            if n > 0 {
                eprintln!("{n} of {} {noun}s deleted", ids.len());
            }
            return Err(e);
        }
    }
    let message = match ids {
        [one] => format!("{noun} {one} deleted"),
        many => format!("{} {noun}s deleted", many.len()),
    };
    ctx.done(&message, json!({ "deleted": ids }))
}

/// Runs one `vnfm pm` command.
pub async fn run(ctx: &Ctx, cmd: PmCommand) -> Result<(), ClientError> {
    match cmd {
        PmCommand::Job(cmd) => run_job(ctx, cmd).await,
        PmCommand::Threshold(cmd) => run_threshold(ctx, cmd).await,
    }
}

async fn run_threshold(ctx: &Ctx, cmd: ThresholdCommand) -> Result<(), ClientError> {
    match cmd {
        ThresholdCommand::List => {
            let list = ctx.api()?.list(THRESHOLDS, &[]).await?;
            output::print(ctx.format, &Value::Array(list), |v| {
                let mut t = Table::new(&["ID", "TYPE", "VNF", "METRIC", "VALUE ± HYSTERESIS"]);
                for th in v.as_array().into_iter().flatten() {
                    t.row(vec![
                        s(th, "/id"),
                        s(th, "/objectType"),
                        s(th, "/objectInstanceId"),
                        s(th, "/criteria/performanceMetric"),
                        bound(th),
                    ]);
                }
                t.render()
            })
        }
        ThresholdCommand::Show { id } => {
            let v = ctx
                .api()?
                .get(&format!("{THRESHOLDS}/{}", super::seg(&id)))
                .await?;
            output::print(ctx.format, &v, threshold_fields)
        }
        ThresholdCommand::Create(a) => {
            let created = ctx
                .api()?
                .call(
                    reqwest::Method::POST,
                    THRESHOLDS,
                    Body::Json(threshold_request_of(&a)),
                )
                .await?
                .body;
            output::print(ctx.format, &created, |t| {
                format!("threshold {} created\n", s(t, "/id"))
            })
        }
        ThresholdCommand::Delete { ids } => delete_all(ctx, THRESHOLDS, "threshold", &ids).await,
    }
}

async fn run_job(ctx: &Ctx, cmd: JobCommand) -> Result<(), ClientError> {
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
        JobCommand::Delete { ids } => delete_all(ctx, PM_JOBS, "PM job", &ids).await,
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

    #[test]
    fn the_options_become_a_create_threshold_request() {
        let a = ThresholdArgs {
            vnf: "v1".into(),
            object_type: "Vnfc".into(),
            sub_objects: vec!["c1".into()],
            metric: "VCpuUsageMeanVnf".into(),
            value: 80.0,
            hysteresis: 5.0,
            callback: "http://nfvo/th".into(),
        };
        let body = threshold_request_of(&a);
        assert_eq!(
            body,
            json!({"objectType": "Vnfc", "objectInstanceId": "v1",
                   "subObjectInstanceIds": ["c1"],
                   "criteria": {"performanceMetric": "VCpuUsageMeanVnf",
                                "thresholdType": "SIMPLE",
                                "simpleThresholdDetails": {"thresholdValue": 80.0,
                                                           "hysteresis": 5.0}},
                   "callbackUri": "http://nfvo/th"})
        );
        let parsed: vnfm_types::CreateThresholdRequest = serde_json::from_value(body).unwrap();
        assert_eq!(parsed.criteria.performance_metric, "VCpuUsageMeanVnf");
    }
}
