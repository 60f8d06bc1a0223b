//! Unit tests of values.rs: the order in which a drafted value is chosen.

use super::*;

fn known() -> Known {
    Known {
        paths: vec!["/srv/repo".into(), "/srv/repo/notes.txt".into()],
        flags: vec![("repository".into(), "/srv/repo".into())],
        words: Vec::new(),
    }
}

#[test]
fn the_schema_s_own_values_come_first_default_examples_then_enum() {
    let k = known();
    let all = json!({"type": "string", "default": "d", "examples": ["x"], "enum": ["e", "d"],
                     "description": "e.g. 'America/New_York'", "format": "date"});
    assert_eq!(pick("p", &all, &k), (json!("d"), Source::Default));
    let no_default = json!({"type": "string", "examples": ["x"], "enum": ["e", "x"]});
    assert_eq!(pick("p", &no_default, &k), (json!("x"), Source::Example));
    let just_enum = json!({"enum": ["open", "closed"], "description": "e.g. 'shut'"});
    assert_eq!(pick("p", &just_enum, &k), (json!("open"), Source::Enum));
    assert_eq!(
        pick("p", &json!({"const": 3}), &k),
        (json!(3), Source::Enum)
    );
    assert!(!Source::Enum.chosen() && Source::Description.chosen());
}

#[test]
fn then_the_description_then_the_format_then_the_command_line() {
    let k = known();
    let eg = json!({"type": "string", "format": "date",
        "description": "Source IANA timezone name (e.g., 'America/New_York', 'Europe/London')."});
    assert_eq!(
        pick("repo_path", &eg, &k),
        (json!("America/New_York"), Source::Description)
    );
    let form =
        json!({"type": "string", "description": "Time to convert in 24-hour format (HH:MM)"});
    assert_eq!(
        pick("time", &form, &k),
        (json!("14:30"), Source::Description)
    );
    let quoted = json!({"type": "string", "description": "The branch, like `main`."});
    assert_eq!(pick("b", &quoted, &k).0, json!("main"));
    let spaced = json!({"type": "string", "description": "A city, for example \"New York\"."});
    assert_eq!(pick("city", &spaced, &k).0, json!("New York"));
    let number = json!({"type": "integer", "description": "The issue number, e.g. 42"});
    assert_eq!(pick("id", &number, &k), (json!(42), Source::Description));
    let format = json!({"type": "string", "format": "email", "description": "Who"});
    assert_eq!(
        pick("repo", &format, &k),
        (json!("user@example.com"), Source::Format)
    );
    let path = json!({"type": "string", "title": "Repo Path"});
    assert_eq!(
        pick("repo_path", &path, &k),
        (json!("/srv/repo"), Source::CommandLine)
    );
    let file = json!({"type": "string"});
    assert_eq!(pick("file_path", &file, &k).0, json!("/srv/repo/notes.txt"));
}

#[test]
fn a_flag_of_the_command_line_fills_the_parameter_named_like_it() {
    let spec = crate::config::ServerSpec::parse("s", "srv --repository /r --port=8080 -v").unwrap();
    let k = Known::of(&spec, &[]);
    assert_eq!(
        k.flags,
        [
            ("repository".into(), "/r".into()),
            ("port".into(), "8080".into())
        ]
    );
    assert_eq!(
        pick("repo_path", &json!({"type": "string"}), &k).0,
        json!("/r")
    );
    assert_eq!(
        pick("port", &json!({"type": "integer"}), &k),
        (json!(8080), Source::CommandLine)
    );
    // `path` alone is a kind, not a subject: it does not match `--port`.
    assert_eq!(
        pick("name", &json!({"type": "string"}), &k),
        (json!("example"), Source::Neutral)
    );
}

#[test]
fn last_a_neutral_value_never_one_letter_and_within_the_schema() {
    let k = Known::default();
    assert_eq!(
        pick("q", &json!({"type": "string"}), &k),
        (json!("example"), Source::Neutral)
    );
    let long = pick("q", &json!({"type": "string", "minLength": 10}), &k).0;
    assert!(long.as_str().unwrap().len() >= 10, "{long}");
    assert_eq!(
        pick("revision", &json!({"type": "string"}), &k).0,
        json!("HEAD")
    );
    let bounded = json!({"type": "integer", "minimum": 3, "maximum": 9});
    assert_eq!(pick("n", &bounded, &k).0, json!(3));
    let list = json!({"type": "array", "items": {"type": "string"}, "minItems": 2});
    assert_eq!(pick("files", &list, &k).0, json!(["example", "example"]));
    let optional = json!({"anyOf": [{"type": "string"}, {"type": "null"}],
                          "description": "e.g. 'Europe/Paris'"});
    assert_eq!(pick("tz", &optional, &k).0, json!("Europe/Paris"));
    // A description's value the schema refuses is passed over.
    let pattern = json!({"type": "string", "pattern": "^[0-9]+$", "description": "e.g. 'abc'"});
    assert_ne!(pick("p", &pattern, &k).0, json!("abc"));
    for prop in [
        json!({"type": "string"}),
        json!({}),
        json!({"type": ["string", "null"]}),
    ] {
        let v = pick("x", &prop, &k).0;
        assert!(
            v.as_str().is_none_or(|s| s.chars().count() > 1),
            "{prop}: {v}"
        );
    }
}

#[test]
fn alternatives_are_the_later_values_then_the_plain_one() {
    let id = json!({"type": "integer", "description": "The issue number, e.g. 42"});
    assert_eq!(pick("id", &id, &Known::default()).0, json!(42));
    assert_eq!(alternatives("id", &id, &Known::default()), [json!(1)]);
    let tz = json!({"type": "string", "description": "A zone (e.g. 'Europe/Paris')"});
    assert_eq!(
        alternatives("tz", &tz, &Known::default()),
        [json!("example")]
    );
    let given = json!({"type": "string", "enum": ["a", "b"]});
    assert!(alternatives("s", &given, &Known::default()).is_empty());
}

#[test]
fn a_link_or_an_address_named_so_gets_a_value_of_its_kind() {
    // mcp-server-fetch's `fetch` prompt: argument `url`, "URL to fetch", no schema.
    let text = json!({"type": "string", "description": "URL to fetch"});
    assert_eq!(
        pick("url", &text, &Known::default()),
        (json!("https://example.com/"), Source::Neutral)
    );
    assert_eq!(
        value_for(
            "contact_email",
            &json!({"type": "string"}),
            &Known::default()
        ),
        json!("user@example.com")
    );
    assert_eq!(
        value_for("title", &json!({"type": "string"}), &Known::default()),
        json!("example")
    );
}
