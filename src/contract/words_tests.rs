//! Tests of the word diff's excerpt and marked pieces.

use super::*;

const OLD: &str = "IANA timezone name (e.g., 'America/New_York', 'Europe/London'). Use 'UTC' as \
                   local timezone if no timezone provided by the user.";

#[test]
fn a_change_in_the_middle_of_a_long_text_shows_its_words_with_context() {
    let new = OLD.replace("'UTC'", "'Etc/UTC'");
    assert_eq!(
        WordDiff::of(OLD, &new).excerpt(),
        "… 'America/New_York', 'Europe/London'). Use ['UTC' → 'Etc/UTC'] as local timezone …"
    );
}

#[test]
fn texts_equal_past_the_old_cut_are_told_apart() {
    // The first 60 characters are the same: the old cut showed two identical texts.
    let new = OLD.replace("'UTC'", "'Etc/UTC'");
    assert!(OLD.len() > WHOLE_CHARS && OLD[..WHOLE_CHARS] == new[..WHOLE_CHARS]);
    let line = changed_text(OLD, &new);
    assert!(line.contains("['UTC' → 'Etc/UTC']"), "{line}");
    // Short texts stay whole.
    assert_eq!(
        changed_text(
            "Get current time in a specific timezones",
            "Get current time"
        ),
        "Get current time in a specific timezones → Get current time"
    );
}

#[test]
fn several_separate_changes_are_each_shown_and_the_gap_between_them_shortened() {
    let old = "one two three four five six seven eight nine ten eleven twelve thirteen";
    let new = "one TWO three four five six seven eight nine ten eleven twelve 13";
    assert_eq!(
        WordDiff::of(old, new).excerpt(),
        "one [two → TWO] three four five … ten eleven twelve [thirteen → 13]"
    );
    // A short gap is shown whole.
    let new = "one TWO three four FIVE six seven eight nine ten";
    let old = "one two three four five six seven eight nine ten";
    assert_eq!(
        WordDiff::of(old, new).excerpt(),
        "one [two → TWO] three four [five → FIVE] six seven eight …"
    );
}

#[test]
fn past_three_changes_the_rest_are_counted() {
    let old = "a b c d e f g h i j k l m n o p";
    let new = "A b c d E f g h I j k l M n o P";
    let diff = WordDiff::of(old, new);
    assert_eq!(diff.changes(), 5);
    assert_eq!(
        diff.excerpt(),
        "[a → A] b c d [e → E] f g h [i → I] j k l … (2 more change(s) not shown)"
    );
}

#[test]
fn an_insertion_alone_and_a_deletion_alone_have_their_own_marks() {
    let old = "Returns the current time in the given zone, formatted as ISO 8601 with offset.";
    let new = "Returns the current date and time in the given zone, formatted as ISO 8601 with \
               offset.";
    assert_eq!(
        WordDiff::of(old, new).excerpt(),
        "Returns the current [+date and] time in the …"
    );
    assert_eq!(
        WordDiff::of(new, old).excerpt(),
        "Returns the current [-date and] time in the …"
    );
}

#[test]
fn spacing_alone_changes_no_word() {
    let diff = WordDiff::of("a  b\nc", "a b c");
    assert_eq!(diff.changes(), 0);
    assert_eq!(diff.excerpt(), "the same words, spaced differently");
}

#[test]
fn a_long_changed_run_is_shortened() {
    let old = "x ".repeat(70);
    let new = "y ".repeat(70);
    let line = WordDiff::of(&old, &new).excerpt();
    assert!(line.starts_with("[x x x"), "{line}");
    assert!(line.contains("… → y y"), "{line}");
    assert!(line.chars().count() < 2 * CHANGED_CHARS + 10, "{line}");
}

#[test]
fn pieces_mark_the_whole_text_and_keep_its_line_breaks() {
    let old = "Use 'UTC' as local.\nNothing else.";
    let new = "Use 'Etc/UTC' as local.\nNothing more here.";
    let pieces = WordDiff::of(old, new).pieces();
    assert_eq!(
        pieces,
        [
            Piece::Same("Use"),
            Piece::Space(" "),
            Piece::Gone("'UTC'"),
            Piece::Space(" "),
            Piece::New("'Etc/UTC'"),
            Piece::Space(" "),
            Piece::Same("as local.\nNothing"),
            Piece::Space(" "),
            Piece::Gone("else."),
            Piece::Space(" "),
            Piece::New("more here."),
        ]
    );
    let deleted = WordDiff::of("a b c", "a c").pieces();
    assert_eq!(
        deleted,
        [
            Piece::Same("a"),
            Piece::Space(" "),
            Piece::Gone("b"),
            Piece::Space(" "),
            Piece::Same("c"),
        ]
    );
    let inserted = WordDiff::of("a c", "a b c").pieces();
    assert_eq!(
        inserted,
        [
            Piece::Same("a"),
            Piece::Space(" "),
            Piece::New("b"),
            Piece::Space(" "),
            Piece::Same("c"),
        ]
    );
}

#[test]
fn a_line_break_before_removed_words_stays_before_them() {
    let pieces = WordDiff::of("a b\nc", "a\nc").pieces();
    assert_eq!(
        pieces,
        [
            Piece::Same("a"),
            Piece::Space("\n"),
            Piece::Gone("b"),
            Piece::Space(" "),
            Piece::Same("c"),
        ]
    );
}

#[test]
fn texts_are_descriptions_titles_and_instructions_or_long_strings() {
    use serde_json::json;
    let change = |kind, before: Option<Value>, after: Option<Value>| {
        Change::new("tools", "t", kind).values(before, after)
    };
    let title = change(ChangeKind::TitleChanged, None, Some(json!("Time")));
    assert_eq!(texts(&title), Some((None, Some("Time"))));
    assert_eq!(sides(None, Some("Time")), "– → Time");
    // A short string of another kind is shown whole by the table already.
    let renamed = change(ChangeKind::ToolRenamed, Some(json!("a")), Some(json!("b")));
    assert_eq!(texts(&renamed), None);
    let long = "x".repeat(WHOLE_CHARS + 1);
    let pattern = change(
        ChangeKind::TypeNarrowed,
        Some(json!(long)),
        Some(json!("y")),
    );
    assert!(texts(&pattern).is_some());
    let number = change(
        ChangeKind::DescriptionChanged,
        Some(json!(1)),
        Some(json!("y")),
    );
    assert_eq!(texts(&number), None);
    assert_eq!(
        sides(Some("a\nlong   text"), None),
        "a long text → –",
        "one line, spaces squeezed"
    );
}
