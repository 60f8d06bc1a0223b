//! `mcpeval compare`: the library's recomputed comparison of a run (`job::compare`), its
//! verdict table and where the reports are, and the verdict's exit code.

use super::args::CompareArgs;
use super::run_cmd::{print_verdict, Console};
use crate::error::{Exit, Failure};
use crate::job::{CompareRequest, Face};

/// Runs `mcpeval compare` and returns the exit code of the verdict.
pub fn compare(args: &CompareArgs) -> Result<Exit, Failure> {
    let compared = crate::job::compare(&CompareRequest {
        run: args.run.clone(),
        against: args.against.clone(),
        out: args.out.clone(),
        correction: args.correction,
        alpha: args.alpha,
    })?;
    Console.notes(&compared.notes);
    for line in
        crate::report::diagnosis_lines(&crate::analysis::Diagnosis::of(&compared.comparison))
    {
        crate::cli::out::outln!("{line}");
    }
    let (comparison, out) = (&compared.comparison, &compared.out);
    print_verdict(comparison, out, compared.simulated, &compared.stale_list);
    Ok(compared.comparison.outcome().exit())
}
