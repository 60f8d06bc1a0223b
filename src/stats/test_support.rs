//! Test helpers: loading the reference fixtures and comparing to them within 1e-9 relative.

use serde_json::Value;

use super::types::{Proportion, Table2x2};

/// Parses `tests/fixtures/stats/{name}` (written by `make_fixtures.py`).
pub(crate) fn fixture(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/stats")
        .join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read fixture {}: {e}", path.display()));
    serde_json::from_str(&text).expect("fixture is valid JSON")
}

/// The `cases` array of a fixture.
pub(crate) fn cases(name: &str) -> Vec<Value> {
    fixture(name)["cases"].as_array().expect("cases").clone()
}

/// A JSON number as f64.
pub(crate) fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// A JSON array of numbers.
pub(crate) fn nums(v: &Value) -> Vec<f64> {
    v.as_array().expect("array").iter().map(num).collect()
}

/// Whether `actual` equals `expected` to 1e-9 relative or, near zero, 1e-12 absolute.
pub(crate) fn close(actual: f64, expected: f64) -> bool {
    actual == expected
        || (actual - expected).abs() <= 1e-12
        || (actual - expected).abs() <= 1e-9 * expected.abs()
}

/// Asserts [`close`], naming the case on failure.
#[track_caller]
pub(crate) fn assert_close(actual: f64, expected: f64, case: &dyn std::fmt::Display) {
    assert!(
        close(actual, expected),
        "{case}: got {actual:e}, reference {expected:e}"
    );
}

/// `[[bs, bn], [cs, cn]]` strata of a fixture as 2×2 tables.
pub(crate) fn tables(v: &Value) -> Vec<Table2x2> {
    let side = |s: &Value| Proportion::new(s[0].as_u64().unwrap(), s[1].as_u64().unwrap());
    let strata = v.as_array().expect("strata");
    strata
        .iter()
        .map(|s| Table2x2::new(side(&s[0]), side(&s[1])))
        .collect()
}

/// One table: baseline `bs` of `bn`, candidate `cs` of `cn`.
pub(crate) fn table(bs: u64, bn: u64, cs: u64, cn: u64) -> Table2x2 {
    Table2x2::new(Proportion::new(bs, bn), Proportion::new(cs, cn))
}
