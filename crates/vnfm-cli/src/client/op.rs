//! `vnfm op`: lifecycle operation occurrences: list, show, retry, rollback, fail, cancel, and
//! `watch`, a live view of state changes (polling with backoff, or the notification stream
//! through a subscription to a local callback).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand, ValueEnum};
use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::Ctx;
use super::config::OutputFormat;
use super::error::ClientError;
use super::http::{Api, Body};
use super::output::{self, Table, fields, s};
use super::progress::{self, Stream};

/// `vnfm op ...`.
#[derive(Debug, Subcommand)]
pub enum OpCommand {
    /// List operation occurrences.
    List(ListArgs),
    /// Show one operation occurrence, with its error when it failed.
    Show {
        /// Operation occurrence id.
        id: String,
        /// Show its steps instead: when each ran, for how long and how it ended.
        #[arg(long)]
        timeline: bool,
    },
    /// Retry a FAILED_TEMP occurrence (with --wait: exit 0 when it then COMPLETES).
    Retry(FollowArgs),
    /// Roll back a FAILED_TEMP occurrence (with --wait: exit 0 when it is ROLLED_BACK).
    Rollback(FollowArgs),
    /// Mark a FAILED_TEMP occurrence as FAILED (final).
    Fail {
        /// Operation occurrence id.
        id: String,
    },
    /// Cancel a STARTING or PROCESSING (or ROLLING_BACK) occurrence (with --wait: exit 0
    /// when it stops in FAILED_TEMP, ROLLED_BACK or FAILED, 1 when it COMPLETED anyway).
    Cancel(CancelArgs),
    /// Follow state changes of operation occurrences as they happen.
    Watch(WatchArgs),
}

/// `vnfm op list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only the occurrences of this VNF instance.
    #[arg(long)]
    pub vnf: Option<String>,
    /// Only occurrences in this state (e.g. FAILED_TEMP).
    #[arg(long)]
    pub state: Option<String>,
    /// Only this operation (e.g. INSTANTIATE).
    #[arg(long)]
    pub operation: Option<String>,
    /// Further SOL013 filter terms, e.g. `(gt,startTime,2026-01-01T00:00:00Z)`.
    #[arg(long)]
    pub filter: Option<String>,
}

/// An action on an occurrence that can be followed with `--wait`.
#[derive(Debug, Args)]
pub struct FollowArgs {
    /// Operation occurrence id.
    pub id: String,
    /// Follow the occurrence to its end; exit 1 when it does not end as the action intends.
    #[arg(long, short = 'w')]
    pub wait: bool,
    /// With --wait: give up after this many seconds (exit 4).
    #[arg(long, default_value_t = 3600, value_name = "SECONDS")]
    pub timeout: u64,
}

/// `cancelMode`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum CancelMode {
    /// GRACEFUL: stop at the next step boundary.
    #[value(alias = "GRACEFUL")]
    Graceful,
    /// FORCEFUL: interrupt the running step.
    #[value(alias = "FORCEFUL")]
    Forceful,
}

/// `vnfm op cancel`.
#[derive(Debug, Args)]
pub struct CancelArgs {
    #[command(flatten)]
    pub follow: FollowArgs,
    /// `cancelMode`.
    #[arg(long, value_enum, default_value = "graceful")]
    pub mode: CancelMode,
}

/// `vnfm op watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Only the occurrences of this VNF instance.
    #[arg(long)]
    pub vnf: Option<String>,
    /// Stop after this many state changes.
    #[arg(long, value_name = "N")]
    pub count: Option<usize>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<u64>,
    /// Receive notifications instead of polling: listen on ADDR:PORT for the server's
    /// callbacks (a subscription is created, and deleted on exit).
    #[arg(long, value_name = "ADDR:PORT")]
    pub notify: Option<SocketAddr>,
    /// With --notify: the callback URI the server should use, when it reaches this host by
    /// another address [default: http://ADDR:PORT/notify].
    #[arg(long, value_name = "URL", requires = "notify")]
    pub callback_url: Option<String>,
    /// Longest pause between two polls, in seconds (polls start every 0.5 s and slow down
    /// while nothing changes).
    #[arg(long, default_value_t = 5.0, value_name = "SECONDS")]
    pub max_interval: f64,
}

fn occ_path(id: &str) -> String {
    format!("/vnflcm/v2/vnf_lcm_op_occs/{}", super::seg(id))
}

/// The SOL013 filter of `op list`/`op watch`.
fn filter(
    vnf: Option<&str>,
    state: Option<&str>,
    operation: Option<&str>,
    extra: Option<&str>,
) -> Option<String> {
    let mut terms = Vec::new();
    if let Some(v) = vnf {
        terms.push(format!("(eq,vnfInstanceId,{v})"));
    }
    if let Some(s) = state {
        terms.push(format!("(eq,operationState,{s})"));
    }
    if let Some(o) = operation {
        terms.push(format!("(eq,operation,{o})"));
    }
    if let Some(f) = extra {
        terms.push(f.to_owned());
    }
    (!terms.is_empty()).then(|| terms.join(";"))
}

/// The table view of an occurrence.
pub fn occ_fields(o: &Value) -> String {
    let mut pairs = vec![
        ("ID", s(o, "/id")),
        ("Operation", s(o, "/operation")),
        ("State", s(o, "/operationState")),
        ("VNF instance", s(o, "/vnfInstanceId")),
        ("Started", s(o, "/startTime")),
        ("State entered", s(o, "/stateEnteredTime")),
        (
            "Automatic",
            if o.get("isAutomaticInvocation") == Some(&Value::Bool(true)) {
                "yes".into()
            } else {
                String::new()
            },
        ),
        (
            "Cancel pending",
            if o.get("isCancelPending") == Some(&Value::Bool(true)) {
                format!("yes ({})", s(o, "/cancelMode"))
            } else {
                String::new()
            },
        ),
        ("Parameters", output::compact(o, "/operationParams")),
    ];
    let changes: Vec<String> = o
        .pointer("/resourceChanges/affectedVnfcs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{} {} ({})",
                s(c, "/changeType"),
                s(c, "/id"),
                s(c, "/vduId")
            )
        })
        .collect();
    pairs.push(("VNFC changes", changes.join("\n")));
    if o.get("error").is_some_and(Value::is_object) {
        pairs.push(("Error", s(o, "/error/title")));
        pairs.push(("Detail", s(o, "/error/detail")));
        pairs.push(("Failed step", s(o, "/error/step")));
    }
    let warnings: Vec<String> = o
        .pointer("/warnings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|w| w.as_str().map(str::to_owned))
        .collect();
    pairs.push(("Warnings", warnings.join("\n")));
    fields(&pairs)
}

/// Sends `action` for the occurrence; with `--wait`, follows it and succeeds when it ends in
/// one of `wanted`.
async fn act(
    ctx: &Ctx,
    follow: &FollowArgs,
    action: &str,
    body: Body,
    wanted: &[&str],
) -> Result<(), ClientError> {
    let api = ctx.api()?;
    let display = follow.wait.then(|| {
        progress::Display::start(
            if ctx.format == OutputFormat::Table {
                Stream::Stdout
            } else {
                Stream::Stderr
            },
            &format!(
                "{} {}: submitting",
                action.to_ascii_uppercase(),
                progress::short(&follow.id)
            ),
        )
    });
    if let Err(e) = api
        .call(
            Method::POST,
            &format!("{}/{action}", occ_path(&follow.id)),
            body,
        )
        .await
    {
        if let Some(d) = &display {
            d.abandon();
        }
        return Err(e);
    }
    let Some(display) = display else {
        return ctx.done(
            &format!("{action} of operation occurrence {} accepted", follow.id),
            json!({"vnfLcmOpOccId": follow.id, "accepted": action}),
        );
    };
    let occ = progress::follow(
        api,
        &follow.id,
        &display,
        Duration::from_secs(follow.timeout),
    )
    .await?;
    if ctx.format != OutputFormat::Table {
        output::emit(&output::document(ctx.format, &occ))?;
    }
    progress::outcome_expecting(&occ, wanted)
}

/// One state change seen by `watch`.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// When it was seen or notified.
    pub time: String,
    /// The occurrence.
    pub op_id: String,
    /// Its VNF instance.
    pub vnf_id: String,
    /// The operation.
    pub operation: String,
    /// The previous state, when known.
    pub from: Option<String>,
    /// The new state.
    pub to: String,
    /// A notification that arrived after a later one of the same occurrence (the server
    /// delivers concurrently): shown, but not taken as the current state.
    pub late: bool,
    /// A change polling did not see but that must have happened: the SOL003 state machine
    /// has no other way from the state seen before to the one seen now (e.g. PROCESSING
    /// between a new occurrence and COMPLETED).
    pub inferred: bool,
}

impl Event {
    fn line(&self) -> String {
        let from = if self.late {
            "(late)"
        } else {
            self.from.as_deref().unwrap_or("(new)")
        };
        format!(
            "{}  {:<14} {}  vnf {}  {from} -> {}{}",
            self.time,
            self.operation,
            self.op_id,
            progress::short(&self.vnf_id),
            self.to,
            if self.inferred { " (inferred)" } else { "" }
        )
    }

    fn doc(&self) -> Value {
        json!({"time": self.time, "vnfLcmOpOccId": self.op_id, "vnfInstanceId": self.vnf_id,
               "operation": self.operation, "from": self.from, "to": self.to, "late": self.late,
               "inferred": self.inferred})
    }

    fn print(&self, format: OutputFormat) -> Result<(), ClientError> {
        match format {
            OutputFormat::Table => output::emit(&format!("{}\n", self.line())),
            OutputFormat::Json => output::emit(&format!("{}\n", self.doc())),
            OutputFormat::Yaml => output::emit(&format!(
                "---\n{}",
                output::document(OutputFormat::Yaml, &self.doc())
            )),
        }
    }
}

/// What polling last saw of an occurrence: its state and `stateEnteredTime`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    /// `operationState`.
    pub state: String,
    /// `stateEnteredTime` (a change with the same state is a round trip polling missed).
    pub entered: String,
}

/// Compares a new listing with what was seen before; returns the changes, with the ones
/// polling missed but the SOL003 state machine implies ([`implied_states`]) marked
/// `inferred`, and updates `known`. `infer_new` also fills in the way of an occurrence seen
/// for the first time (not for the first listing, whose history is not news).
pub fn diff(
    known: &mut HashMap<String, Seen>,
    list: &[Value],
    now: &str,
    infer_new: bool,
) -> Vec<Event> {
    let mut events = Vec::new();
    for o in list {
        let id = s(o, "/id");
        let seen = Seen {
            state: s(o, "/operationState"),
            entered: s(o, "/stateEnteredTime"),
        };
        if id.is_empty() || seen.state.is_empty() {
            continue;
        }
        let before = known.insert(id.clone(), seen.clone());
        let event = |from: Option<&str>, to: &str, inferred: bool| Event {
            time: now.to_owned(),
            op_id: id.clone(),
            vnf_id: s(o, "/vnfInstanceId"),
            operation: s(o, "/operation"),
            from: from.map(str::to_owned),
            to: to.to_owned(),
            late: false,
            inferred,
        };
        match &before {
            Some(b) if b.state == seen.state => {
                // Left and re-entered between two polls (a retry or rollback that failed
                // again): which way it went is not known, only that it did.
                if !b.entered.is_empty() && b.entered != seen.entered {
                    events.push(event(Some(&b.state), &seen.state, false));
                }
            }
            None if !infer_new => events.push(event(None, &seen.state, false)),
            _ => {
                let mut from = before.as_ref().map(|b| b.state.clone());
                for state in implied_states(from.as_deref(), &seen.state) {
                    events.push(event(from.as_deref(), &state, true));
                    from = Some(state);
                }
                events.push(event(from.as_deref(), &seen.state, false));
            }
        }
    }
    events
}

/// The states an occurrence must have passed through between `from` (`None`: it is new, so
/// it started in STARTING) and `to`: those on every way from one to the other in the SOL003
/// state machine ([`vnfm::lcm::state`]), in order. A state several ways lead past (STARTING
/// to FAILED_TEMP, directly or through PROCESSING) is not implied.
pub fn implied_states(from: Option<&str>, to: &str) -> Vec<String> {
    use vnfm::lcm::state::{Event as Happening, transition};
    use vnfm::lcm::types::LcmOperationStateType as State;
    let parse = |name: &str| serde_json::from_value::<State>(Value::String(name.to_owned())).ok();
    let name = |state: State| {
        serde_json::to_value(state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    let (Some(to), start) = (parse(to), from.map_or(Some(State::Starting), parse)) else {
        return Vec::new();
    };
    let Some(start) = start else {
        return Vec::new();
    };
    let next = |s: State| -> Vec<State> {
        Happening::ALL
            .iter()
            .filter_map(|e| transition(s, *e).ok())
            .filter(|t| *t != s)
            .collect()
    };
    // The shortest way (breadth first), avoiding `banned`.
    let shortest = |banned: Option<State>| -> Option<Vec<State>> {
        let mut paths = vec![vec![start]];
        let mut visited = vec![start];
        while !paths.is_empty() {
            let mut longer = Vec::new();
            for path in paths {
                let last = *path.last()?;
                if last == to && path.len() > 1 {
                    return Some(path);
                }
                for n in next(last) {
                    if Some(n) == banned || (visited.contains(&n) && n != to) {
                        continue;
                    }
                    visited.push(n);
                    let mut p = path.clone();
                    p.push(n);
                    longer.push(p);
                }
            }
            paths = longer;
        }
        None
    };
    let mut out = Vec::new();
    if from.is_none() && to != State::Starting {
        out.push(name(State::Starting));
    }
    if start == to {
        return out;
    }
    let Some(path) = shortest(None) else {
        return out;
    };
    for &state in &path[1..path.len() - 1] {
        // On every way when no way is left without it.
        if shortest(Some(state)).is_none() {
            out.push(name(state));
        }
    }
    out
}

/// Whether a notification of state `to` is older than the `current` one: nothing follows
/// COMPLETED, FAILED or ROLLED_BACK (FAILED_TEMP may go on with a retry or a rollback), and
/// STARTING comes first.
fn is_late(current: Option<&str>, to: &str) -> bool {
    match current {
        None => false,
        Some(c) => {
            matches!(c, "COMPLETED" | "FAILED" | "ROLLED_BACK")
                || (to == "STARTING" && c != "STARTING")
        }
    }
}

fn now_utc() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Ends the watch: count reached, time out, or Ctrl-C.
struct Limits {
    count: Option<usize>,
    deadline: Option<Instant>,
    seen: usize,
}

impl Limits {
    fn record(&mut self, n: usize) -> bool {
        self.seen += n;
        self.count.is_some_and(|c| self.seen >= c)
    }

    fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }
}

async fn watch_polling(
    ctx: &Ctx,
    api: &Api,
    a: &WatchArgs,
    limits: &mut Limits,
) -> Result<(), ClientError> {
    let query: Vec<(&str, String)> = filter(a.vnf.as_deref(), None, None, None)
        .map(|f| vec![("filter", f)])
        .unwrap_or_default();
    let mut known: HashMap<String, Seen> = HashMap::new();
    // The first listing is the baseline: only running occurrences are shown from it.
    let first = api.list("/vnflcm/v2/vnf_lcm_op_occs", &query).await?;
    let now = now_utc();
    for e in diff(&mut known, &first, &now, false) {
        if !progress::is_final(&e.to) {
            e.print(ctx.format)?;
        }
    }
    eprintln!("watching operation occurrences by polling (Ctrl-C to stop)");
    let min = Duration::from_millis(500);
    let max = Duration::from_secs_f64(a.max_interval.clamp(0.5, 300.0));
    let mut interval = min;
    loop {
        let pause = match limits.remaining() {
            Some(r) if r.is_zero() => return Ok(()),
            Some(r) => interval.min(r),
            None => interval,
        };
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = tokio::signal::ctrl_c() => return Ok(()),
        }
        let list = match api.list("/vnflcm/v2/vnf_lcm_op_occs", &query).await {
            Ok(l) => l,
            // A server restart or a network blip does not end the watch: keep polling.
            Err(e @ ClientError::Connect { .. }) => {
                eprintln!("warning: {e}; retrying");
                interval = (interval * 2).min(max);
                continue;
            }
            Err(e) => return Err(e),
        };
        let events = diff(&mut known, &list, &now_utc(), true);
        if events.is_empty() {
            interval = (interval * 2).min(max);
            continue;
        }
        interval = min;
        for e in &events {
            e.print(ctx.format)?;
        }
        if limits.record(events.len()) {
            return Ok(());
        }
    }
}

async fn watch_notifications(
    ctx: &Ctx,
    api: &Api,
    a: &WatchArgs,
    addr: SocketAddr,
    limits: &mut Limits,
) -> Result<(), ClientError> {
    use axum::http::StatusCode;
    use axum::routing::get;
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    let app = axum::Router::new().route(
        "/notify",
        get(|| async { StatusCode::NO_CONTENT }).post(
            move |axum::Json(body): axum::Json<Value>| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send(body);
                    StatusCode::NO_CONTENT
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| ClientError::Usage(format!("--notify {addr}: cannot listen: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| ClientError::Usage(format!("--notify {addr}: {e}")))?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let callback = a
        .callback_url
        .clone()
        .unwrap_or_else(|| format!("http://{bound}/notify"));
    let mut sub_filter = json!({"notificationTypes": ["VnfLcmOperationOccurrenceNotification"]});
    if let Some(v) = &a.vnf {
        sub_filter["vnfInstanceSubscriptionFilter"] = json!({"vnfInstanceIds": [v]});
    }
    let sub = api
        .call(
            Method::POST,
            "/vnflcm/v2/subscriptions",
            Body::Json(json!({"callbackUri": callback, "filter": sub_filter})),
        )
        .await?
        .body;
    let sub_id = s(&sub, "/id");
    eprintln!("watching through subscription {sub_id} (callback {callback})");
    let mut last: HashMap<String, String> = HashMap::new();
    let result = loop {
        let wait = limits.remaining();
        if wait.is_some_and(|r| r.is_zero()) {
            break Ok(());
        }
        let received = tokio::select! {
            n = rx.recv() => n,
            _ = tokio::time::sleep(wait.unwrap_or(Duration::from_secs(86_400))) => continue,
            _ = tokio::signal::ctrl_c() => break Ok(()),
        };
        let Some(n) = received else {
            break Ok(());
        };
        let op_id = s(&n, "/vnfLcmOpOccId");
        let to = s(&n, "/operationState");
        let current = last.get(&op_id).cloned();
        let late = is_late(current.as_deref(), &to);
        let from = if late {
            None
        } else {
            last.insert(op_id.clone(), to.clone())
        };
        let time = s(&n, "/timeStamp");
        let e = Event {
            time: if time.is_empty() { now_utc() } else { time },
            op_id,
            vnf_id: s(&n, "/vnfInstanceId"),
            operation: s(&n, "/operation"),
            from,
            to,
            late,
            inferred: false,
        };
        if let Err(err) = e.print(ctx.format) {
            break Err(err);
        }
        if limits.record(1) {
            break Ok(());
        }
    };
    // The subscription is ours: leave nothing behind on the server.
    if !sub_id.is_empty() {
        let _ = api
            .call(
                Method::DELETE,
                &format!("/vnflcm/v2/subscriptions/{}", super::seg(&sub_id)),
                Body::Empty,
            )
            .await;
    }
    result
}

/// Runs a `vnfm op` command.
pub async fn run(ctx: &Ctx, cmd: OpCommand) -> Result<(), ClientError> {
    match cmd {
        OpCommand::List(a) => {
            let query: Vec<(&str, String)> = filter(
                a.vnf.as_deref(),
                a.state.as_deref(),
                a.operation.as_deref(),
                a.filter.as_deref(),
            )
            .map(|f| vec![("filter", f)])
            .unwrap_or_default();
            let list = Value::Array(
                ctx.api()?
                    .list("/vnflcm/v2/vnf_lcm_op_occs", &query)
                    .await?,
            );
            output::print(ctx.format, &list, |v| {
                let mut t = Table::new(&["ID", "OPERATION", "STATE", "VNF INSTANCE", "STARTED"]);
                for o in v.as_array().into_iter().flatten() {
                    t.row(vec![
                        s(o, "/id"),
                        s(o, "/operation"),
                        s(o, "/operationState"),
                        s(o, "/vnfInstanceId"),
                        s(o, "/startTime"),
                    ]);
                }
                t.render()
            })
        }
        OpCommand::Show { id, timeline: true } => {
            let t = ctx.api()?.get(&super::timeline::path(&id)).await?;
            output::print(ctx.format, &t, super::timeline::render)
        }
        OpCommand::Show { id, .. } => {
            let o = ctx.api()?.get(&occ_path(&id)).await?;
            output::print(ctx.format, &o, occ_fields)
        }
        OpCommand::Retry(f) => act(ctx, &f, "retry", Body::Empty, &["COMPLETED"]).await,
        OpCommand::Rollback(f) => act(ctx, &f, "rollback", Body::Empty, &["ROLLED_BACK"]).await,
        OpCommand::Fail { id } => {
            let api = ctx.api()?;
            let answer = api
                .call(
                    Method::POST,
                    &format!("{}/fail", occ_path(&id)),
                    Body::Empty,
                )
                .await?;
            let occ = if answer.body.is_object() {
                answer.body
            } else {
                api.get(&occ_path(&id)).await?
            };
            output::print(ctx.format, &occ, occ_fields)
        }
        OpCommand::Cancel(c) => {
            let mode = match c.mode {
                CancelMode::Graceful => "GRACEFUL",
                CancelMode::Forceful => "FORCEFUL",
            };
            // Any stop ends a cancellation; COMPLETED means it came too late.
            act(
                ctx,
                &c.follow,
                "cancel",
                Body::Json(json!({"cancelMode": mode})),
                &["FAILED_TEMP", "ROLLED_BACK", "FAILED"],
            )
            .await
        }
        OpCommand::Watch(a) => {
            let api = ctx.api()?;
            let mut limits = Limits {
                count: a.count,
                deadline: a.timeout.map(|t| Instant::now() + Duration::from_secs(t)),
                seen: 0,
            };
            match a.notify {
                Some(addr) => watch_notifications(ctx, api, &a, addr, &mut limits).await,
                None => watch_polling(ctx, api, &a, &mut limits).await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_terms_are_joined() {
        assert_eq!(filter(None, None, None, None), None);
        assert_eq!(
            filter(
                Some("v"),
                Some("FAILED_TEMP"),
                None,
                Some("(eq,operation,SCALE)")
            )
            .as_deref(),
            Some("(eq,vnfInstanceId,v);(eq,operationState,FAILED_TEMP);(eq,operation,SCALE)")
        );
    }

    #[test]
    fn diff_reports_new_and_changed_occurrences_only() {
        let mut known = HashMap::new();
        let l1 = vec![
            json!({"id": "a", "operationState": "PROCESSING", "operation": "SCALE", "vnfInstanceId": "v"}),
        ];
        let e = diff(&mut known, &l1, "t1", false);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].from, None);
        assert!(diff(&mut known, &l1, "t2", true).is_empty());
        let l2 = vec![
            json!({"id": "a", "operationState": "COMPLETED", "operation": "SCALE", "vnfInstanceId": "v"}),
            json!({"id": "b", "operationState": "STARTING", "operation": "HEAL", "vnfInstanceId": "v"}),
        ];
        let e = diff(&mut known, &l2, "t3", true);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].from.as_deref(), Some("PROCESSING"));
        assert_eq!(e[0].to, "COMPLETED");
        assert_eq!(
            e[0].line(),
            "t3  SCALE          a  vnf v  PROCESSING -> COMPLETED"
        );
        assert_eq!(
            e[1].line(),
            "t3  HEAL           b  vnf v  (new) -> STARTING"
        );
    }

    /// Regression (issue 25, item 11): `op watch` polling showed only the states it happened
    /// to see, so an occurrence that went STARTING -> PROCESSING -> COMPLETED between two
    /// polls appeared as `(new) -> COMPLETED`, and a retry that failed again as nothing. Now
    /// the transitions the state machine implies are shown, marked inferred, and a state
    /// re-entered (a new `stateEnteredTime`) is shown as a change.
    #[test]
    fn op_watch_polling_misses_quick_transitions() {
        let occ = |id: &str, state: &str, entered: &str| {
            json!({"id": id, "operationState": state, "stateEnteredTime": entered,
                   "operation": "SCALE", "vnfInstanceId": "v"})
        };
        let mut known = HashMap::new();
        let baseline = [
            occ("a", "PROCESSING", "t0"),
            occ("c", "FAILED_TEMP", "t0"),
            occ("d", "FAILED_TEMP", "t0"),
        ];
        assert_eq!(diff(&mut known, &baseline, "t0", false).len(), 3);
        let later = [
            occ("a", "COMPLETED", "t1"),
            occ("b", "COMPLETED", "t1"),
            occ("c", "ROLLED_BACK", "t1"),
            occ("d", "FAILED_TEMP", "t1"),
        ];
        let lines: Vec<String> = diff(&mut known, &later, "t1", true)
            .iter()
            .map(|e| {
                let from = e.from.as_deref().unwrap_or("(new)");
                let mark = if e.inferred { " (inferred)" } else { "" };
                format!("{} {from} -> {}{mark}", e.op_id, e.to)
            })
            .collect();
        assert_eq!(
            lines,
            [
                "a PROCESSING -> COMPLETED",
                "b (new) -> STARTING (inferred)",
                "b STARTING -> PROCESSING (inferred)",
                "b PROCESSING -> COMPLETED",
                "c FAILED_TEMP -> ROLLING_BACK (inferred)",
                "c ROLLING_BACK -> ROLLED_BACK",
                "d FAILED_TEMP -> FAILED_TEMP",
            ]
        );
        // Only what every way passes through is implied.
        assert!(implied_states(Some("STARTING"), "FAILED_TEMP").is_empty());
        assert_eq!(implied_states(None, "ROLLED_BACK"), ["STARTING"]);
        assert_eq!(
            implied_states(Some("PROCESSING"), "ROLLED_BACK"),
            ["FAILED_TEMP", "ROLLING_BACK"]
        );
        assert_eq!(
            implied_states(Some("FAILED_TEMP"), "COMPLETED"),
            ["PROCESSING"]
        );
        assert!(implied_states(Some("PROCESSING"), "COMPLETED").is_empty());
    }

    #[test]
    fn late_notifications_do_not_move_the_state_back() {
        assert!(!is_late(None, "PROCESSING"));
        assert!(is_late(Some("PROCESSING"), "STARTING"));
        assert!(is_late(Some("COMPLETED"), "PROCESSING"));
        assert!(!is_late(Some("FAILED_TEMP"), "PROCESSING"));
        assert!(!is_late(Some("STARTING"), "PROCESSING"));
        let e = Event {
            time: "t".into(),
            op_id: "o".into(),
            vnf_id: "v".into(),
            operation: "SCALE".into(),
            from: None,
            to: "STARTING".into(),
            late: true,
            inferred: false,
        };
        assert_eq!(e.line(), "t  SCALE          o  vnf v  (late) -> STARTING");
    }

    #[test]
    fn utc_time_is_rfc3339() {
        let t = now_utc();
        assert_eq!(t.len(), 20, "{t}");
        assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T', "{t}");
        assert!(t.as_str() > "2024-01-01");
        assert!(t.parse::<jiff::Timestamp>().is_ok(), "{t}");
    }
}
