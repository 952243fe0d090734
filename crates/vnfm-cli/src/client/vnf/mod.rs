//! `vnfm vnf`: VNF instance resources and every lifecycle task, each from `--request
//! file.json` and/or flags for the common fields, optionally followed to the end with `--wait`.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use reqwest::Method;
use serde_json::{Map, Value, json};

use super::Ctx;
use super::config::OutputFormat;
use super::error::ClientError;
use super::http::Body;
use super::output::{self, Table, fields, s};
use super::progress::{self, Stream};

mod bodies;
use bodies::{
    change_ext_conn_body, change_flavour_body, change_pkg_body, create_body, heal_body,
    instantiate_body, modify_body, operate_body, scale_body, scale_to_level_body, terminate_body,
};

/// A `KEY=VALUE` option; VALUE is JSON when it parses as JSON, else a string.
#[derive(Debug, Clone)]
pub struct KeyValue {
    /// The key.
    pub key: String,
    /// The value.
    pub value: Value,
}

impl FromStr for KeyValue {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| format!("expected KEY=VALUE, got `{s}`"))?;
        if k.is_empty() {
            return Err(format!("expected KEY=VALUE, got `{s}` (empty key)"));
        }
        let value = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_owned()));
        Ok(KeyValue {
            key: k.to_owned(),
            value,
        })
    }
}

/// The options as a JSON object (later keys win).
pub fn key_values(kvs: &[KeyValue]) -> Value {
    let mut m = Map::new();
    for kv in kvs {
        m.insert(kv.key.clone(), kv.value.clone());
    }
    Value::Object(m)
}

/// Reads a request body file (JSON, or YAML); it must be an object.
pub fn load_request(path: &Path) -> Result<Map<String, Value>, ClientError> {
    let text = std::fs::read_to_string(path).map_err(|source| ClientError::ReadFile {
        what: "request file",
        path: path.to_owned(),
        source,
    })?;
    let value: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(json_err) => serde_saphyr::from_str(&text).map_err(|_| ClientError::BadFile {
            what: "request file",
            path: path.to_owned(),
            message: format!("not JSON ({json_err}) nor YAML"),
        })?,
    };
    match value {
        Value::Object(m) => Ok(m),
        _ => Err(ClientError::BadFile {
            what: "request file",
            path: path.to_owned(),
            message: "the request must be a JSON object".into(),
        }),
    }
}

/// Options every task takes.
#[derive(Debug, Args)]
pub struct TaskArgs {
    /// VNF instance id.
    pub id: String,
    /// The request body (JSON or YAML); flags override its members.
    #[arg(long, value_name = "FILE")]
    pub request: Option<PathBuf>,
    /// `additionalParams` member as KEY=VALUE (VALUE is JSON when it parses; repeatable).
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<KeyValue>,
    /// Follow the operation to its end with a progress display; exit 1 when it ends in
    /// FAILED_TEMP, FAILED or ROLLED_BACK.
    #[arg(long, short = 'w')]
    pub wait: bool,
    /// With --wait: give up after this many seconds (exit 4; the operation goes on).
    #[arg(long, default_value_t = 3600, value_name = "SECONDS")]
    pub timeout: u64,
    /// Show what the task would do (its steps in order, with their drivers, VIMs and hook
    /// artifacts, and the grant it would ask for) without starting it.
    #[arg(long, conflicts_with = "wait")]
    pub preview: bool,
}

/// `vnfm vnf ...`.
#[derive(Debug, Subcommand)]
pub enum VnfCommand {
    /// Create a VNF instance resource (NOT_INSTANTIATED) from an onboarded VNFD.
    Create(CreateArgs),
    /// List VNF instances.
    List(ListArgs),
    /// Export VNF instances, whole, one JSON document per line (NDJSON), page by page at
    /// constant memory: for backups, migrations and inventories of any size.
    Export(super::export::ExportArgs),
    /// Show one VNF instance.
    Show {
        /// VNF instance id.
        id: String,
    },
    /// Delete a NOT_INSTANTIATED VNF instance resource.
    Delete {
        /// VNF instance id.
        id: String,
    },
    /// The lifecycle tasks, each of which starts an operation occurrence.
    #[command(flatten)]
    Task(TaskCommand),
}

/// `vnfm vnf <task>`: the commands that start an operation occurrence.
#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Instantiate the VNF (InstantiateVnfRequest) on a registered VIM or a VIM type.
    Instantiate(InstantiateArgs),
    /// Terminate the VNF (TerminateVnfRequest); its resources are released.
    Terminate(TerminateArgs),
    /// Heal VNFCs, or the whole VNF (HealVnfRequest).
    Heal(HealArgs),
    /// Scale an aspect out or in by a number of steps (ScaleVnfRequest).
    Scale(ScaleArgs),
    /// Scale to an instantiation level or to aspect levels (ScaleVnfToLevelRequest).
    ScaleToLevel(ScaleToLevelArgs),
    /// Change the deployment flavour (ChangeVnfFlavourRequest).
    ChangeFlavour(ChangeFlavourArgs),
    /// Start or stop the VNF or some of its VNFCs (OperateVnfRequest).
    Operate(OperateArgs),
    /// Change external connectivity (ChangeExtVnfConnectivityRequest; needs --request with
    /// extVirtualLinks).
    ChangeExtConn(PlainTaskArgs),
    /// Modify the instance's information (name, description, metadata, extensions, vnfdId).
    Modify(ModifyArgs),
    /// Change the current VNF package to another vnfdId (ChangeCurrentVnfPkgRequest).
    ChangePkg(ChangePkgArgs),
}

impl TaskCommand {
    /// The options every task has.
    fn args(&self) -> &TaskArgs {
        match self {
            Self::Instantiate(a) => &a.task,
            Self::Terminate(a) => &a.task,
            Self::Heal(a) => &a.task,
            Self::Scale(a) => &a.task,
            Self::ScaleToLevel(a) => &a.task,
            Self::ChangeFlavour(a) => &a.task,
            Self::Operate(a) => &a.task,
            Self::ChangeExtConn(a) => &a.task,
            Self::Modify(a) => &a.task,
            Self::ChangePkg(a) => &a.task,
        }
    }

    /// The request that starts the task: `POST .../vnf_instances/{id}/<task>` with the
    /// request body, or for modify `PATCH .../vnf_instances/{id}` with a merge patch.
    async fn request(&self, ctx: &Ctx) -> Result<(Method, String, Body), ClientError> {
        let instance = instance_path(&self.args().id);
        let post = |task: &str, body| {
            (
                Method::POST,
                format!("{instance}/{task}"),
                Body::Json(Value::Object(body)),
            )
        };
        Ok(match self {
            Self::Instantiate(a) => post("instantiate", instantiate_body(ctx, a).await?),
            Self::Terminate(a) => post("terminate", terminate_body(a)?),
            Self::Heal(a) => post("heal", heal_body(a)?),
            Self::Scale(a) => post("scale", scale_body(a)?),
            Self::ScaleToLevel(a) => post("scale_to_level", scale_to_level_body(a)?),
            Self::ChangeFlavour(a) => post("change_flavour", change_flavour_body(a)?),
            Self::Operate(a) => post("operate", operate_body(a)?),
            Self::ChangeExtConn(a) => post("change_ext_conn", change_ext_conn_body(&a.task)?),
            Self::ChangePkg(a) => post("change_vnfpkg", change_pkg_body(a)?),
            Self::Modify(a) => (
                Method::PATCH,
                instance.clone(),
                Body::MergePatch(Value::Object(modify_body(a)?)),
            ),
        })
    }
}

/// `vnfm vnf create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The VNFD id of an onboarded, ENABLED package.
    #[arg(long)]
    pub vnfd_id: Option<String>,
    /// `vnfInstanceName`.
    #[arg(long)]
    pub name: Option<String>,
    /// `vnfInstanceDescription`.
    #[arg(long)]
    pub description: Option<String>,
    /// `metadata` member as KEY=VALUE (repeatable).
    #[arg(long = "metadata", value_name = "KEY=VALUE")]
    pub metadata: Vec<KeyValue>,
    /// The request body (JSON or YAML); flags override its members.
    #[arg(long, value_name = "FILE")]
    pub request: Option<PathBuf>,
}

/// `vnfm vnf list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// SOL013 attribute filter, e.g. `(eq,instantiationState,INSTANTIATED)`.
    #[arg(long)]
    pub filter: Option<String>,
}

/// `vnfm vnf instantiate`.
#[derive(Debug, Args)]
pub struct InstantiateArgs {
    #[command(flatten)]
    pub task: TaskArgs,
    /// `flavourId`.
    #[arg(long)]
    pub flavour: Option<String>,
    /// `instantiationLevelId`.
    #[arg(long)]
    pub level: Option<String>,
    /// A registered VIM to deploy on, as VIM_ID or KEY=VIM_ID (repeatable; keys default to
    /// vim1, vim2, ...).
    #[arg(long = "vim", value_name = "[KEY=]VIM_ID")]
    pub vims: Vec<String>,
    /// A VIM given by type only (e.g. TEST.NOOP.V_1 on a server started with
    /// --enable-test-vim), as TYPE or KEY=TYPE.
    #[arg(long = "vim-type", value_name = "[KEY=]TYPE")]
    pub vim_types: Vec<String>,
}

/// `terminationType`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TerminationKind {
    /// FORCEFUL.
    #[value(alias = "FORCEFUL")]
    Forceful,
    /// GRACEFUL.
    #[value(alias = "GRACEFUL")]
    Graceful,
}

/// `vnfm vnf terminate`.
#[derive(Debug, Args)]
pub struct TerminateArgs {
    #[command(flatten)]
    pub task: TaskArgs,
    /// `terminationType` [default: forceful, or graceful with --graceful-timeout].
    #[arg(long = "type", value_enum)]
    pub kind: Option<TerminationKind>,
    /// `gracefulTerminationTimeout` in seconds (implies --type graceful).
    #[arg(long, value_name = "SECONDS")]
    pub graceful_timeout: Option<u32>,
}

/// `vnfm vnf heal`.
#[derive(Debug, Args)]
pub struct HealArgs {
    #[command(flatten)]
    pub task: TaskArgs,
    /// VNFC instance id (`vnfcInfo` id; repeatable; none heals the whole VNF).
    #[arg(long = "vnfc", value_name = "ID")]
    pub vnfcs: Vec<String>,
    /// `cause`.
    #[arg(long)]
    pub cause: Option<String>,
}

/// Scale direction.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ScaleKind {
    /// SCALE_OUT.
    #[value(alias = "SCALE_OUT")]
    Out,
    /// SCALE_IN.
    #[value(alias = "SCALE_IN")]
    In,
}

/// `vnfm vnf scale`.
#[derive(Debug, Args)]
pub struct ScaleArgs {
    #[command(flatten)]
    pub task: TaskArgs,
    /// `type` [default: out].
    #[arg(long = "type", value_enum)]
    pub kind: Option<ScaleKind>,
    /// `aspectId`.
    #[arg(long)]
    pub aspect: Option<String>,
    /// `numberOfSteps`.
    #[arg(long)]
    pub steps: Option<u32>,
}

/// `vnfm vnf scale-to-level`.
#[derive(Debug, Args)]
pub struct ScaleToLevelArgs {
    #[command(flatten)]
    pub task: TaskArgs,
    /// `instantiationLevelId`.
    #[arg(long, conflicts_with = "aspect_levels")]
    pub level: Option<String>,
    /// `scaleInfo` entry as ASPECT=LEVEL (repeatable).
    #[arg(long = "aspect-level", value_name = "ASPECT=LEVEL")]
    pub aspect_levels: Vec<KeyValue>,
}

/// `vnfm vnf change-flavour`.
#[derive(Debug, Args)]
pub struct ChangeFlavourArgs {
    #[command(flatten)]
    pub task: TaskArgs,
    /// `newFlavourId`.
    #[arg(long)]
    pub flavour: Option<String>,
    /// `instantiationLevelId`.
    #[arg(long)]
    pub level: Option<String>,
}

/// Target state of operate.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum OperateState {
    /// STARTED.
    #[value(alias = "STARTED")]
    Started,
    /// STOPPED.
    #[value(alias = "STOPPED")]
    Stopped,
}

/// `vnfm vnf operate`.
#[derive(Debug, Args)]
pub struct OperateArgs {
    #[command(flatten)]
    pub task: TaskArgs,
    /// `changeStateTo`.
    #[arg(long, value_enum)]
    pub state: Option<OperateState>,
    /// `stopType`.
    #[arg(long, value_enum)]
    pub stop_type: Option<TerminationKind>,
    /// `gracefulStopTimeout` in seconds.
    #[arg(long, value_name = "SECONDS")]
    pub graceful_stop_timeout: Option<u32>,
    /// VNFC instance id to operate (repeatable; none operates the whole VNF).
    #[arg(long = "vnfc", value_name = "ID")]
    pub vnfcs: Vec<String>,
}

/// A task with no common fields beyond `additionalParams`.
#[derive(Debug, Args)]
pub struct PlainTaskArgs {
    #[command(flatten)]
    pub task: TaskArgs,
}

/// `vnfm vnf modify`.
#[derive(Debug, Args)]
pub struct ModifyArgs {
    #[command(flatten)]
    pub task: TaskArgs,
    /// `vnfInstanceName`.
    #[arg(long)]
    pub name: Option<String>,
    /// `vnfInstanceDescription`.
    #[arg(long)]
    pub description: Option<String>,
    /// `vnfdId`.
    #[arg(long)]
    pub vnfd_id: Option<String>,
    /// `metadata` member as KEY=VALUE (`KEY=null` removes it; repeatable).
    #[arg(long = "metadata", value_name = "KEY=VALUE")]
    pub metadata: Vec<KeyValue>,
    /// `extensions` member as KEY=VALUE (repeatable).
    #[arg(long = "extension", value_name = "KEY=VALUE")]
    pub extensions: Vec<KeyValue>,
}

/// `vnfm vnf change-pkg`.
#[derive(Debug, Args)]
pub struct ChangePkgArgs {
    #[command(flatten)]
    pub task: TaskArgs,
    /// `vnfdId` of the package to change to.
    #[arg(long)]
    pub vnfd_id: Option<String>,
}

fn instance_path(id: &str) -> String {
    format!("/vnflcm/v2/vnf_instances/{}", super::seg(id))
}

/// Starts a task (POST, or PATCH for modify), prints the op-occ id, and with `--wait` follows
/// it to its end.
async fn start_task(ctx: &Ctx, command: &TaskCommand) -> Result<(), ClientError> {
    let task = command.args();
    let (method, path, body) = command.request(ctx).await?;
    if task.preview {
        return preview_task(ctx, method, &path, body).await;
    }
    let api = ctx.api()?;
    let label = format!(
        "{} {}: submitting",
        path.rsplit('/')
            .next()
            .unwrap_or_default()
            .to_ascii_uppercase(),
        progress::short(&task.id)
    );
    let display = task.wait.then(|| {
        progress::Display::start(
            if ctx.format == OutputFormat::Table {
                Stream::Stdout
            } else {
                Stream::Stderr
            },
            &label,
        )
    });
    let submitted = api
        .call(method.clone(), &path, body)
        .await
        .and_then(|answer| {
            answer
                .location()
                .map(str::to_owned)
                .ok_or_else(|| ClientError::Unexpected {
                    what: format!("{method} {path}"),
                    message: format!("{} without a Location header", answer.status),
                })
        });
    let location = match submitted {
        Ok(l) => l,
        Err(e) => {
            if let Some(d) = &display {
                d.abandon();
            }
            return Err(e);
        }
    };
    let op_id = location
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_owned();
    let Some(display) = display else {
        return ctx.done(
            &format!("operation occurrence {op_id} started (vnfm op show {op_id})"),
            json!({"vnfLcmOpOccId": op_id, "location": location}),
        );
    };
    let occ = progress::follow(api, &op_id, &display, Duration::from_secs(task.timeout)).await?;
    if ctx.format != OutputFormat::Table {
        output::emit(&output::document(ctx.format, &occ))?;
    }
    progress::outcome(&occ)
}

/// Asks the server what a task would do (`?preview=true`) and prints it.
async fn preview_task(
    ctx: &Ctx,
    method: Method,
    path: &str,
    body: Body,
) -> Result<(), ClientError> {
    if method != Method::POST {
        return Err(ClientError::Usage(
            "--preview is for the tasks that start with POST; modify has none".into(),
        ));
    }
    let answer = ctx
        .api()?
        .call(method, &format!("{path}?preview=true"), body)
        .await?;
    output::print(ctx.format, &answer.body, preview_table)
}

/// The table view of a preview: one line per step, then the grant's resource counts.
fn preview_table(v: &Value) -> String {
    let text = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("-");
    let mut out = format!(
        "{} of {} (VNFD {}, flavour {}) would run:\n",
        text("/operation"),
        text("/vnfInstanceId"),
        text("/vnfdId"),
        text("/flavourId")
    );
    for (i, step) in v["steps"].as_array().into_iter().flatten().enumerate() {
        let name = step["name"].as_str().unwrap_or("?");
        let detail = match step["step"].as_str() {
            Some("hook") => format!(
                "artifact {}",
                step["artifact"]["file"].as_str().unwrap_or("?")
            ),
            Some("infra") => format!(
                "driver {} on VIM {}",
                step["driver"].as_str().unwrap_or("?"),
                step["vimConnectionIds"]
                    .as_array()
                    .map(|ids| ids
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", "))
                    .unwrap_or_default()
            ),
            _ => String::new(),
        };
        out.push_str(&format!("  {}. {name}  {detail}\n", i + 1));
        if let Some(problem) = step["problem"].as_str() {
            out.push_str(&format!("     problem: {problem}\n"));
        }
    }
    if let Some(grant) = v.get("grant") {
        let count = |k: &str| grant["request"][k].as_array().map_or(0, Vec::len);
        out.push_str(&format!(
            "grant from {}: add {}, remove {}, update {}\n",
            grant["nfvo"].as_str().unwrap_or("?"),
            count("addResources"),
            count("removeResources"),
            count("updateResources")
        ));
    }
    for w in v["warnings"].as_array().into_iter().flatten() {
        out.push_str(&format!("warning: {}\n", w.as_str().unwrap_or_default()));
    }
    out
}

/// The table view of an instance.
pub fn instance_fields(v: &Value) -> String {
    let info = "/instantiatedVnfInfo";
    let scale: Vec<String> = v
        .pointer(&format!("{info}/scaleStatus"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|a| format!("{}={}", s(a, "/aspectId"), s(a, "/scaleLevel")))
        .collect();
    let vims: Vec<String> = v
        .pointer("/vimConnectionInfo")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, c)| {
            let id = s(c, "/vimId");
            if id.is_empty() {
                format!("{k}: {}", s(c, "/vimType"))
            } else {
                format!("{k}: {} ({id})", s(c, "/vimType"))
            }
        })
        .collect();
    let mut text = fields(&[
        ("ID", s(v, "/id")),
        ("Name", s(v, "/vnfInstanceName")),
        ("Description", s(v, "/vnfInstanceDescription")),
        ("VNFD", s(v, "/vnfdId")),
        (
            "Product",
            format!(
                "{} {} ({})",
                s(v, "/vnfProductName"),
                s(v, "/vnfSoftwareVersion"),
                s(v, "/vnfProvider")
            )
            .trim_start_matches(' ')
            .trim_end_matches(" ()")
            .to_owned(),
        ),
        ("State", s(v, "/instantiationState")),
        ("Flavour", s(v, &format!("{info}/flavourId"))),
        ("VNF state", s(v, &format!("{info}/vnfState"))),
        ("Scale", scale.join(", ")),
        ("VIMs", vims.join("\n")),
        ("Metadata", output::compact(v, "/metadata")),
        ("Extensions", output::compact(v, "/extensions")),
    ]);
    let vnfcs = v
        .pointer(&format!("{info}/vnfcInfo"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !vnfcs.is_empty() {
        text.push_str("VNFCs:\n");
        let mut t = Table::new(&["  VNFC ID", "VDU", "STATE"]);
        for c in &vnfcs {
            t.row(vec![
                format!("  {}", s(c, "/id")),
                s(c, "/vduId"),
                s(c, "/vnfcState"),
            ]);
        }
        text.push_str(&t.render());
    }
    text
}

/// Runs a `vnfm vnf` command.
pub async fn run(ctx: &Ctx, cmd: VnfCommand) -> Result<(), ClientError> {
    match cmd {
        VnfCommand::Create(a) => {
            let body = create_body(&a)?;
            let created = ctx
                .api()?
                .call(
                    Method::POST,
                    "/vnflcm/v2/vnf_instances",
                    Body::Json(Value::Object(body)),
                )
                .await?
                .body;
            output::print(ctx.format, &created, instance_fields)
        }
        VnfCommand::Export(a) => super::export::run(ctx, a).await,
        VnfCommand::List(a) => {
            let mut query = Vec::new();
            if let Some(f) = a.filter {
                query.push(("filter", f));
            }
            let list = Value::Array(ctx.api()?.list("/vnflcm/v2/vnf_instances", &query).await?);
            output::print(ctx.format, &list, |v| {
                let mut t = Table::new(&["ID", "NAME", "STATE", "VNFD ID", "PRODUCT"]);
                for i in v.as_array().into_iter().flatten() {
                    t.row(vec![
                        s(i, "/id"),
                        s(i, "/vnfInstanceName"),
                        s(i, "/instantiationState"),
                        s(i, "/vnfdId"),
                        s(i, "/vnfProductName"),
                    ]);
                }
                t.render()
            })
        }
        VnfCommand::Show { id } => {
            let v = ctx.api()?.get(&instance_path(&id)).await?;
            output::print(ctx.format, &v, instance_fields)
        }
        VnfCommand::Delete { id } => {
            ctx.api()?
                .call(Method::DELETE, &instance_path(&id), Body::Empty)
                .await?;
            ctx.done(
                &format!("VNF instance {id} deleted"),
                json!({"id": id, "deleted": true}),
            )
        }
        VnfCommand::Task(task) => start_task(ctx, &task).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `vnfm vnf` as the command line gives it.
    #[derive(Debug, clap::Parser)]
    struct VnfLine {
        #[command(flatten)]
        conn: super::super::config::ClientArgs,
        #[command(subcommand)]
        cmd: VnfCommand,
    }

    #[test]
    fn every_task_starts_with_its_method_and_resource() {
        use clap::Parser;
        let dir = tempfile::tempdir().unwrap();
        let links = dir.path().join("links.json");
        std::fs::write(&links, r#"{"extVirtualLinks": []}"#).unwrap();
        let links = links.to_str().unwrap();
        let at = "/vnflcm/v2/vnf_instances/i-1";
        let cases: [(&[&str], Method, String); 9] = [
            (
                &["terminate", "i-1"],
                Method::POST,
                format!("{at}/terminate"),
            ),
            (&["heal", "i-1"], Method::POST, format!("{at}/heal")),
            (
                &["scale", "i-1", "--type", "out", "--aspect", "a"],
                Method::POST,
                format!("{at}/scale"),
            ),
            (
                &["scale-to-level", "i-1", "--level", "l"],
                Method::POST,
                format!("{at}/scale_to_level"),
            ),
            (
                &["change-flavour", "i-1", "--flavour", "f"],
                Method::POST,
                format!("{at}/change_flavour"),
            ),
            (
                &["operate", "i-1", "--state", "started"],
                Method::POST,
                format!("{at}/operate"),
            ),
            (
                &["change-ext-conn", "i-1", "--request", links],
                Method::POST,
                format!("{at}/change_ext_conn"),
            ),
            (
                &["change-pkg", "i-1", "--vnfd-id", "v"],
                Method::POST,
                format!("{at}/change_vnfpkg"),
            ),
            (
                &["modify", "i-1", "--name", "n"],
                Method::PATCH,
                at.to_owned(),
            ),
        ];
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for (args, method, path) in cases {
            let line = VnfLine::parse_from(std::iter::once("vnf").chain(args.iter().copied()));
            let VnfCommand::Task(task) = line.cmd else {
                panic!("{args:?} is not a task");
            };
            let ctx = super::super::Ctx::new(line.conn);
            let (m, p, body) = rt.block_on(task.request(&ctx)).unwrap();
            assert_eq!((&m, &p), (&method, &path), "{args:?}");
            let patch = matches!(body, Body::MergePatch(_));
            assert_eq!(patch, method == Method::PATCH, "{args:?}");
            assert_eq!(task.args().id, "i-1");
        }
    }

    fn task(request: Option<PathBuf>, params: &[&str]) -> TaskArgs {
        TaskArgs {
            id: "i".into(),
            request,
            params: params.iter().map(|p| p.parse().unwrap()).collect(),
            wait: false,
            timeout: 1,
            preview: false,
        }
    }

    #[test]
    fn key_value_parses_json_values_or_keeps_strings() {
        let kv: KeyValue = "n=3".parse().unwrap();
        assert_eq!(kv.value, json!(3));
        let kv: KeyValue = "o={\"a\":1}".parse().unwrap();
        assert_eq!(kv.value, json!({"a": 1}));
        let kv: KeyValue = "s=hello world".parse().unwrap();
        assert_eq!(kv.value, json!("hello world"));
        let kv: KeyValue = "eq=a=b".parse().unwrap();
        assert_eq!((kv.key.as_str(), kv.value), ("eq", json!("a=b")));
        assert!("novalue".parse::<KeyValue>().is_err());
        assert!("=x".parse::<KeyValue>().is_err());
    }

    #[test]
    fn flags_override_the_request_file_and_params_merge() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("scale.yaml");
        std::fs::write(
            &file,
            "type: SCALE_IN\naspectId: from_file\nnumberOfSteps: 2\nadditionalParams:\n  keep: 1\n",
        )
        .unwrap();
        let a = ScaleArgs {
            task: task(Some(file), &["extra=true"]),
            kind: None,
            aspect: Some("VDU1_scale".into()),
            steps: None,
        };
        let body = Value::Object(scale_body(&a).unwrap());
        assert_eq!(
            body,
            json!({"type": "SCALE_IN", "aspectId": "VDU1_scale", "numberOfSteps": 2,
                   "additionalParams": {"keep": 1, "extra": true}})
        );
    }

    #[test]
    fn defaults_and_required_fields() {
        let a = ScaleArgs {
            task: task(None, &[]),
            kind: None,
            aspect: None,
            steps: None,
        };
        let e = scale_body(&a).unwrap_err();
        assert!(e.to_string().contains("--aspect"), "{e}");
        assert_eq!(e.exit_code(), 2);
        let t = TerminateArgs {
            task: task(None, &[]),
            kind: None,
            graceful_timeout: Some(5),
        };
        assert_eq!(
            Value::Object(terminate_body(&t).unwrap()),
            json!({"terminationType": "GRACEFUL", "gracefulTerminationTimeout": 5})
        );
        let t = TerminateArgs {
            task: task(None, &[]),
            kind: Some(TerminationKind::Forceful),
            graceful_timeout: Some(5),
        };
        assert!(terminate_body(&t).is_err());
        let s2l = ScaleToLevelArgs {
            task: task(None, &[]),
            level: None,
            aspect_levels: vec!["VDU1_scale=2".parse().unwrap()],
        };
        assert_eq!(
            Value::Object(scale_to_level_body(&s2l).unwrap()),
            json!({"scaleInfo": [{"aspectId": "VDU1_scale", "scaleLevel": 2}]})
        );
        let bad = ScaleToLevelArgs {
            task: task(None, &[]),
            level: None,
            aspect_levels: vec!["VDU1_scale=high".parse().unwrap()],
        };
        assert!(scale_to_level_body(&bad).is_err());
        let m = ModifyArgs {
            task: task(None, &[]),
            name: None,
            description: None,
            vnfd_id: None,
            metadata: vec!["gone=null".parse().unwrap()],
            extensions: vec![],
        };
        assert_eq!(
            Value::Object(modify_body(&m).unwrap()),
            json!({"metadata": {"gone": null}})
        );
    }

    #[test]
    fn request_file_must_be_an_object() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("r.json");
        std::fs::write(&file, "[1, 2]").unwrap();
        assert!(matches!(
            load_request(&file),
            Err(ClientError::BadFile { .. })
        ));
        std::fs::write(&file, "{\"a\": ").unwrap();
        assert!(matches!(
            load_request(&file),
            Err(ClientError::BadFile { .. })
        ));
    }

    #[test]
    fn instance_table_lists_vnfcs_and_scale_levels() {
        let v = json!({"id": "i1", "vnfInstanceName": "demo", "vnfdId": "d", "instantiationState": "INSTANTIATED",
            "vnfProductName": "P", "vnfSoftwareVersion": "1.0", "vnfProvider": "Co",
            "vimConnectionInfo": {"vim1": {"vimType": "TEST.NOOP.V_1"}},
            "instantiatedVnfInfo": {"flavourId": "simple", "vnfState": "STARTED",
                "scaleStatus": [{"aspectId": "VDU1_scale", "scaleLevel": 1}],
                "vnfcInfo": [{"id": "c1", "vduId": "VDU1", "vnfcState": "STARTED"}]}});
        let text = instance_fields(&v);
        assert!(text.contains("Product:   P 1.0 (Co)"), "{text}");
        assert!(text.contains("Scale:     VDU1_scale=1"), "{text}");
        assert!(text.contains("VIMs:      vim1: TEST.NOOP.V_1"), "{text}");
        assert!(text.contains("  c1       VDU1  STARTED"), "{text}");
    }
}
