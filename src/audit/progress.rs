//! Progress of an audit, one bar per stage (training, shadow training, attack), drawn on stderr
//! and only when stderr is a terminal, so that logs and CI output stay clean.
use super::cell::CellKey;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// The stages a cell goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Training,
    ShadowTraining,
    Attack,
}

/// Shared progress handle; cheap to clone (the bars are reference-counted).
#[derive(Clone)]
pub struct Progress {
    multi: MultiProgress,
    training: ProgressBar,
    shadows: ProgressBar,
    attacks: ProgressBar,
    /// Print `println` lines to stderr when the bars are hidden (false for `hidden()`).
    echo: bool,
}

impl Progress {
    /// Bars for `cells` targets to train and `attacks` attack runs; shadow models are counted as
    /// the attacks announce them. Drawn only when stderr is a terminal.
    pub fn new(cells: u64, attacks: u64) -> Self {
        let target =
            if std::io::stderr().is_terminal() { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        Self::with_target(cells, attacks, target, true)
    }

    /// Never drawn (tests, library use).
    pub fn hidden() -> Self {
        Self::with_target(0, 0, ProgressDrawTarget::hidden(), false)
    }

    fn with_target(cells: u64, attacks: u64, target: ProgressDrawTarget, echo: bool) -> Self {
        let multi = MultiProgress::with_draw_target(target);
        let style = ProgressStyle::with_template("{prefix:>16} [{bar:30}] {pos:>4}/{len:<4} {elapsed:>4} {wide_msg}")
            .expect("static template")
            .progress_chars("=> ");
        let bar = |name: &'static str, len: u64| {
            let b = multi.add(ProgressBar::new(len));
            b.set_style(style.clone());
            b.set_prefix(name);
            b
        };
        let training = bar("training", cells);
        let shadows = bar("shadow training", 0);
        let attacks = bar("attack", attacks);
        Progress { multi, training, shadows, attacks, echo }
    }

    fn bar(&self, stage: Stage) -> &ProgressBar {
        match stage {
            Stage::Training => &self.training,
            Stage::ShadowTraining => &self.shadows,
            Stage::Attack => &self.attacks,
        }
    }

    /// Shows which cell is being computed.
    pub fn set_cell(&self, key: &CellKey) {
        self.training.set_message(key.to_string());
    }

    /// Says what a stage is doing right now (e.g. the attack's name).
    pub fn set_message(&self, stage: Stage, msg: impl Into<String>) {
        self.bar(stage).set_message(msg.into());
    }

    /// Announces `n` more units of work for a stage (e.g. the shadow models an attack needs).
    pub fn add_work(&self, stage: Stage, n: u64) {
        self.bar(stage).inc_length(n);
    }

    /// One unit of a stage finished.
    pub fn done(&self, stage: Stage) {
        self.bar(stage).inc(1);
    }

    /// Cells reused from an earlier run count as done without work.
    pub fn skip(&self, attacks: u64) {
        self.training.inc(1);
        self.attacks.inc(attacks);
    }

    /// Prints a line above the bars (or plainly when they are hidden).
    pub fn println(&self, line: &str) {
        if self.multi.is_hidden() {
            if self.echo {
                eprintln!("{line}");
            }
        } else {
            let _ = self.multi.println(line);
        }
    }

    pub fn finish(&self) {
        for b in [&self.training, &self.shadows, &self.attacks] {
            b.finish();
        }
    }

    /// Position of a stage's bar (for tests of what the runner reported).
    pub fn position(&self, stage: Stage) -> u64 {
        self.bar(stage).position()
    }
}
