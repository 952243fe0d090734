//! Scaling driven by VNF indicators: the instance's
//! `vnfConfigurableProperties.indicatorScaling` maps an indicator id to a rule, either
//!
//! - steps of an aspect: `{"aspectId": "web_scale", "numberOfSteps": 1, "scaleOutAbove": 80,
//!   "scaleInBelow": 20}` (either bound may be left out): a value that moves above
//!   `scaleOutAbove` asks for a SCALE_OUT, one that moves below `scaleInBelow` for a
//!   SCALE_IN; or
//! - instantiation levels: `{"levels": [{"atLeast": 0, "instantiationLevelId": "small"},
//!   {"atLeast": 100, "instantiationLevelId": "large"}]}`: a value that moves into another
//!   level's range asks for a SCALE_TO_LEVEL to it (the range of a level starts at its
//!   `atLeast` and ends at the next one's).
//!
//! Only a move into another band asks for anything, as a threshold crossing does: a value
//! that stays above `scaleOutAbove` does not scale out again and again. Pure: the decision
//! is [`IndicatorRule::decide`]; [`super::AutoScale::consider_indicator`] acts on it.

use serde::Deserialize;

pub use vnfm_lcm::automation::INDICATOR_SCALING_PROPERTY;

/// One indicator's scaling rule.
#[derive(Debug, Clone, PartialEq)]
pub enum IndicatorRule {
    /// Steps of an aspect when the value leaves the band between the bounds.
    Steps {
        /// The VNFD's scaling aspect.
        aspect_id: String,
        /// Steps per move.
        number_of_steps: u32,
        /// Above this, scale out.
        scale_out_above: Option<f64>,
        /// Below this, scale in.
        scale_in_below: Option<f64>,
    },
    /// Instantiation levels by value range, ascending by `at_least`.
    Levels(Vec<LevelRange>),
}

/// A level of an [`IndicatorRule::Levels`] rule.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LevelRange {
    /// The lowest value of the range.
    pub at_least: f64,
    /// The VNFD's instantiation level.
    pub instantiation_level_id: String,
}

/// What a rule asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum IndicatorAction {
    /// SCALE (out when `out`) of `aspect_id` by `steps`.
    Scale {
        /// Out or in.
        out: bool,
        /// The aspect.
        aspect_id: String,
        /// The steps.
        steps: u32,
    },
    /// SCALE_TO_LEVEL to this instantiation level.
    ToLevel(String),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RuleDoc {
    aspect_id: Option<String>,
    number_of_steps: Option<u32>,
    scale_out_above: Option<f64>,
    scale_in_below: Option<f64>,
    levels: Option<Vec<LevelRange>>,
}

const EXPECTED: &str = "expected {\"aspectId\", \"numberOfSteps\", \"scaleOutAbove\", \
    \"scaleInBelow\"} or {\"levels\": [{\"atLeast\", \"instantiationLevelId\"}, ...]}";

impl IndicatorRule {
    /// The rule in `doc`, or what is wrong with it.
    pub fn parse(doc: &serde_json::Value) -> Result<IndicatorRule, String> {
        let d = RuleDoc::deserialize(doc).map_err(|e| format!("{e} ({EXPECTED})"))?;
        match (d.aspect_id, d.levels) {
            (Some(_), Some(_)) => Err(format!("both aspectId and levels are given ({EXPECTED})")),
            (None, None) => Err(format!("neither aspectId nor levels is given ({EXPECTED})")),
            (Some(aspect_id), None) => {
                let number_of_steps = d.number_of_steps.unwrap_or(1);
                if number_of_steps == 0 {
                    return Err("numberOfSteps is 0".into());
                }
                match (d.scale_out_above, d.scale_in_below) {
                    (None, None) => Err(format!(
                        "neither scaleOutAbove nor scaleInBelow is given ({EXPECTED})"
                    )),
                    (Some(out), Some(inn)) if inn > out => Err(format!(
                        "scaleInBelow ({inn}) is above scaleOutAbove ({out})"
                    )),
                    (scale_out_above, scale_in_below) => Ok(IndicatorRule::Steps {
                        aspect_id,
                        number_of_steps,
                        scale_out_above,
                        scale_in_below,
                    }),
                }
            }
            (None, Some(mut levels)) => {
                if d.number_of_steps.is_some()
                    || d.scale_out_above.is_some()
                    || d.scale_in_below.is_some()
                {
                    return Err(format!("levels come without step members ({EXPECTED})"));
                }
                if levels.is_empty() {
                    return Err("levels is empty".into());
                }
                if levels.iter().any(|l| !l.at_least.is_finite()) {
                    return Err("an atLeast is not a finite number".into());
                }
                levels.sort_by(|a, b| a.at_least.total_cmp(&b.at_least));
                Ok(IndicatorRule::Levels(levels))
            }
        }
    }

    /// The band of `value`: for steps -1 (below `scaleInBelow`), 0 or 1 (above
    /// `scaleOutAbove`); for levels the index of its level, -1 below the first. `None` (no
    /// value yet) is the middle band, or below every level.
    fn band(&self, value: Option<f64>) -> isize {
        let Some(v) = value else {
            return match self {
                IndicatorRule::Steps { .. } => 0,
                IndicatorRule::Levels(_) => -1,
            };
        };
        match self {
            IndicatorRule::Steps {
                scale_out_above,
                scale_in_below,
                ..
            } => {
                if scale_out_above.is_some_and(|a| v > a) {
                    1
                } else if scale_in_below.is_some_and(|b| v < b) {
                    -1
                } else {
                    0
                }
            }
            IndicatorRule::Levels(levels) => levels
                .iter()
                .rposition(|l| v >= l.at_least)
                .map_or(-1, |i| i as isize),
        }
    }

    /// What the move of the value from `old` to `new` asks for: `None` when it stays in its
    /// band (or moves below every level, or back into the middle band).
    pub fn decide(&self, old: Option<f64>, new: f64) -> Option<IndicatorAction> {
        let (before, after) = (self.band(old), self.band(Some(new)));
        if before == after {
            return None;
        }
        match self {
            IndicatorRule::Steps {
                aspect_id,
                number_of_steps,
                ..
            } => (after != 0).then(|| IndicatorAction::Scale {
                out: after > 0,
                aspect_id: aspect_id.clone(),
                steps: *number_of_steps,
            }),
            IndicatorRule::Levels(levels) => usize::try_from(after)
                .ok()
                .map(|i| IndicatorAction::ToLevel(levels[i].instantiation_level_id.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn steps() -> IndicatorRule {
        IndicatorRule::parse(&json!({"aspectId": "web", "scaleOutAbove": 80, "scaleInBelow": 20}))
            .unwrap()
    }

    #[test]
    fn steps_scale_when_the_value_moves_out_of_the_middle_band() {
        let r = steps();
        let out = Some(IndicatorAction::Scale {
            out: true,
            aspect_id: "web".into(),
            steps: 1,
        });
        let inn = Some(IndicatorAction::Scale {
            out: false,
            aspect_id: "web".into(),
            steps: 1,
        });
        assert_eq!(r.decide(None, 90.0), out);
        assert_eq!(r.decide(Some(50.0), 81.0), out);
        assert_eq!(
            r.decide(Some(85.0), 95.0),
            None,
            "still above: no second scale-out"
        );
        assert_eq!(r.decide(Some(85.0), 50.0), None, "back in the middle");
        assert_eq!(r.decide(Some(85.0), 10.0), inn, "straight to below");
        assert_eq!(
            r.decide(Some(50.0), 80.0),
            None,
            "the bound itself is inside"
        );
        assert_eq!(r.decide(None, 50.0), None);
    }

    #[test]
    fn levels_move_to_the_level_of_the_new_range() {
        let r = IndicatorRule::parse(&json!({"levels": [
            {"atLeast": 100, "instantiationLevelId": "large"},
            {"atLeast": 0, "instantiationLevelId": "small"}
        ]}))
        .unwrap();
        let to = |l: &str| Some(IndicatorAction::ToLevel(l.into()));
        assert_eq!(r.decide(None, 5.0), to("small"));
        assert_eq!(r.decide(Some(5.0), 50.0), None);
        assert_eq!(r.decide(Some(50.0), 100.0), to("large"));
        assert_eq!(r.decide(Some(150.0), 99.5), to("small"));
        assert_eq!(r.decide(Some(5.0), -1.0), None, "below every level");
    }

    #[test]
    fn malformed_rules_say_what_is_wrong() {
        for (doc, says) in [
            (
                json!({"aspectId": "a"}),
                "neither scaleOutAbove nor scaleInBelow",
            ),
            (json!({"scaleOutAbove": 1}), "neither aspectId nor levels"),
            (
                json!({"aspectId": "a", "scaleOutAbove": 1, "scaleInBelow": 5}),
                "scaleInBelow (5) is above scaleOutAbove (1)",
            ),
            (
                json!({"aspectId": "a", "numberOfSteps": 0, "scaleOutAbove": 1}),
                "numberOfSteps is 0",
            ),
            (json!({"levels": []}), "levels is empty"),
            (
                json!({"levels": [{"atLeast": 0, "instantiationLevelId": "s"}], "scaleOutAbove": 1}),
                "without step members",
            ),
            (
                json!({"aspectId": "a", "scaleOutAbove": "high"}),
                "invalid type",
            ),
            (
                json!({"aspectId": "a", "scaleOutAbove": 1, "extra": 1}),
                "unknown field",
            ),
        ] {
            let err = IndicatorRule::parse(&doc).unwrap_err();
            assert!(err.contains(says), "{doc}: {err}");
        }
    }
}
