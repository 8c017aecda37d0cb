//! One flag per field of the methods' knob structs (`--teachers`, `--c1`, ...), generated from the
//! registry, so a method's new knob needs no edit here. Values stay text until the method's
//! struct reads them, which names the knob when a value does not fit.
use crate::methods::knobs::all_docs;
use clap::{Arg, ArgMatches, Args, Command, FromArgMatches};

/// The own-knob flags given, as (field name, text).
#[derive(Debug, Clone, Default)]
pub struct OwnKnobArgs(Vec<(String, String)>);

impl OwnKnobArgs {
    pub fn given(&self) -> &[(String, String)] {
        &self.0
    }
}

impl FromArgMatches for OwnKnobArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let given = all_docs()
            .into_iter()
            .filter_map(|(d, _)| m.get_one::<String>(&d.name).map(|v| (d.name, v.clone())))
            .collect();
        Ok(OwnKnobArgs(given))
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for OwnKnobArgs {
    fn augment_args(cmd: Command) -> Command {
        all_docs().into_iter().fold(cmd, |cmd, (doc, readers)| {
            let who = match readers.len() {
                1..=3 => readers.join(", "),
                _ if readers.iter().all(|r| r.starts_with("dpar-")) => "dpar-*".to_string(),
                n => format!("{n} methods"),
            };
            let default = match doc.default {
                Some(toml::Value::String(s)) => format!(" [default: {s}]"),
                Some(v) => format!(" [default: {v}]"),
                None => String::new(),
            };
            let arg = Arg::new(doc.name.clone())
                .long(doc.name.replace('_', "-"))
                .help(format!("{who}: {}{default}", doc.help))
                .help_heading("Method knobs");
            let arg = if doc.switch {
                arg.num_args(0..=1).default_missing_value("true").value_name("BOOL")
            } else {
                arg.allow_negative_numbers(true).value_name(doc.name.to_uppercase())
            };
            cmd.arg(arg)
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}
