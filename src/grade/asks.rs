//! The graders of a server's own requests during a trial: `elicitation` (the task's answers
//! fit the request's `requestedSchema`), `sampled` (how many sampling requests were answered) and
//! `elicited` (an elicitation was accepted with a field, and a value).

use serde_json::Value;

use super::Check;
use crate::mcp::AskRecord;
use crate::suite::asks::AskExpect;

/// The checks: one `elicitation` check per misfit answer, then the task's graders.
pub fn checks(expect: &AskExpect, asks: &[AskRecord]) -> Vec<Check> {
    let mut checks: Vec<Check> = (asks.iter())
        .filter_map(|a| a.misfit.as_ref())
        .map(|complaint| Check {
            grader: "elicitation".into(),
            passed: false,
            explanation: format!(
                "the task's answers do not fit the request's requestedSchema, so they were not \
                 sent (declined): {complaint}"
            ),
            turn: None,
        })
        .collect();
    if let Some(range) = &expect.sampled {
        let n = (asks.iter())
            .filter(|a| a.is_sampling() && answered(a))
            .count() as u32;
        let low = range.min.is_none_or(|min| n >= min);
        let high = range.max.is_none_or(|max| n <= max);
        let bounds = match (range.min, range.max) {
            (Some(min), Some(max)) => format!("between {min} and {max}"),
            (Some(min), None) => format!("at least {min}"),
            (None, Some(max)) => format!("at most {max}"),
            (None, None) => "any number of".into(),
        };
        checks.push(Check {
            grader: "sampled".into(),
            passed: low && high,
            explanation: format!("{n} sampling request(s) answered, {bounds} expected"),
            turn: None,
        });
    }
    for wanted in &expect.elicited {
        let accepted: Vec<&Value> = (asks.iter())
            .filter(|a| !a.is_sampling() && a.answer["action"] == "accept")
            .filter_map(|a| a.answer.get("content"))
            .collect();
        let found = accepted.iter().find_map(|c| c.get(&wanted.field));
        let (passed, explanation) = match (found, &wanted.equals) {
            (None, _) if accepted.is_empty() => (false, "no elicitation was accepted".to_owned()),
            (None, _) => (
                false,
                format!("no accepted elicitation held `{}`", wanted.field),
            ),
            (Some(value), Some(equals)) if value != equals => (
                false,
                format!("`{}` was {value}, expected {equals}", wanted.field),
            ),
            (Some(value), _) => (true, format!("`{}` was {value}", wanted.field)),
        };
        checks.push(Check {
            grader: "elicited".into(),
            passed,
            explanation,
            turn: None,
        });
    }
    checks
}

/// A request answered with a result (not an error).
fn answered(ask: &AskRecord) -> bool {
    ask.answer.get("error").is_none()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::suite::asks::{CountRange, ElicitedField};

    fn ask(method: &str, answer: Value) -> AskRecord {
        AskRecord {
            answer,
            latency_ms: 1.0,
            ..AskRecord::new(method, json!({}), true)
        }
    }

    #[test]
    fn sampled_counts_answered_requests_and_elicited_reads_accepted_content() {
        let asks = [
            ask("sampling/createMessage", json!({"model": "m"})),
            ask("sampling/createMessage", json!({"error": {"code": -32601}})),
            ask(
                "elicitation/create",
                json!({"action": "accept", "content": {"name": "Ada"}}),
            ),
        ];
        let expect = AskExpect {
            sampled: Some(CountRange {
                min: Some(1),
                max: Some(1),
            }),
            elicited: vec![
                ElicitedField {
                    field: "name".into(),
                    equals: Some(json!("Ada")),
                },
                ElicitedField {
                    field: "email".into(),
                    equals: None,
                },
                ElicitedField {
                    field: "name".into(),
                    equals: Some(json!("Bob")),
                },
            ],
        };
        let checks = checks(&expect, &asks);
        let got: Vec<(&str, bool, &str)> = (checks.iter())
            .map(|c| (c.grader.as_str(), c.passed, c.explanation.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "sampled",
                    true,
                    "1 sampling request(s) answered, between 1 and 1 expected"
                ),
                ("elicited", true, "`name` was \"Ada\""),
                ("elicited", false, "no accepted elicitation held `email`"),
                ("elicited", false, "`name` was \"Ada\", expected \"Bob\""),
            ]
        );
    }

    #[test]
    fn a_misfit_fails_with_the_schemas_complaint() {
        let mut misfit = ask("elicitation/create", json!({"action": "decline"}));
        misfit.misfit = Some("\"name\" is a required property".into());
        let checks = checks(&AskExpect::default(), &[misfit]);
        assert_eq!(checks.len(), 1);
        assert!(!checks[0].passed);
        assert!(checks[0]
            .explanation
            .ends_with("\"name\" is a required property"));
        let none = checks_of_nothing();
        assert!(none.is_empty());
    }

    fn checks_of_nothing() -> Vec<Check> {
        checks(
            &AskExpect {
                sampled: None,
                elicited: Vec::new(),
            },
            &[],
        )
    }
}
