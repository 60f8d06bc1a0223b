//! `elicitation: {user: true}`: the trial's simulated user (`user:`) fills out the form a server
//! asks for. A real model answers from its persona and goal with a JSON object of the fields;
//! the sim fills each required field (and each with a `default`) deterministically.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::host::{CompletionRequest, Message, Model, RequestContext};
use crate::mcp::{ElicitedUser, SamplingFailed};
use crate::suite::SimulatedUser;

/// The string the sim user gives a text field that has no default and no choices.
pub const SIM_TEXT: &str = "sim user";

/// A simulated user lent to a trial's connection for the server's elicitations.
pub struct UserElicitor {
    pub spec: SimulatedUser,
    pub model: Arc<dyn Model>,
    pub context: RequestContext,
    pub seed: u64,
}

#[async_trait::async_trait]
impl ElicitedUser for UserElicitor {
    async fn answer(
        &self,
        message: &str,
        schema: &Value,
    ) -> Result<Option<Map<String, Value>>, SamplingFailed> {
        if self.model.is_simulated() {
            return Ok(Some(sim_fields(schema)));
        }
        let persona = (self.spec.persona.as_deref())
            .map(|p| format!("Who you are: {p}\n"))
            .unwrap_or_default();
        let request = CompletionRequest {
            messages: vec![
                Message::System {
                    content: format!(
                        "You play a user of an AI assistant. Stay in the role.\n{persona}Your \
                         goal: {}",
                        self.spec.goal
                    ),
                },
                Message::User {
                    content: format!(
                        "A tool the assistant uses asks you: {message}\nThe form's JSON Schema: \
                         {schema}\nAnswer with the JSON object of the fields only, or DECLINE \
                         to refuse."
                    ),
                },
            ],
            tools: Vec::new().into(),
            seed: self.seed,
            context: self.context.clone(),
        };
        let answer = (self.model.complete(&request).await)
            .map_err(|e| SamplingFailed(crate::error::chain(&e)))?;
        Ok(json_object(answer.content.as_deref().unwrap_or_default()))
    }
}

/// The first JSON object in a model's answer (`None`: it declined, or wrote none).
fn json_object(text: &str) -> Option<Map<String, Value>> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    match serde_json::from_str(text.get(start..=end)?) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// The sim user's form: each required property, and each with a `default`, filled by its
/// schema: the default, else the first of its `enum`, else `true` for a boolean, its `minimum`
/// (or 1) for a number, and [`SIM_TEXT`] for a string.
pub fn sim_fields(schema: &Value) -> Map<String, Value> {
    let required: Vec<&str> = (schema["required"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .collect();
    let mut fields = Map::new();
    let Some(properties) = schema["properties"].as_object() else {
        return fields;
    };
    for (name, p) in properties {
        let value = match (
            p.get("default"),
            p["enum"].as_array().and_then(|e| e.first()),
        ) {
            (Some(default), _) => default.clone(),
            _ if !required.contains(&name.as_str()) => continue,
            (None, Some(first)) => first.clone(),
            (None, None) => match p["type"].as_str() {
                Some("boolean") => Value::Bool(true),
                Some("integer" | "number") => p.get("minimum").cloned().unwrap_or(Value::from(1)),
                _ => Value::from(SIM_TEXT),
            },
        };
        fields.insert(name.clone(), value);
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_sim_user_fills_required_fields_and_defaults_by_their_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "color": {"type": "string", "enum": ["red", "blue"]},
                "age": {"type": "integer", "minimum": 18},
                "ok": {"type": "boolean"},
                "pets": {"type": "integer", "default": 2},
                "note": {"type": "string"}
            },
            "required": ["name", "color", "age", "ok"]
        });
        let fields = sim_fields(&schema);
        assert_eq!(
            Value::Object(fields),
            json!({"name": SIM_TEXT, "color": "red", "age": 18, "ok": true, "pets": 2})
        );
        assert!(crate::mcp::misfit(&schema, &sim_fields(&schema)).is_none());
    }

    #[test]
    fn a_models_form_is_the_json_object_in_its_answer() {
        let form = json_object("Sure: {\"name\": \"Ada\"} thanks").unwrap();
        assert_eq!(form["name"], "Ada");
        assert!(json_object("DECLINE").is_none());
    }
}
