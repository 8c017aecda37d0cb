//! What an external target is: the `[target]` table of an audit config, or the `--torchscript`,
//! `--command` and `--posteriors` flags of `gnnaudit attack`. Paths are as given (relative to the
//! working directory).
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What the module's forward returns (the config states it; gnnaudit cannot tell logits from
/// log-probabilities by looking).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum OutputKind {
    /// Unnormalised scores: posteriors = softmax, training loss = cross-entropy.
    #[default]
    Logits,
    /// log_softmax outputs: posteriors = exp, training loss = NLL.
    LogProbs,
    /// Probabilities already (rows sum to 1): training loss = NLL of their log.
    Probs,
}

/// The optimiser of the shadow copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Optimizer {
    #[default]
    Adam,
    Adamw,
    Sgd,
}

/// The training recipe the deployment declares, used to train shadow copies of a TorchScript
/// module: full-batch, on the training nodes of the shadow graph.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShadowRecipe {
    pub epochs: usize,
    pub lr: f64,
    pub optimizer: Optimizer,
    pub weight_decay: f64,
}

impl Default for ShadowRecipe {
    fn default() -> Self {
        ShadowRecipe { epochs: 100, lr: 0.01, optimizer: Optimizer::Adam, weight_decay: 0.0 }
    }
}

impl ShadowRecipe {
    pub fn validate(&self, field: &str) -> Result<()> {
        crate::ensure!(self.epochs >= 1, Error::invalid(format!("{field}.epochs"), "must be at least 1"));
        crate::ensure!(
            self.epochs <= crate::methods::recipe::MAX_EPOCHS,
            Error::invalid(
                format!("{field}.epochs"),
                format!(
                    "{} is more than the {} epochs any recipe trains for",
                    self.epochs,
                    crate::methods::recipe::MAX_EPOCHS
                )
            )
        );
        crate::ensure!(
            self.lr.is_finite() && self.lr > 0.0,
            Error::invalid(format!("{field}.lr"), format!("{} is not a positive learning rate", self.lr))
        );
        crate::ensure!(
            self.weight_decay.is_finite() && self.weight_decay >= 0.0,
            Error::invalid(format!("{field}.weight_decay"), format!("{} is negative", self.weight_decay))
        );
        Ok(())
    }
}

fn default_timeout() -> f64 {
    600.0
}

/// One external target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum TargetSpec {
    /// Released posteriors only.
    Posteriors {
        posteriors: PathBuf,
        #[serde(default)]
        members: Option<PathBuf>,
    },
    /// A TorchScript export, `forward(x: Tensor[N, F], edge_index: Tensor[2, E]) -> Tensor[N, C]`.
    Torchscript {
        model: PathBuf,
        #[serde(default)]
        output: OutputKind,
        /// An untrained export of the same module for shadow copies; without it, copies are
        /// re-initialised (see `torchscript::reinitialise`).
        #[serde(default)]
        init: Option<PathBuf>,
        #[serde(default)]
        members: Option<PathBuf>,
        #[serde(default)]
        training: ShadowRecipe,
        /// Seconds one forward may take (libtorch cannot stop a forward that loops).
        #[serde(default = "default_timeout")]
        timeout: f64,
    },
    /// The training pipeline: a command template with `{graph}` and `{out}`.
    Command {
        command: String,
        #[serde(default)]
        members: Option<PathBuf>,
        /// Seconds one run may take.
        #[serde(default = "default_timeout")]
        timeout: f64,
        /// Where graphs, outputs and logs of the runs go (default: a temporary folder).
        #[serde(default)]
        work_dir: Option<PathBuf>,
    },
}

impl TargetSpec {
    pub fn kind(&self) -> &'static str {
        match self {
            TargetSpec::Posteriors { .. } => "posteriors",
            TargetSpec::Torchscript { .. } => "torchscript",
            TargetSpec::Command { .. } => "command",
        }
    }
    pub fn members(&self) -> Option<&PathBuf> {
        match self {
            TargetSpec::Posteriors { members, .. }
            | TargetSpec::Torchscript { members, .. }
            | TargetSpec::Command { members, .. } => members.as_ref(),
        }
    }
    /// A label for reports: the kind and the file or command.
    pub fn label(&self) -> String {
        match self {
            TargetSpec::Posteriors { posteriors, .. } => format!("posteriors:{}", posteriors.display()),
            TargetSpec::Torchscript { model, .. } => format!("torchscript:{}", model.display()),
            TargetSpec::Command { command, .. } => format!("command:{command}"),
        }
    }
    /// The files the target reads, by role (`model`, `init`, `posteriors`, `members`, and
    /// `script <word>` for each word of a command template that names an existing file): a
    /// result is only as fresh as these files' bytes.
    pub fn input_files(&self) -> Vec<(String, PathBuf)> {
        let mut files = vec![];
        match self {
            TargetSpec::Posteriors { posteriors, .. } => files.push(("posteriors".to_string(), posteriors.clone())),
            TargetSpec::Torchscript { model, init, .. } => {
                files.push(("model".into(), model.clone()));
                files.extend(init.iter().map(|i| ("init".to_string(), i.clone())));
            }
            TargetSpec::Command { command, .. } => {
                files.extend(script_files(command).into_iter().map(|p| (format!("script {}", p.display()), p)));
            }
        }
        files.extend(self.members().map(|m| ("members".to_string(), m.clone())));
        files
    }

    /// Checks every value that can be checked before any work; errors name `target.<field>`.
    pub fn validate(&self) -> Result<()> {
        let file = |field: &str, p: &PathBuf| -> Result<()> {
            crate::ensure!(
                p.is_file(),
                Error::invalid(format!("target.{field}"), format!("{} is not a file", p.display()))
            );
            Ok(())
        };
        if let Some(m) = self.members() {
            file("members", m)?;
        }
        match self {
            TargetSpec::Posteriors { posteriors, .. } => file("posteriors", posteriors),
            TargetSpec::Torchscript { model, init, training, timeout, .. } => {
                file("model", model)?;
                if let Some(i) = init {
                    file("init", i)?;
                }
                super::command::timeout_duration("target.timeout", *timeout)?;
                training.validate("target.training")
            }
            TargetSpec::Command { command, timeout, .. } => {
                super::command::check_template(command)?;
                super::command::timeout_duration("target.timeout", *timeout)?;
                Ok(())
            }
        }
    }
}

/// The words of a command template that name existing files (the interpreter, the training
/// script, a config it reads), relative to the working directory as the command runs there. A
/// `--flag=value` word counts by its value; quotes around a word are dropped; placeholders are
/// skipped. A run of the command is only as fresh as these files.
pub fn script_files(template: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = vec![];
    for word in template.split_whitespace() {
        let word = word.trim_matches(|c| c == '\'' || c == '"' || c == ';' || c == '(' || c == ')');
        let value = word.split_once('=').map_or(word, |(_, v)| v);
        if value.is_empty() || value.contains('{') {
            continue;
        }
        let p = PathBuf::from(value);
        if p.is_file() && !files.contains(&p) {
            files.push(p);
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_tables_parse_by_kind_and_reject_unknown_fields() {
        let t: TargetSpec = toml::from_str(
            "kind = \"torchscript\"\nmodel = \"m.pt\"\noutput = \"log-probs\"\n[training]\nepochs = 5\nlr = 0.1",
        )
        .unwrap();
        match t {
            TargetSpec::Torchscript { output, training, .. } => {
                assert_eq!(output, OutputKind::LogProbs);
                assert_eq!((training.epochs, training.lr), (5, 0.1));
            }
            other => panic!("{other:?}"),
        }
        let e = toml::from_str::<TargetSpec>("kind = \"command\"\ncommand = \"x\"\ntimout = 3").unwrap_err();
        assert!(e.to_string().contains("timout"), "{e}");
    }

    #[test]
    fn command_inputs_are_the_template_words_that_name_files() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("train.py");
        let conf = dir.path().join("c.yaml");
        std::fs::write(&script, "print(1)").unwrap();
        std::fs::write(&conf, "a: 1").unwrap();
        let t = format!(
            "python3 '{}' --graph {{graph}} --out {{out}} --config={} --missing {}/nope.py",
            script.display(),
            conf.display(),
            dir.path().display()
        );
        assert_eq!(script_files(&t), vec![script.clone(), conf.clone()]);
        let target = TargetSpec::Command { command: t, members: None, timeout: 1.0, work_dir: None };
        let roles: Vec<String> = target.input_files().into_iter().map(|(r, _)| r).collect();
        assert_eq!(roles, vec![format!("script {}", script.display()), format!("script {}", conf.display())]);
    }
}
