//! Following an operation occurrence to its end (`--wait`): a live spinner line (indicatif)
//! when the output is a terminal, one plain line per state change otherwise.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;

use super::error::{ClientError, Problem};
use super::http::Api;
use super::output::{count, s};

/// States in which an occurrence no longer changes by itself.
pub const FINAL_STATES: &[&str] = &["COMPLETED", "FAILED_TEMP", "FAILED", "ROLLED_BACK"];

/// Whether `state` is final.
pub fn is_final(state: &str) -> bool {
    FINAL_STATES.contains(&state)
}

/// Where the display goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output (table output).
    Stdout,
    /// Standard error (JSON/YAML output keeps stdout for the document).
    Stderr,
}

impl Stream {
    fn is_terminal(self) -> bool {
        match self {
            Stream::Stdout => std::io::stdout().is_terminal(),
            Stream::Stderr => std::io::stderr().is_terminal(),
        }
    }

    fn line(self, text: &str) {
        // A closed pipe must not stop the wait.
        let _ = match self {
            Stream::Stdout => writeln!(std::io::stdout(), "{text}"),
            Stream::Stderr => writeln!(std::io::stderr(), "{text}"),
        };
    }
}

/// Short form of an id for one-line displays.
pub fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// What changed so far, from `resourceChanges` (e.g. "+2 VNFC, -1 VNFC").
fn changes(occ: &Value) -> String {
    let mut added = 0;
    let mut removed = 0;
    let mut modified = 0;
    for c in occ
        .pointer("/resourceChanges/affectedVnfcs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match c.get("changeType").and_then(Value::as_str) {
            Some("ADDED") => added += 1,
            Some("REMOVED") => removed += 1,
            Some("MODIFIED") => modified += 1,
            _ => {}
        }
    }
    let mut parts = Vec::new();
    if added > 0 {
        parts.push(format!("+{added} VNFC"));
    }
    if removed > 0 {
        parts.push(format!("-{removed} VNFC"));
    }
    if modified > 0 {
        parts.push(format!("~{modified} VNFC"));
    }
    let vls = count(occ, "/resourceChanges/affectedVirtualLinks");
    if vls > 0 {
        parts.push(format!("{vls} VL"));
    }
    parts.join(", ")
}

/// The one-line description of an occurrence's current state.
pub fn status_line(occ: &Value) -> String {
    let mut line = format!(
        "{} {} {}",
        s(occ, "/operation"),
        short(&s(occ, "/id")),
        s(occ, "/operationState")
    );
    if occ.get("isCancelPending") == Some(&Value::Bool(true)) {
        line.push_str(" (cancel pending)");
    }
    let c = changes(occ);
    if !c.is_empty() {
        line.push_str(&format!(" [{c}]"));
    }
    let step = s(occ, "/error/step");
    if !step.is_empty() {
        line.push_str(&format!(" at step {step}"));
    }
    line
}

/// "step 2/4 hook:instantiate_end" from a progress document (`/vnfm/v1/.../progress`), when a
/// step runs or failed.
pub fn step_text(progress: &Value) -> Option<String> {
    let current = progress.get("currentStep")?.as_str()?;
    let steps = progress.get("steps")?.as_array()?;
    let number = steps
        .iter()
        .find(|st| st.get("name").and_then(Value::as_str) == Some(current))
        .and_then(|st| st.get("number"))
        .and_then(Value::as_u64)?;
    let rollback = if progress.get("phase").and_then(Value::as_str) == Some("rollback") {
        "rollback "
    } else {
        ""
    };
    Some(format!("{rollback}step {number}/{} {current}", steps.len()))
}

fn fmt_elapsed(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        format!("{}m{:02}s", d.as_secs() / 60, d.as_secs() % 60)
    }
}

/// The live display of one awaited operation.
pub enum Display {
    /// A spinner line redrawn in place (terminal), on this stream.
    Live(ProgressBar, Stream),
    /// One line per change (pipe or file).
    Plain(Stream),
}

impl Display {
    /// A display on `stream`, showing `label` until the first state is known; it starts
    /// before the request is sent, so a slow server shows as time passing.
    pub fn start(stream: Stream, label: &str) -> Display {
        if !stream.is_terminal() {
            return Display::Plain(stream);
        }
        let target = match stream {
            Stream::Stdout => ProgressDrawTarget::stdout(),
            Stream::Stderr => ProgressDrawTarget::stderr(),
        };
        let bar = ProgressBar::with_draw_target(None, target);
        let style = ProgressStyle::with_template("{spinner} {msg}  {elapsed_precise}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        bar.set_style(style);
        bar.set_message(label.to_owned());
        bar.enable_steady_tick(Duration::from_millis(100));
        Display::Live(bar, stream)
    }

    /// Shows the current state; `changed` when it differs from the last shown one.
    fn update(&self, line: &str, changed: bool, since: Duration) {
        match self {
            Display::Live(bar, _) => {
                if changed {
                    bar.set_message(line.to_owned());
                }
            }
            Display::Plain(stream) => {
                if changed {
                    stream.line(&format!("[{}] {line}", fmt_elapsed(since)));
                }
            }
        }
    }

    fn finish(&self, line: &str, since: Duration) {
        let text = format!("{line} after {}", fmt_elapsed(since));
        match self {
            Display::Live(bar, stream) => {
                bar.set_style(
                    ProgressStyle::with_template("{msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                bar.finish_with_message(text);
                // indicatif leaves the cursor after the last frame: end the line so what
                // follows (the prompt, an error) starts on its own.
                stream.line("");
            }
            Display::Plain(stream) => stream.line(&text),
        }
    }

    /// Removes the live line (before an error is printed).
    pub fn abandon(&self) {
        if let Display::Live(bar, _) = self {
            bar.finish_and_clear();
        }
    }
}

/// Polls the occurrence until it is final (or `timeout` expires), showing its progress on
/// `display`; returns the final document.
pub async fn follow(
    api: &Api,
    op_id: &str,
    display: &Display,
    timeout: Duration,
) -> Result<Value, ClientError> {
    let path = format!("/vnflcm/v2/vnf_lcm_op_occs/{}", super::seg(op_id));
    let progress_path = format!("/vnfm/v1/vnf_lcm_op_occs/{}/progress", super::seg(op_id));
    let mut with_steps = true;
    let start = Instant::now();
    let mut last = String::new();
    let mut delay = Duration::from_millis(100);
    loop {
        let occ = match api.get(&path).await {
            Ok(o) => o,
            Err(e) => {
                display.abandon();
                return Err(e);
            }
        };
        let mut line = status_line(&occ);
        let state = s(&occ, "/operationState");
        if is_final(&state) {
            display.finish(&line, start.elapsed());
            return Ok(occ);
        }
        if with_steps {
            match api.get(&progress_path).await {
                Ok(progress) => {
                    if let Some(step) = step_text(&progress) {
                        line.push(' ');
                        line.push_str(&step);
                    }
                }
                // A server without the progress resource: show states only.
                Err(ClientError::Problem { problem, .. }) if problem.status == 404 => {
                    with_steps = false;
                }
                // The step is extra information: a failed read leaves it out this time.
                Err(_) => {}
            }
        }
        let changed = line != last;
        display.update(&line, changed, start.elapsed());
        if changed {
            last = line;
            delay = Duration::from_millis(100);
        }
        if start.elapsed() >= timeout {
            display.abandon();
            return Err(ClientError::Timeout {
                what: format!("operation occurrence {op_id}"),
                seconds: timeout.as_secs(),
            });
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(1));
    }
}

/// `Err(OperationFailed)` when the final occurrence did not complete.
pub fn outcome(occ: &Value) -> Result<(), ClientError> {
    outcome_expecting(occ, &["COMPLETED"])
}

/// `Err(OperationFailed)` when the final occurrence is not in one of the `wanted` states
/// (e.g. `ROLLED_BACK` for a rollback).
pub fn outcome_expecting(occ: &Value, wanted: &[&str]) -> Result<(), ClientError> {
    let state = s(occ, "/operationState");
    if !wanted.contains(&state.as_str()) {
        let problem = match occ.get("error") {
            Some(e @ Value::Object(_)) => Problem::from_value(500, e.clone()),
            _ => Problem::from_value(
                500,
                serde_json::json!({"detail": format!("the operation ended in {state} without an error report")}),
            ),
        };
        return Err(ClientError::OperationFailed {
            id: s(occ, "/id"),
            operation: s(occ, "/operation"),
            state,
            problem: Box::new(problem),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn status_line_shows_state_changes_and_failing_step() {
        let occ = json!({"id": "0123456789ab", "operation": "SCALE", "operationState": "PROCESSING",
            "resourceChanges": {"affectedVnfcs": [{"changeType": "ADDED"}, {"changeType": "ADDED"}]}});
        assert_eq!(status_line(&occ), "SCALE 01234567 PROCESSING [+2 VNFC]");
        let failed = json!({"id": "x", "operation": "HEAL", "operationState": "FAILED_TEMP",
            "isCancelPending": true, "error": {"status": 500, "title": "Driver failed", "detail": "boom", "step": "heal-vnfc"}});
        assert_eq!(
            status_line(&failed),
            "HEAL x FAILED_TEMP (cancel pending) at step heal-vnfc"
        );
    }

    #[test]
    fn outcome_maps_failure_states_to_errors_with_the_problem() {
        assert!(outcome(&json!({"operationState": "COMPLETED"})).is_ok());
        let e = outcome(
            &json!({"id": "o", "operation": "INSTANTIATE", "operationState": "ROLLED_BACK",
            "error": {"status": 422, "title": "Unprocessable", "detail": "no such flavour"}}),
        )
        .unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert_eq!(
            e.to_string(),
            "INSTANTIATE o ended in ROLLED_BACK: 422 Unprocessable: no such flavour"
        );
        let e =
            outcome(&json!({"id": "o", "operation": "X", "operationState": "FAILED"})).unwrap_err();
        assert!(e.to_string().contains("without an error report"), "{e}");
    }

    #[test]
    fn step_text_names_the_running_step_and_its_position() {
        let p = json!({"phase": "forward", "currentStep": "hook:instantiate_end", "steps": [
            {"number": 1, "name": "infra:instantiate", "status": "COMPLETED"},
            {"number": 2, "name": "hook:instantiate_end", "status": "RUNNING"}]});
        assert_eq!(
            step_text(&p).as_deref(),
            Some("step 2/2 hook:instantiate_end")
        );
        let r = json!({"phase": "rollback", "currentStep": "infra:instantiate", "steps": [
            {"number": 1, "name": "infra:instantiate", "status": "RUNNING"}]});
        assert_eq!(
            step_text(&r).as_deref(),
            Some("rollback step 1/1 infra:instantiate")
        );
        assert_eq!(step_text(&json!({"steps": []})), None);
    }

    #[test]
    fn elapsed_formatting() {
        assert_eq!(fmt_elapsed(Duration::from_millis(1500)), "1.5s");
        assert_eq!(fmt_elapsed(Duration::from_secs(125)), "2m05s");
    }
}
