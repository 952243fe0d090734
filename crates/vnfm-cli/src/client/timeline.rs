//! `vnfm op show --timeline`: the steps of an operation occurrence as a text timeline (start
//! offset, duration, outcome and a bar on a common scale), from the server's
//! `/vnfm/v1/vnf_lcm_op_occs/{id}/timeline` document.

use serde_json::Value;

use super::output::{Table, s};

/// Width of the bars, in characters.
const BAR_WIDTH: usize = 40;

/// The path of the timeline document of occurrence `id`.
pub fn path(id: &str) -> String {
    format!("/vnfm/v1/vnf_lcm_op_occs/{}/timeline", super::seg(id))
}

/// The timeline document as text: a heading, then one line per step run, offsets counted from
/// the start of the first step.
pub fn render(doc: &Value) -> String {
    let steps: Vec<Step> = doc
        .get("steps")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Step::read)
        .collect();
    let origin = steps.iter().map(|st| st.start).min().unwrap_or(0);
    let end = steps
        .iter()
        .map(|st| st.start + st.duration)
        .max()
        .unwrap_or(origin);
    let span = (end - origin).max(1);
    let mut out = format!(
        "{} {} {} (started {}; steps {})\n",
        s(doc, "/operation"),
        s(doc, "/vnfLcmOpOccId"),
        s(doc, "/operationState"),
        s(doc, "/startTime"),
        if steps.is_empty() {
            "not run yet".to_owned()
        } else {
            format!(
                "from {} to +{}",
                s(&steps[0].doc, "/start"),
                seconds(end - origin)
            )
        }
    );
    let mut table = Table::new(&["START", "DURATION", "OUTCOME", "STEP", "TIMELINE"]);
    for st in &steps {
        let mut name = format!("{} {}", s(&st.doc, "/number"), s(&st.doc, "/name"));
        if s(&st.doc, "/phase") == "rollback" {
            name.push_str(" (rollback)");
        }
        table.row(vec![
            format!("+{}", seconds(st.start - origin)),
            seconds(st.duration),
            s(&st.doc, "/outcome"),
            name,
            bar(st.start - origin, st.duration, span),
        ]);
    }
    out.push_str(&table.render());
    for st in steps.iter().filter(|st| st.doc.get("error").is_some()) {
        out.push_str(&format!(
            "{} {}: {}\n",
            s(&st.doc, "/number"),
            s(&st.doc, "/name"),
            s(&st.doc, "/error")
        ));
    }
    out
}

/// One step run of the document, with its start and duration in milliseconds.
struct Step {
    doc: Value,
    start: i64,
    duration: i64,
}

impl Step {
    fn read(doc: &Value) -> Option<Step> {
        let start = doc
            .get("start")?
            .as_str()?
            .parse::<jiff::Timestamp>()
            .ok()?;
        Some(Step {
            doc: doc.clone(),
            start: start.as_millisecond(),
            duration: doc.get("durationMs")?.as_i64()?.max(0),
        })
    }
}

/// `ms` as seconds with milliseconds (`1.250s`).
fn seconds(ms: i64) -> String {
    format!("{}.{:03}s", ms / 1000, ms % 1000)
}

/// `|   ####    |`: the part of `span` from `offset` for `duration`, at least one mark.
fn bar(offset: i64, duration: i64, span: i64) -> String {
    let scale = |ms: i64| usize::try_from(ms * BAR_WIDTH as i64 / span).unwrap_or(0);
    let from = scale(offset).min(BAR_WIDTH - 1);
    let len = scale(duration).clamp(1, BAR_WIDTH - from);
    format!(
        "|{}{}{}|",
        " ".repeat(from),
        "#".repeat(len),
        " ".repeat(BAR_WIDTH - from - len)
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn steps_are_drawn_on_one_scale_from_the_first_start() {
        let doc = json!({
            "vnfLcmOpOccId": "o1", "operation": "INSTANTIATE", "operationState": "FAILED_TEMP",
            "startTime": "2026-01-01T00:00:00Z",
            "steps": [
                {"phase": "forward", "number": 1, "name": "hook:instantiate_start",
                 "start": "2026-01-01T00:00:01.000Z", "durationMs": 1000, "outcome": "COMPLETED"},
                {"phase": "forward", "number": 2, "name": "infra:instantiate",
                 "start": "2026-01-01T00:00:02.000Z", "durationMs": 3000, "outcome": "FAILED",
                 "error": "Heat stack CREATE_FAILED"}
            ]
        });
        let text = render(&doc);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "INSTANTIATE o1 FAILED_TEMP (started 2026-01-01T00:00:00Z; steps from 2026-01-01T00:00:01.000Z to +4.000s)"
        );
        assert!(lines[1].starts_with("START"), "{text}");
        let first = format!("|{}{}|", "#".repeat(10), " ".repeat(30));
        let second = format!("|{}{}|", " ".repeat(10), "#".repeat(30));
        assert!(
            lines[2].contains("+0.000s") && lines[2].contains("1.000s"),
            "{text}"
        );
        assert!(
            lines[2].contains("1 hook:instantiate_start") && lines[2].ends_with(&first),
            "{text}"
        );
        assert!(
            lines[3].contains("+1.000s") && lines[3].contains("3.000s"),
            "{text}"
        );
        assert!(
            lines[3].contains("FAILED") && lines[3].ends_with(&second),
            "{text}"
        );
        assert_eq!(lines[4], "2 infra:instantiate: Heat stack CREATE_FAILED");
    }

    #[test]
    fn an_occurrence_without_steps_says_so() {
        let doc = json!({"vnfLcmOpOccId": "o1", "operation": "SCALE",
            "operationState": "STARTING", "startTime": "2026-01-01T00:00:00Z", "steps": []});
        assert!(
            render(&doc).starts_with(
                "SCALE o1 STARTING (started 2026-01-01T00:00:00Z; steps not run yet)\n"
            )
        );
    }
}
