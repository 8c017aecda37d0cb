//! Progress of an audit, one bar per stage (training, shadow training, attack), drawn on stderr
//! and only when stderr is a terminal, so that logs and CI output stay clean.
use crate::report::record::CellKey;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

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
    /// The shadow bar joins the display only once an attack announces shadow models: an empty
    /// bar would read "0/0" as if finished (audits run by worker processes never announce any).
    shadows_shown: Arc<AtomicBool>,
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
        // ETA from indicatif's running rate estimate: rough for the first unit of a stage.
        let style = ProgressStyle::with_template(
            "{prefix:>16} [{bar:30}] {pos:>4}/{len:<4} {elapsed:>4} elapsed, ETA {eta:>4} {wide_msg}",
        )
        .expect("static template")
        .progress_chars("=> ");
        let bar = |name: &'static str, len: u64| {
            let b = multi.add(ProgressBar::new(len));
            b.set_style(style.clone());
            b.set_prefix(name);
            b
        };
        let training = bar("training", cells);
        let attacks = bar("attack", attacks);
        let shadows = ProgressBar::new(0);
        shadows.set_style(style);
        shadows.set_prefix("shadow training");
        Progress { multi, training, shadows, attacks, echo, shadows_shown: Arc::new(AtomicBool::new(false)) }
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
        if stage == Stage::ShadowTraining && n > 0 && !self.shadows_shown.swap(true, Ordering::SeqCst) {
            self.multi.insert_after(&self.training, self.shadows.clone());
        }
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

    /// Whether the shadow-training bar is on display (see `shadows_shown`).
    pub fn shows_shadows(&self) -> bool {
        self.shadows_shown.load(Ordering::SeqCst)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_count_their_work_and_the_shadow_bar_appears_on_demand() {
        let p = Progress::with_target(3, 5, ProgressDrawTarget::hidden(), false);
        assert!(!p.shows_shadows(), "no shadow bar before an attack announces shadow models");
        p.add_work(Stage::ShadowTraining, 0);
        assert!(!p.shows_shadows());
        p.add_work(Stage::ShadowTraining, 4);
        p.add_work(Stage::ShadowTraining, 2);
        assert!(p.shows_shadows());
        assert_eq!(p.shadows.length(), Some(6));
        p.done(Stage::ShadowTraining);
        p.done(Stage::Attack);
        p.skip(2);
        assert_eq!(
            (p.position(Stage::Training), p.position(Stage::ShadowTraining), p.position(Stage::Attack)),
            (1, 1, 3)
        );
        assert_eq!(p.training.length(), Some(3));
    }
}
