//! The recipe's flags, generated from the structs that hold the settings: one per field of the
//! shared `TrainConfig` and `DpSgdConfig` (`--epochs`, `--hidden`, `--max-grad-norm`, ...) and one
//! per field of the methods' knob structs (`--teachers`, `--c1`, ...), so that a new setting needs
//! no edit here. Values stay text until the recipe reads them, which names the flag when a value
//! does not fit.
use crate::methods::knobs::{all_docs, KnobDoc};
use crate::methods::{shared, Method};
use clap::{Arg, ArgMatches, Args, Command, FromArgMatches};

/// The shared settings' flags given, as (field name, text).
#[derive(Debug, Clone, Default)]
pub struct SharedArgs(Vec<(String, String)>);

/// The own-knob flags given, as (field name, text).
#[derive(Debug, Clone, Default)]
pub struct OwnKnobArgs(Vec<(String, String)>);

impl SharedArgs {
    pub fn given(&self) -> &[(String, String)] {
        &self.0
    }

    /// The value given for `key`, read as `T` (None: not given); an error names the flag.
    pub fn value<T: serde::de::DeserializeOwned>(&self, key: &str) -> crate::error::Result<Option<T>> {
        let Some((_, text)) = self.0.iter().find(|(k, _)| k == key) else { return Ok(None) };
        T::deserialize(crate::methods::knobs::parse_cli_value(text))
            .map(Some)
            .map_err(|e| crate::error::Error::invalid(flag(key), e.to_string().trim().replace('\n', " ")))
    }
}

impl OwnKnobArgs {
    pub fn given(&self) -> &[(String, String)] {
        &self.0
    }
}

/// The flag of recipe key `key`.
pub fn flag(key: &str) -> String {
    format!("--{}", key.replace('_', "-"))
}

/// The shared settings with the methods that read each.
fn shared_docs() -> Vec<(KnobDoc, Vec<&'static str>)> {
    shared::docs()
        .into_iter()
        .map(|d| {
            let readers = Method::ALL.iter().filter(|m| m.spec().reads.reads_key(&d.name)).map(|m| m.name()).collect();
            (d, readers)
        })
        .collect()
}

fn given(m: &ArgMatches, docs: Vec<(KnobDoc, Vec<&'static str>)>) -> Vec<(String, String)> {
    docs.into_iter().filter_map(|(d, _)| m.get_one::<String>(&d.name).map(|v| (d.name, v.clone()))).collect()
}

/// One flag per doc, its help prefixed with the methods that read it.
fn augment(cmd: Command, docs: Vec<(KnobDoc, Vec<&'static str>)>, heading: &'static str) -> Command {
    docs.into_iter().fold(cmd, |cmd, (doc, readers)| {
        let who = match readers.len() {
            n if n == Method::ALL.len() => String::new(),
            1..=3 => format!("{}: ", readers.join(", ")),
            _ if readers.iter().all(|r| r.starts_with("dpar-")) => "dpar-*: ".to_string(),
            n => format!("{n} methods: "),
        };
        let default = match doc.default {
            Some(toml::Value::String(s)) => format!(" [default: {s}]"),
            Some(v) => format!(" [default: {v}]"),
            None => String::new(),
        };
        let arg = Arg::new(doc.name.clone())
            .long(doc.name.replace('_', "-"))
            .help(format!("{who}{}{default}", doc.help))
            .help_heading(heading);
        let arg = if doc.switch {
            arg.num_args(0..=1).default_missing_value("true").value_name("BOOL")
        } else {
            arg.allow_negative_numbers(true).value_name(doc.name.to_uppercase())
        };
        cmd.arg(arg)
    })
}

macro_rules! generated_args {
    ($ty:ident, $docs:expr, $heading:literal) => {
        impl FromArgMatches for $ty {
            fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
                Ok($ty(given(m, $docs)))
            }
            fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
                *self = Self::from_arg_matches(m)?;
                Ok(())
            }
        }
        impl Args for $ty {
            fn augment_args(cmd: Command) -> Command {
                augment(cmd, $docs, $heading)
            }
            fn augment_args_for_update(cmd: Command) -> Command {
                Self::augment_args(cmd)
            }
        }
    };
}

generated_args!(SharedArgs, shared_docs(), "Training settings");
generated_args!(OwnKnobArgs, all_docs(), "Method knobs");
