//! The demo tracker's state: seed projects and issues, and the operations the tools perform.
//!
//! Operations return the structured content of a successful tool result, or a [`ToolError`] whose
//! text tells the model what was wrong and what is valid.

use std::collections::BTreeMap;

use serde_json::{json, Value};

/// A mistake the caller made; becomes a tool result with `isError: true`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

/// Shorthand for building a [`ToolError`].
pub fn fail<T>(message: impl Into<String>) -> Result<T, ToolError> {
    Err(ToolError(message.into()))
}

const PROJECTS: [(&str, &str); 3] = [
    ("apollo", "Apollo web app"),
    ("zephyr", "Zephyr mobile app"),
    ("hermes", "Hermes billing service"),
];

/// (id, project, title, status, priority, assignee, description, comments as (author, text))
type SeedIssue = (
    u64,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

#[rustfmt::skip]
const SEED: [SeedIssue; 12] = [
    (1, "apollo", "Login page times out on slow networks", "open", "high", "maria",
     "On 3G connections the login form spins for 30 seconds and then shows a timeout error.",
     &[("maria", "Reproduced with Chrome network throttling.")]),
    (2, "apollo", "Password reset email never arrives", "open", "high", "",
     "Users who request a password reset get no email, not even in their spam folder.",
     &[("sam", "The mail provider logs show no delivery attempt.")]),
    (3, "zephyr", "App crashes when uploading a large photo", "open", "critical", "dev",
     "Uploading a photo larger than 20 MB from the gallery closes the app immediately.",
     &[("dev", "Out of memory while resizing the image."), ("maria", "Happens on both iOS and Android.")]),
    (4, "zephyr", "Dark mode colours wrong in settings", "closed", "low", "",
     "In dark mode the settings screen shows black text on a dark grey background.",
     &[("dev", "Fixed in 3.2.1.")]),
    (5, "hermes", "Invoice PDF shows wrong VAT rate", "open", "medium", "sam",
     "Invoices for customers in Germany show 16 % VAT instead of 19 %.",
     &[("sam", "The rate table was not updated.")]),
    (6, "hermes", "Export to CSV drops the last row", "open", "medium", "",
     "The CSV export of the transactions table always leaves out the final row.",
     &[]),
    (7, "apollo", "Search results ignore accented characters", "open", "low", "",
     "Searching for 'cafe' does not find entries named 'café', and the other way round.",
     &[]),
    (8, "zephyr", "Push notifications arrive twice", "closed", "medium", "dev",
     "Every push notification is delivered two times on devices that updated the app.",
     &[("dev", "Duplicate device tokens after the update; fixed by deduplicating them.")]),
    (9, "apollo", "Crash on logout when session expired", "open", "critical", "maria",
     "Logging out after the session has expired throws an unhandled exception and shows a blank page.",
     &[("maria", "The stack trace points at the session cleanup handler."), ("sam", "Affects about 2 % of logouts.")]),
    (10, "hermes", "Currency rounding error in refunds", "closed", "high", "sam",
     "Refunds in JPY are rounded to two decimals, which leaves a one-yen difference.",
     &[("sam", "Fixed by using the currency's minor unit.")]),
    (11, "zephyr", "Login with Google fails on Android 15", "open", "high", "",
     "Signing in with a Google account fails with 'unknown error' on Android 15 devices.",
     &[]),
    (12, "hermes", "Timeout when generating yearly report", "open", "medium", "",
     "Generating the yearly revenue report takes longer than 60 seconds and is cancelled.",
     &[("sam", "Monthly reports are fine.")]),
];

/// Words too common to say anything about an issue.
#[rustfmt::skip]
const STOPWORDS: [&str; 24] = [
    "a", "an", "the", "and", "or", "of", "in", "on", "to", "for", "with", "is", "are", "be", "it",
    "that", "this", "when", "from", "by", "at", "as", "issue", "issues",
];

#[derive(Debug, Clone)]
struct Comment {
    author: String,
    text: String,
}

#[derive(Debug, Clone)]
struct Issue {
    id: u64,
    project: &'static str,
    title: String,
    description: String,
    status: String,
    priority: String,
    assignee: Option<String>,
    comments: Vec<Comment>,
}

impl Issue {
    fn summary(&self, fields: &[&str]) -> Value {
        let full = self.details();
        let picked = fields
            .iter()
            .map(|field| ((*field).to_owned(), full[*field].clone()));
        Value::Object(picked.collect())
    }

    fn details(&self) -> Value {
        let comments: Vec<Value> = self
            .comments
            .iter()
            .map(|c| json!({ "author": c.author, "text": c.text }))
            .collect();
        json!({
            "id": self.id,
            "project": self.project,
            "title": self.title,
            "description": self.description,
            "status": self.status,
            "priority": self.priority,
            "assignee": self.assignee,
            "comments": comments,
        })
    }

    /// How many of `keywords` occur in the title or description.
    fn score(&self, keywords: &[String]) -> usize {
        let text = format!("{} {}", self.title, self.description).to_lowercase();
        keywords
            .iter()
            .filter(|word| {
                text.contains(word.as_str())
                    || (word.len() > 3
                        && word.ends_with('s')
                        && text.contains(&word[..word.len() - 1]))
            })
            .count()
    }
}

/// What `update_issue` should change; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    pub status: Option<String>,
    pub priority: Option<String>,
    /// `Some("")` unassigns the issue.
    pub assignee: Option<String>,
    pub title: Option<String>,
}

/// The in-memory issue tracker.
#[derive(Debug, Clone)]
pub struct Tracker {
    issues: BTreeMap<u64, Issue>,
    next_id: u64,
}

impl Default for Tracker {
    fn default() -> Self {
        Self::seeded()
    }
}

impl Tracker {
    /// The tracker as every fresh server starts: three projects, twelve issues.
    pub fn seeded() -> Self {
        let issues = SEED
            .iter()
            .map(
                |&(id, project, title, status, priority, assignee, description, comments)| {
                    let issue = Issue {
                        id,
                        project,
                        title: title.to_owned(),
                        description: description.to_owned(),
                        status: status.to_owned(),
                        priority: priority.to_owned(),
                        assignee: (!assignee.is_empty()).then(|| assignee.to_owned()),
                        comments: comments
                            .iter()
                            .map(|&(author, text)| Comment {
                                author: author.to_owned(),
                                text: text.to_owned(),
                            })
                            .collect(),
                    };
                    (id, issue)
                },
            )
            .collect();
        Self {
            issues,
            next_id: SEED.len() as u64 + 1,
        }
    }

    /// `list_projects`.
    pub fn list_projects(&self) -> Value {
        let projects: Vec<Value> = PROJECTS
            .iter()
            .map(|&(key, name)| {
                let open = self
                    .issues
                    .values()
                    .filter(|i| i.project == key && i.status == "open")
                    .count();
                json!({ "key": key, "name": name, "open_issues": open })
            })
            .collect();
        json!({ "projects": projects })
    }

    /// `search_issues`: keyword search with optional project and status filters.
    pub fn search(
        &self,
        query: &str,
        project: Option<&str>,
        status: Option<&str>,
    ) -> Result<Value, ToolError> {
        let keywords = keywords(query)?;
        let project = project.map(project_key).transpose()?;
        let status = status.filter(|s| *s != "any");
        let issues = self
            .ranked(&keywords)
            .into_iter()
            .filter(|i| project.is_none_or(|p| i.project == p))
            .filter(|i| status.is_none_or(|s| i.status == s))
            .map(|i| i.summary(&["id", "title", "status", "priority"]))
            .collect::<Vec<_>>();
        Ok(json!({ "issues": issues }))
    }

    /// `find_issues` (1.5.0): keyword search across all projects, at most `limit` results.
    pub fn find(&self, text: &str, limit: Option<i64>) -> Result<Value, ToolError> {
        let keywords = keywords(text)?;
        let limit = match limit {
            None => 10,
            Some(n) if n >= 1 => n as usize,
            Some(n) => return fail(format!("limit must be at least 1, got {n}")),
        };
        let issues = self
            .ranked(&keywords)
            .into_iter()
            .take(limit)
            .map(|i| i.summary(&["id", "title", "project"]))
            .collect::<Vec<_>>();
        Ok(json!({ "issues": issues }))
    }

    /// Issues matching at least one keyword, best matches first, then by id.
    fn ranked(&self, keywords: &[String]) -> Vec<&Issue> {
        let mut scored: Vec<(usize, &Issue)> = self
            .issues
            .values()
            .map(|i| (i.score(keywords), i))
            .filter(|(score, _)| *score > 0)
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.id.cmp(&b.1.id)));
        scored.into_iter().map(|(_, i)| i).collect()
    }

    /// `get_issue`.
    pub fn get(&self, id: i64) -> Result<Value, ToolError> {
        Ok(self.issue(id)?.details())
    }

    /// `create_issue`: a new open, unassigned issue; returns its `fields` (which differ by release).
    pub fn create(
        &mut self,
        project: &str,
        title: &str,
        description: Option<&str>,
        priority: Option<&str>,
        fields: &[&str],
    ) -> Result<Value, ToolError> {
        let project = project_key(project)?;
        let title = non_empty("title", title)?;
        let id = self.next_id;
        self.next_id += 1;
        let issue = Issue {
            id,
            project,
            title,
            description: description.unwrap_or_default().trim().to_owned(),
            status: "open".to_owned(),
            priority: priority.unwrap_or("medium").to_owned(),
            assignee: None,
            comments: Vec::new(),
        };
        let summary = issue.summary(fields);
        self.issues.insert(id, issue);
        Ok(summary)
    }

    /// `update_issue`.
    pub fn update(&mut self, id: i64, changes: Changes) -> Result<Value, ToolError> {
        if changes == Changes::default() {
            return fail(
                "nothing to change: give at least one of status, priority, assignee or title",
            );
        }
        let title = changes.title.map(|t| non_empty("title", &t)).transpose()?;
        let issue = self.issue_mut(id)?;
        if let Some(status) = changes.status {
            issue.status = status;
        }
        if let Some(priority) = changes.priority {
            issue.priority = priority;
        }
        if let Some(assignee) = changes.assignee {
            let assignee = assignee.trim();
            issue.assignee = (!assignee.is_empty()).then(|| assignee.to_owned());
        }
        if let Some(title) = title {
            issue.title = title;
        }
        Ok(issue.summary(&["id", "project", "title", "status", "priority", "assignee"]))
    }

    /// `add_comment`: returns the issue id and its number of comments.
    pub fn comment(&mut self, id: i64, body: &str) -> Result<Value, ToolError> {
        let text = non_empty("body", body)?;
        let issue = self.issue_mut(id)?;
        issue.comments.push(Comment {
            author: "user".to_owned(),
            text,
        });
        Ok(json!({ "id": issue.id, "comments": issue.comments.len() }))
    }

    fn issue(&self, id: i64) -> Result<&Issue, ToolError> {
        let known = self.issues.len();
        let last = self.next_id - 1;
        u64::try_from(id)
            .ok()
            .and_then(|id| self.issues.get(&id))
            .ok_or_else(|| unknown_issue(id, known, last))
    }

    fn issue_mut(&mut self, id: i64) -> Result<&mut Issue, ToolError> {
        let known = self.issues.len();
        let last = self.next_id - 1;
        u64::try_from(id)
            .ok()
            .and_then(|id| self.issues.get_mut(&id))
            .ok_or_else(|| unknown_issue(id, known, last))
    }
}

fn unknown_issue(id: i64, known: usize, last: u64) -> ToolError {
    ToolError(format!(
        "unknown issue id {id}; there are {known} issues, numbered 1 to {last} \
         (use search to find an issue's number)"
    ))
}

/// Resolves a project key, ignoring case and surrounding spaces.
fn project_key(key: &str) -> Result<&'static str, ToolError> {
    let wanted = key.trim().to_lowercase();
    PROJECTS
        .iter()
        .map(|(key, _)| *key)
        .find(|key| *key == wanted)
        .ok_or_else(|| {
            let mut known: Vec<&str> = PROJECTS.iter().map(|(key, _)| *key).collect();
            known.sort_unstable();
            ToolError(format!(
                "unknown project `{}`; known projects: {}",
                key.trim(),
                known.join(", ")
            ))
        })
}

fn non_empty(name: &str, value: &str) -> Result<String, ToolError> {
    let value = value.trim();
    if value.is_empty() {
        return fail(format!("`{name}` must not be empty"));
    }
    Ok(value.to_owned())
}

/// The words of a search query worth matching: lower-case, without stop words (unless nothing
/// else is left).
fn keywords(query: &str) -> Result<Vec<String>, ToolError> {
    let words: Vec<String> = query
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect();
    if words.is_empty() {
        return fail("empty query: give one or more keywords to look for, e.g. \"login timeout\"");
    }
    let useful: Vec<String> = words
        .iter()
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .cloned()
        .collect();
    Ok(if useful.is_empty() { words } else { useful })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(value: &Value) -> Vec<u64> {
        value["issues"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_u64().unwrap())
            .collect()
    }

    #[test]
    fn seed_matches_the_catalogue() {
        let tracker = Tracker::seeded();
        let projects = tracker.list_projects();
        assert_eq!(projects["projects"][0]["key"], "apollo");
        assert_eq!(projects["projects"][0]["open_issues"], 4);
        assert_eq!(projects["projects"][1]["open_issues"], 2);
        assert_eq!(projects["projects"][2]["open_issues"], 3);
        let three = tracker.get(3).unwrap();
        assert_eq!(three["title"], "App crashes when uploading a large photo");
        assert_eq!(three["priority"], "critical");
        assert_eq!(three["assignee"], "dev");
        assert_eq!(tracker.get(2).unwrap()["assignee"], Value::Null);
    }

    #[test]
    fn search_ranks_matches_and_filters() {
        let tracker = Tracker::seeded();
        let login = tracker.search("login", None, None).unwrap();
        assert_eq!(ids(&login), [1, 11]);
        let apollo = tracker
            .search("login", Some("Apollo"), Some("open"))
            .unwrap();
        assert_eq!(ids(&apollo), [1]);
        let crash = tracker.search("crash on logout", None, None).unwrap();
        assert_eq!(ids(&crash)[0], 9);
        let closed = tracker.search("push notifications", None, Some("closed"));
        assert_eq!(ids(&closed.unwrap()), [8]);
        assert_eq!(
            tracker.search("  ", None, None).unwrap_err().0,
            "empty query: give one or more keywords to look for, e.g. \"login timeout\""
        );
        assert_eq!(
            tracker.search("x", Some("foo"), None).unwrap_err().0,
            "unknown project `foo`; known projects: apollo, hermes, zephyr"
        );
    }

    #[test]
    fn find_searches_everywhere_with_a_limit() {
        let tracker = Tracker::seeded();
        let found = tracker.find("timeout", Some(1)).unwrap();
        assert_eq!(found["issues"].as_array().unwrap().len(), 1);
        assert_eq!(found["issues"][0]["project"], "apollo");
        assert!(tracker.find("timeout", Some(0)).is_err());
    }

    const CREATED: [&str; 5] = ["id", "project", "title", "status", "priority"];

    #[test]
    fn create_update_and_comment_change_the_state() {
        let mut tracker = Tracker::seeded();
        let created = tracker
            .create(
                "hermes",
                "Refund emails are sent twice",
                None,
                Some("high"),
                &CREATED,
            )
            .unwrap();
        assert_eq!(created["id"], 13);
        assert_eq!(created["status"], "open");
        let changes = Changes {
            status: Some("closed".into()),
            assignee: Some("sam".into()),
            ..Changes::default()
        };
        let updated = tracker.update(13, changes).unwrap();
        assert_eq!(updated["status"], "closed");
        assert_eq!(updated["assignee"], "sam");
        assert_eq!(
            tracker.comment(13, "Duplicate of #10").unwrap()["comments"],
            1
        );
        assert_eq!(
            tracker.get(13).unwrap()["comments"][0]["text"],
            "Duplicate of #10"
        );
        assert!(tracker.update(13, Changes::default()).is_err());
        let err = tracker.get(99).unwrap_err().0;
        assert!(
            err.starts_with("unknown issue id 99; there are 13 issues"),
            "{err}"
        );
        assert!(tracker.create("apollo", " ", None, None, &CREATED).is_err());
    }

    #[test]
    fn create_returns_only_the_fields_asked_for() {
        let mut tracker = Tracker::seeded();
        let created = tracker
            .create("apollo", "t", None, Some("low"), &["id", "status"])
            .unwrap();
        assert_eq!(created, json!({ "id": 13, "status": "open" }));
        assert_eq!(tracker.get(13).unwrap()["priority"], "low");
    }
}
