//! Crossbar-aware neural architecture search after RNC (arXiv 2409.18841, NAS half):
//! NSGA-II over a Once-for-All MobileNetV3 elastic space (kernel / expand / depth genes,
//! described as data in `arch/spaces/*.toml`), with the RNC crossbar compiler
//! (`pimkit-xbar`) in the loop for the hardware objective and the budget constraint, and a
//! pluggable accuracy evaluator (`proxy`, `table:FILE.csv`, `cmd:"..."`). See docs/nas.md.
//!
//! Entry points: [`Space::load`], [`SearchConfig::rnc_default`], [`search`],
//! [`write_outputs`], [`report_section`].

pub mod build;
mod error;
pub mod eval;
pub mod nsga;
mod output;
pub mod proxy;
pub mod proxy_cache;
mod search;
pub mod space;

pub use build::{SuperNet, build_shape_only, build_with_weights};
pub use error::{NasError, Result};
pub use eval::{AccuracySpec, Evaluator};
pub use nsga::{GenStats, NsgaConfig};
pub use output::{front_svg, front_table, report_section, summary_table, write_outputs};
pub use search::{
    AccuracyOracle, BaseInfo, Candidate, HwObjective, SearchConfig, SearchResult, evaluate_config,
    pareto_front, parse_objectives, search, search_with_oracle,
};
pub use space::{Config, Space};
