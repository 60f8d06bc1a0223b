//! The `agree` job itself: read the runs, compare each pair of hosts, write what was found.

use std::path::PathBuf;

use super::write::{self, AGREEMENT_CSV};
use super::{pair, read, AgreeError, PairAgreement};

/// What `mcpeval agree` is asked.
#[derive(Debug, Clone, Default)]
pub struct AgreeRequest {
    pub run_a: PathBuf,
    /// A second run; without it, every pair of `run_a`'s hosts.
    pub run_b: Option<PathBuf>,
    /// Where `agreement.csv` goes (default: `run_a`).
    pub out: Option<PathBuf>,
}

/// What `agree` found and where it wrote it.
#[derive(Debug, Clone)]
pub struct Agreed {
    pub pairs: Vec<PairAgreement>,
    pub csv: PathBuf,
}

/// Compares the hosts `request` names, writes `agreement.csv` and the "Host agreement" section of
/// the first run's `summary.md` and `report.html`.
pub fn agree(request: &AgreeRequest) -> Result<Agreed, AgreeError> {
    let a = read::read(&request.run_a)?;
    let b = request.run_b.as_deref().map(read::read).transpose()?;
    let pairs = (pair::raters(&a, b.as_ref())?.iter())
        .map(|(x, y)| pair::compare(x, y))
        .collect::<Result<Vec<_>, _>>()?;
    let csv = (request.out.as_ref())
        .unwrap_or(&request.run_a)
        .join(AGREEMENT_CSV);
    let failed = |path: &std::path::Path| {
        let path = path.to_path_buf();
        move |source| AgreeError::Write { path, source }
    };
    write::write_agreement(&pairs, &csv).map_err(failed(&csv))?;
    let md = request.run_a.join(crate::report::AGREEMENT_MD);
    std::fs::write(&md, write::section(&pairs, &csv)).map_err(|e| failed(&md)(e.into()))?;
    crate::report::refresh_sections(&request.run_a).map_err(failed(&request.run_a))?;
    Ok(Agreed { pairs, csv })
}
