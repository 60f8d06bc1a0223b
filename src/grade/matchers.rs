//! Argument matchers: exact, regex and any-value matching of expected call arguments.
