//! The episode and tool-call tables' columns, each filled a row at a time by polars' builder of
//! its type: a row's values are copied into the columns as an episode arrives, and the episode
//! (its transcript-sized fields too: tool results, answers) need not be kept until a table is
//! written.

use polars_core::prelude::*;

use crate::episode::{Episode, ToolCallRecord};

/// The type of a table column: what a row gives it, and the builder that collects it.
pub(super) trait Kind {
    type Builder;
    type Value<'a>;
    fn builder(name: &str, capacity: usize) -> Self::Builder;
    fn append(builder: &mut Self::Builder, value: Self::Value<'_>);
    fn finish(builder: Self::Builder) -> Column;
}

/// Text, never missing.
pub(super) struct Text;
/// Text or null.
pub(super) struct MaybeText;
/// A number of polars type `T`, never missing.
pub(super) struct Num<T>(std::marker::PhantomData<T>);
/// A number of polars type `T`, or null.
pub(super) struct MaybeNum<T>(std::marker::PhantomData<T>);
pub(super) struct Bool;
/// True, false or null.
pub(super) struct MaybeBool;

impl Kind for Text {
    type Builder = StringChunkedBuilder;
    type Value<'a> = &'a str;
    fn builder(name: &str, capacity: usize) -> Self::Builder {
        StringChunkedBuilder::new(name.into(), capacity)
    }
    fn append(builder: &mut Self::Builder, value: &str) {
        builder.append_value(value);
    }
    fn finish(builder: Self::Builder) -> Column {
        builder.finish().into_column()
    }
}

impl Kind for MaybeText {
    type Builder = StringChunkedBuilder;
    type Value<'a> = Option<&'a str>;
    fn builder(name: &str, capacity: usize) -> Self::Builder {
        StringChunkedBuilder::new(name.into(), capacity)
    }
    fn append(builder: &mut Self::Builder, value: Option<&str>) {
        builder.append_option(value);
    }
    fn finish(builder: Self::Builder) -> Column {
        builder.finish().into_column()
    }
}

impl<T: PolarsNumericType> Kind for Num<T> {
    type Builder = PrimitiveChunkedBuilder<T>;
    type Value<'a> = T::Native;
    fn builder(name: &str, capacity: usize) -> Self::Builder {
        PrimitiveChunkedBuilder::new(name.into(), capacity)
    }
    fn append(builder: &mut Self::Builder, value: T::Native) {
        builder.append_value(value);
    }
    fn finish(builder: Self::Builder) -> Column {
        builder.finish().into_column()
    }
}

impl<T: PolarsNumericType> Kind for MaybeNum<T> {
    type Builder = PrimitiveChunkedBuilder<T>;
    type Value<'a> = Option<T::Native>;
    fn builder(name: &str, capacity: usize) -> Self::Builder {
        PrimitiveChunkedBuilder::new(name.into(), capacity)
    }
    fn append(builder: &mut Self::Builder, value: Option<T::Native>) {
        builder.append_option(value);
    }
    fn finish(builder: Self::Builder) -> Column {
        builder.finish().into_column()
    }
}

impl Kind for Bool {
    type Builder = BooleanChunkedBuilder;
    type Value<'a> = bool;
    fn builder(name: &str, capacity: usize) -> Self::Builder {
        BooleanChunkedBuilder::new(name.into(), capacity)
    }
    fn append(builder: &mut Self::Builder, value: bool) {
        builder.append_value(value);
    }
    fn finish(builder: Self::Builder) -> Column {
        builder.finish().into_column()
    }
}

impl Kind for MaybeBool {
    type Builder = BooleanChunkedBuilder;
    type Value<'a> = Option<bool>;
    fn builder(name: &str, capacity: usize) -> Self::Builder {
        BooleanChunkedBuilder::new(name.into(), capacity)
    }
    fn append(builder: &mut Self::Builder, value: Option<bool>) {
        builder.append_option(value);
    }
    fn finish(builder: Self::Builder) -> Column {
        builder.finish().into_column()
    }
}

/// A table as a struct of column builders, one per `name: Kind = value of the row`, in the
/// table's column order: `push` appends a row, `take` hands the rows over as a frame and leaves
/// the table empty, without room reserved (the caller makes a new one once the frame is gone,
/// so two row groups' columns are not held at once).
macro_rules! table {
    ($(#[$doc:meta])* $table:ident, |$row:pat_param| $row_ty:ty,
     { $($name:ident: $kind:ty = $value:expr,)* }) => {
        $(#[$doc])*
        pub(super) struct $table {
            rows: usize,
            $($name: <$kind as Kind>::Builder,)*
        }

        impl $table {
            /// An empty table with room for `capacity` rows before its columns grow.
            pub fn new(capacity: usize) -> Self {
                Self {
                    rows: 0,
                    $($name: <$kind as Kind>::builder(stringify!($name), capacity),)*
                }
            }

            pub fn push(&mut self, $row: $row_ty) {
                $(<$kind as Kind>::append(&mut self.$name, $value);)*
                self.rows += 1;
            }

            /// Rows pushed since the table was made or last taken.
            pub fn rows(&self) -> usize {
                self.rows
            }

            /// The rows so far as a frame (each column one chunk); the table is empty after.
            pub fn take(&mut self) -> PolarsResult<DataFrame> {
                let full = std::mem::replace(self, Self::new(0));
                DataFrame::new(full.rows, vec![$(<$kind as Kind>::finish(full.$name),)*])
            }
        }
    };
}

table!(
    /// `episodes.parquet` and `episodes.csv`: a row per episode.
    EpisodeColumns, |e| &Episode, {
        run_id: Text = &e.run_id,
        task_id: Text = &e.task_id,
        kind: Text = e.kind.as_str(),
        set: Text = e.set.as_str(),
        side: Text = e.side.as_str(),
        host: Text = &e.host,
        model: Text = &e.model,
        trial: Num<UInt32Type> = e.trial,
        seed: Num<UInt64Type> = e.seed,
        success: Bool = e.success,
        infra_error: MaybeText = e.infra_error.as_deref(),
        server_error: MaybeText = e.server_error.as_deref(),
        turns: Num<UInt32Type> = e.turns,
        tool_calls: Num<UInt32Type> = e.tool_calls,
        tool_errors: Num<UInt32Type> = e.tool_errors,
        protocol_errors: Num<UInt32Type> = e.protocol_errors,
        input_tokens: Num<UInt64Type> = e.input_tokens,
        output_tokens: Num<UInt64Type> = e.output_tokens,
        total_tokens: Num<UInt64Type> = e.total_tokens,
        cache_read_tokens: Num<UInt64Type> = e.cache_read_tokens,
        cache_write_tokens: Num<UInt64Type> = e.cache_write_tokens,
        judge_input_tokens: Num<UInt64Type> = e.judge_input_tokens,
        judge_output_tokens: Num<UInt64Type> = e.judge_output_tokens,
        reasoning_tokens: Num<UInt64Type> = e.reasoning_tokens,
        latency_ms: Num<Float64Type> = e.latency_ms,
        ttft_ms: MaybeNum<Float64Type> = e.ttft_ms,
        first_tool: MaybeText = e.first_tool.as_deref(),
        tools_called: Text = &e.tools_called,
        hit_max_turns: Bool = e.hit_max_turns,
        truncated: Bool = e.truncated,
        timed_out: Bool = e.timed_out,
        tokens_estimated: Bool = e.tokens_estimated,
        text_tool_calls: Num<UInt32Type> = e.text_calls.count,
        replay_unmatched: Num<UInt32Type> = e.replay_unmatched(),
        attempts: Num<UInt32Type> = e.attempts.len() as u32 + 1,
        request_retries: Num<UInt32Type> = e.request_retries.len() as u32,
        grade_failures: Text = &e.grade.failure_summary(),
        started_at: Text = &e.started_at,
        tools_offered: Text = &e.tools_offered,
        recovered_calls: Num<UInt32Type> = e.recovered_calls(),
        unparsed_text_calls: Num<UInt32Type> = e.text_calls.unparsed,
        user_turns: MaybeText = crate::episode::user_turns_json(&e.user_turns).as_deref(),
        sampling_requests: Num<UInt32Type> = e.sampling_requests,
        elicitation_requests: Num<UInt32Type> = e.elicitation_requests,
        unprepared_requests: Num<UInt32Type> = e.unprepared_requests,
        sampling_input_tokens: Num<UInt64Type> = e.sampling_input_tokens,
        sampling_output_tokens: Num<UInt64Type> = e.sampling_output_tokens,
        tool_searches: Num<UInt32Type> = e.tool_searches(),
        found_rank: MaybeNum<UInt32Type> = e.tool_search.as_ref().and_then(|s| s.found_rank),
        found_at_k: MaybeBool = e.tool_search.as_ref().and_then(|s| s.found_at_k),
        search_turns: Num<UInt32Type> = e.tool_search.as_ref().map_or(0, |s| s.search_turns),
    }
);

table!(
    /// `tool_calls.parquet`: a row per tool call, with its episode's keys.
    ToolCallColumns, |(e, c)| (&Episode, &ToolCallRecord), {
        run_id: Text = &e.run_id,
        task_id: Text = &e.task_id,
        side: Text = e.side.as_str(),
        host: Text = &e.host,
        trial: Num<UInt32Type> = e.trial,
        index: Num<UInt32Type> = c.index,
        tool: Text = &c.tool,
        arguments: Text = &c.arguments,
        is_error: Bool = c.is_error,
        error_code: MaybeNum<Int64Type> = c.error_code,
        error_kind: MaybeText = c.error_kind.as_deref(),
        latency_ms: Num<Float64Type> = c.latency_ms,
        recovered: Bool = c.recovered,
        user_turn: Num<UInt32Type> = c.user_turn,
    }
);

impl ToolCallColumns {
    /// A row for each of the episode's tool calls, then one for each of its host calls
    /// (`resource:URI`, `prompt:NAME`, `resources/list`), numbered on after the tool calls.
    pub fn push_calls(&mut self, e: &Episode) {
        for c in &e.calls {
            self.push((e, c));
        }
        let after = e.calls.len() as u32;
        for c in &e.host_calls {
            let numbered = ToolCallRecord {
                index: after + c.index,
                ..c.clone()
            };
            self.push((e, &numbered));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::episode::Side;
    use crate::test_support::sample_episode;

    /// The dtypes and nulls the tables had when each column was made by `Series::new` from a
    /// vector of the field's values: readers (compare, scripts, notebooks) rely on them.
    #[test]
    fn columns_have_the_tables_types_and_nulls() {
        let mut failed = sample_episode("t", Side::Baseline, false);
        failed.infra_error = Some("server died".into());
        failed.calls = vec![ToolCallRecord {
            index: 0,
            tool: "search".into(),
            arguments: "{}".into(),
            is_error: true,
            error_code: Some(-32602),
            error_kind: Some("protocol".into()),
            latency_ms: 2.5,
            result: "x".repeat(10_000),
            replay_unmatched: true,
            recovered: true,
            user_turn: 1,
        }];
        failed.text_calls.recovered = 1;
        let mut ok = sample_episode("t", Side::Candidate, true);
        ok.ttft_ms = Some(12.5);
        let mut episodes = EpisodeColumns::new(1);
        let mut calls = ToolCallColumns::new(0);
        for e in [&failed, &ok] {
            episodes.push(e);
            calls.push_calls(e);
        }
        assert_eq!((episodes.rows(), calls.rows()), (2, 1));
        let (df, tc) = (episodes.take().unwrap(), calls.take().unwrap());
        assert_eq!(episodes.rows(), 0, "taking empties the table");
        let dtype = |df: &DataFrame, name: &str| df.column(name).unwrap().dtype().clone();
        for (name, expected) in [
            ("run_id", DataType::String),
            ("trial", DataType::UInt32),
            ("seed", DataType::UInt64),
            ("success", DataType::Boolean),
            ("infra_error", DataType::String),
            ("input_tokens", DataType::UInt64),
            ("latency_ms", DataType::Float64),
            ("ttft_ms", DataType::Float64),
            ("attempts", DataType::UInt32),
            ("tokens_estimated", DataType::Boolean),
            ("server_error", DataType::String),
            ("text_tool_calls", DataType::UInt32),
            ("replay_unmatched", DataType::UInt32),
            ("recovered_calls", DataType::UInt32),
            ("unparsed_text_calls", DataType::UInt32),
            ("user_turns", DataType::String),
            ("unprepared_requests", DataType::UInt32),
            ("sampling_input_tokens", DataType::UInt64),
        ] {
            assert_eq!(dtype(&df, name), expected, "{name}");
        }
        // 39 since `tools_offered` (issue 50: the order the tools were listed in); 41 since
        // `recovered_calls` and `unparsed_text_calls` (issue 51: calls written as text); 46
        // since the server's requests (issue 52: sampling, elicitation), 47 since `user_turns`
        // (issue 52: conversations), 51 since tool search (issue 53: `tool_searches`,
        // `found_rank`, `found_at_k`, `search_turns`).
        assert_eq!(df.width(), 51);
        assert_eq!(
            df.get_column_names()[47..],
            ["tool_searches", "found_rank", "found_at_k", "search_turns"],
            "new columns go at the end"
        );
        assert_eq!(dtype(&df, "found_rank"), DataType::UInt32);
        assert_eq!(dtype(&df, "found_at_k"), DataType::Boolean);
        let nulls = df.column("found_at_k").unwrap().null_count();
        assert_eq!(nulls, 2, "no tool search: no found@k");
        let nulls_of = |df: &DataFrame, name: &str| df.column(name).unwrap().null_count();
        assert_eq!(
            nulls_of(&df, "user_turns"),
            2,
            "no conversation: no user turns"
        );
        let recovered = df.column("recovered_calls").unwrap().u32().unwrap().clone();
        assert_eq!((recovered.get(0), recovered.get(1)), (Some(1), Some(0)));
        let unmatched = df
            .column("replay_unmatched")
            .unwrap()
            .u32()
            .unwrap()
            .clone();
        assert_eq!((unmatched.get(0), unmatched.get(1)), (Some(1), Some(0)));
        assert_eq!(dtype(&tc, "error_code"), DataType::Int64);
        assert_eq!(tc.width(), 14);
        assert_eq!(dtype(&tc, "recovered"), DataType::Boolean);
        let turn = tc.column("user_turn").unwrap().u32().unwrap().clone();
        assert_eq!(
            turn.get(0),
            Some(1),
            "a one-message task's calls are in turn 1"
        );
        let nulls = |df: &DataFrame, name: &str| df.column(name).unwrap().null_count();
        assert_eq!(nulls(&df, "infra_error"), 1);
        assert_eq!(nulls(&df, "ttft_ms"), 1);
        assert_eq!(nulls(&df, "run_id"), 0);
        let side = df.column("side").unwrap().str().unwrap().clone();
        assert_eq!(side.get(1), Some("candidate"));
        let ttft = df.column("ttft_ms").unwrap().f64().unwrap().clone();
        assert_eq!((ttft.get(0), ttft.get(1)), (None, Some(12.5)));
        let code = tc.column("error_code").unwrap().i64().unwrap().clone();
        assert_eq!(code.get(0), Some(-32602));
        // One chunk per column: written as it is, with no copy to make it contiguous.
        assert!(df.columns().iter().all(|c| c.n_chunks() == 1));
    }
}
